// Scratch directories and files for the tests of what libprof leaves on
// disk: temporaries of dead processes, planted files.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

namespace prof::testing {

// A fresh directory under /tmp whose name starts with `prefix`.
inline std::string MakeDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

inline void Touch(const std::string& path) { std::ofstream(path) << "partial"; }

// Anything at path, a dangling link included.
inline bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The pid of a child that has exited and been reaped.
inline pid_t DeadPid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

}  // namespace prof::testing
