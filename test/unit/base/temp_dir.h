// A scratch directory for the tests of what libprof leaves on disk: fresh
// under /tmp, removed with everything in it at the end, and the names in a
// directory as the tests compare them.
#pragma once

#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

namespace prof::testing {

struct TempDir {
  std::string path;

  TempDir() {
    char pattern[] = "/tmp/libprof-test-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Every name in the directory but "." and "..", hidden temporaries
  // included, sorted; none when it cannot be opened.
  std::vector<std::string> Files() const { return Files(path); }
  static std::vector<std::string> Files(const std::string& dir) {
    std::vector<std::string> names;
    DIR* d = opendir(dir.c_str());
    while (dirent* e = d ? readdir(d) : nullptr) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    if (d) closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
};

}  // namespace prof::testing
