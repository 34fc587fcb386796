// Every file system call the exporters make goes through this seam (fmt
// routes its POSIX calls through one macro for the same reason): unit tests
// hand WriteWindowFiles a FileSystem that fails with ENOSPC, EACCES or EINTR.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace prof {

// POSIX semantics: each call returns what the system call returns and sets
// errno on failure. Implementations hold no state the caller can see.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual int Open(const char* path, int flags, mode_t mode) = 0;
  virtual ssize_t Write(int fd, const void* data, size_t size) = 0;
  virtual int Close(int fd) = 0;
  virtual int Rename(const char* from, const char* to) = 0;
  virtual int Unlink(const char* path) = 0;
  virtual int MakeDir(const char* path, mode_t mode) = 0;
  // link(2): gives a file a second name, failing with EEXIST instead of
  // replacing whatever holds that name. Not pure, so fault-injecting test
  // file systems need not care.
  virtual int Link(const char* from, const char* to);
};

// The real calls. Stateless, so one shared instance is safe from any thread.
FileSystem& PosixFileSystem();

}  // namespace prof
