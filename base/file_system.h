// The file-system seam: every file and directory call libprof makes to put
// files on disk goes through a FileSystem (fmt routes its POSIX calls through
// one macro for the same reason), so tests inject each failure (ENOSPC,
// EACCES, EINTR, EEXIST...) at each call: the output directory's check and
// creation (base/output_dir), the window's files (exporters/files) and the
// sweeping of dead processes' temporaries.
//
// The one exception is RemoveUnfinishedTemporaries (exporters/files/
// atomic_file.h), which runs in a signal handler and calls unlink(2) itself.
#pragma once

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace prof {

// Each call has POSIX semantics: it returns what the system call returns
// and sets errno on failure. The base class makes the real calls; a test
// derives from it and overrides the calls it fails. Implementations hold
// no state the caller can see.
class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Files.
  virtual int Open(const char* path, int flags, mode_t mode);
  virtual ssize_t Write(int fd, const void* data, size_t size);
  virtual ssize_t Read(int fd, void* data, size_t size);
  virtual int Close(int fd);
  virtual int Rename(const char* from, const char* to);
  // link(2): gives a file a second name, failing with EEXIST instead of
  // replacing whatever holds that name.
  virtual int Link(const char* from, const char* to);
  virtual int Unlink(const char* path);
  virtual int Stat(const char* path, struct stat* st);
  virtual int Lstat(const char* path, struct stat* st);  // the link itself, not what it names
  virtual int Access(const char* path, int mode);

  // Directories.
  virtual int MakeDir(const char* path, mode_t mode);
  // The names in a directory, "." and ".." left out (opendir, readdir,
  // closedir): 0, or -1 with errno and `names` unchanged.
  virtual int ListDir(const char* path, std::vector<std::string>* names);
  virtual int StatFs(const char* path, struct statfs* st);

  // Watching a directory (inotify(7)): inotify_init1, inotify_add_watch.
  // The events are read with Read.
  virtual int WatchInit(int flags);
  virtual int WatchAdd(int fd, const char* path, uint32_t mask);
};

// The real calls. Stateless, so one shared instance is safe from any thread.
FileSystem& PosixFileSystem();

}  // namespace prof
