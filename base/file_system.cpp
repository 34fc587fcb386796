#include "base/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace prof {

int FileSystem::Open(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }
ssize_t FileSystem::Write(int fd, const void* data, size_t size) { return ::write(fd, data, size); }
ssize_t FileSystem::Read(int fd, void* data, size_t size) { return ::read(fd, data, size); }
int FileSystem::Close(int fd) { return ::close(fd); }
int FileSystem::Rename(const char* from, const char* to) { return ::rename(from, to); }
int FileSystem::Link(const char* from, const char* to) { return ::link(from, to); }
int FileSystem::Unlink(const char* path) { return ::unlink(path); }
int FileSystem::Stat(const char* path, struct stat* st) { return ::stat(path, st); }
int FileSystem::Lstat(const char* path, struct stat* st) { return ::lstat(path, st); }
int FileSystem::Access(const char* path, int mode) { return ::access(path, mode); }
int FileSystem::MakeDir(const char* path, mode_t mode) { return ::mkdir(path, mode); }
int FileSystem::StatFs(const char* path, struct statfs* st) { return ::statfs(path, st); }
int FileSystem::WatchInit(int flags) { return ::inotify_init1(flags); }
int FileSystem::WatchAdd(int fd, const char* path, uint32_t mask) { return ::inotify_add_watch(fd, path, mask); }

int FileSystem::ListDir(const char* path, std::vector<std::string>* names) {
  DIR* d = ::opendir(path);
  if (d == nullptr) return -1;
  std::vector<std::string> found;
  errno = 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
    found.emplace_back(e->d_name);
  }
  int err = errno;  // readdir's: 0 at the end of the listing
  ::closedir(d);
  if (err != 0) {
    errno = err;
    return -1;
  }
  names->insert(names->end(), found.begin(), found.end());
  return 0;
}

FileSystem& PosixFileSystem() {
  // No state, shared safely; never destroyed, because the writer thread may
  // still finish a window while the process runs exit-time destructors.
  static FileSystem* posix = new FileSystem;
  return *posix;
}

}  // namespace prof
