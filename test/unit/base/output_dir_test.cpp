// PROF_OUTPUT_DIR's check at start and its creation at each window go
// through the file-system seam: a failure at any of their calls gives one
// line naming the error (or a harmless success), and the check creates
// nothing.
#include "base/output_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test/unit/base/faulty_file_system.h"

namespace prof {
namespace {

using testing::FaultyFileSystem;

std::string FreshDir() {
  char pattern[] = "/tmp/libprof-outdir-XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  return pattern;
}

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

const int kErrnos[] = {ENOSPC, EACCES, EINTR, EEXIST};

TEST_CASE("an existing output directory costs one call per window", "[output_dir]") {
  std::string base = FreshDir();
  FaultyFileSystem fs;
  std::string why;
  REQUIRE(MakeDirectories(base, nullptr, &why, fs));
  CHECK(fs.calls(FaultyFileSystem::kStat) == 1);
  CHECK(fs.calls(FaultyFileSystem::kMakeDir) == 0);
  std::system(("rm -rf '" + base + "'").c_str());
}

TEST_CASE("a failure at any call creating the output directory is one line naming the error", "[output_dir][faults]") {
  FaultyFileSystem counting;
  {
    std::string base = FreshDir();
    std::string why;
    REQUIRE(MakeDirectories(base + "/a/b", nullptr, &why, counting));
    std::system(("rm -rf '" + base + "'").c_str());
  }
  int injected = 0;
  for (auto kind : {FaultyFileSystem::kStat, FaultyFileSystem::kMakeDir}) {
    for (int at = 1; at <= counting.calls(kind); ++at) {
      for (int err : kErrnos) {
        INFO(FaultyFileSystem::Name(kind) << " #" << at << " fails with " << strerrorname_np(err));
        std::string base = FreshDir();
        std::string dir = base + "/a/b";
        FaultyFileSystem fs;
        fs.FailAt(kind, at, err);
        std::vector<std::string> created;
        std::string why;
        bool ok = MakeDirectories(dir, &created, &why, fs);
        CHECK(fs.failed());
        ++injected;
        if (ok) {
          CHECK(IsDir(dir));
        } else {
          CHECK(why.find('\n') == std::string::npos);
          // The error is named, unless it was a fake EEXIST for a directory
          // that is then missing: the next call's error says why.
          if (err != EEXIST) CHECK(why.find(std::strerror(err)) != std::string::npos);
          CHECK_FALSE(why.empty());
        }
        // It says which directories it made, and made no other.
        for (const std::string& d : created) CHECK(IsDir(d));
        CHECK((IsDir(base + "/a") == (std::find(created.begin(), created.end(), base + "/a") != created.end())));
        std::system(("rm -rf '" + base + "'").c_str());
      }
    }
  }
  CHECK(injected >= 4 * 4);
}

TEST_CASE("a failure at any call of the start-up check is one line naming the error, and nothing is created",
          "[output_dir][faults]") {
  for (const char* below : {"", "/missing/deeper"}) {
    FaultyFileSystem counting;
    std::string base = FreshDir();
    std::string why;
    REQUIRE(OutputDirUsable(base + below, &why, counting));
    int injected = 0;
    for (auto kind : {FaultyFileSystem::kStat, FaultyFileSystem::kAccess, FaultyFileSystem::kStatFs}) {
      for (int at = 1; at <= counting.calls(kind); ++at) {
        for (int err : kErrnos) {
          INFO(base + below << ": " << FaultyFileSystem::Name(kind) << " #" << at << " fails with "
                            << strerrorname_np(err));
          FaultyFileSystem fs;
          fs.FailAt(kind, at, err);
          why.clear();
          bool ok = OutputDirUsable(base + below, &why, fs);
          CHECK(fs.failed());
          ++injected;
          // A statfs that fails is no reason to refuse (it only rules out
          // /proc and /sys); any other failure names its error.
          if (kind == FaultyFileSystem::kStatFs) CHECK(ok);
          if (!ok) {
            CHECK(why.find('\n') == std::string::npos);
            CHECK(why.find(std::strerror(err)) != std::string::npos);
          }
          CHECK_FALSE(IsDir(base + "/missing"));
        }
      }
    }
    CHECK(injected >= 4 * 2);
    std::system(("rm -rf '" + base + "'").c_str());
  }
}

}  // namespace
}  // namespace prof
