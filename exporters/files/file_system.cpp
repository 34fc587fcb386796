#include "exporters/files/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace prof {
namespace {

class Posix final : public FileSystem {
 public:
  int Open(const char* path, int flags, mode_t mode) override { return ::open(path, flags, mode); }
  ssize_t Write(int fd, const void* data, size_t size) override { return ::write(fd, data, size); }
  int Close(int fd) override { return ::close(fd); }
  int Rename(const char* from, const char* to) override { return ::rename(from, to); }
  int Unlink(const char* path) override { return ::unlink(path); }
  int MakeDir(const char* path, mode_t mode) override { return ::mkdir(path, mode); }
};

}  // namespace

int FileSystem::Link(const char* from, const char* to) { return ::link(from, to); }

FileSystem& PosixFileSystem() {
  // No state, shared safely; never destroyed, because the writer thread may
  // still finish a window while the process runs exit-time destructors.
  static Posix* posix = new Posix;
  return *posix;
}

}  // namespace prof
