// The real file system with one failure injected: the n-th call of a chosen
// kind fails with a chosen errno. Counts every call by kind, so a test first
// runs clean to learn which calls a piece of code makes, then fails each in
// turn (test/unit/agent/window_sink_test.cpp, test/unit/base/output_dir_test.cpp).
#pragma once

#include <cerrno>
#include <string>
#include <vector>

#include "base/file_system.h"

namespace prof::testing {

class FaultyFileSystem : public FileSystem {
 public:
  enum Call {
    kOpen, kWrite, kRead, kClose, kRename, kLink, kUnlink, kStat, kLstat, kAccess,
    kMakeDir, kListDir, kStatFs, kWatchInit, kWatchAdd, kCallKinds
  };
  static const char* Name(Call call) {
    static const char* const kNames[] = {"open",  "write",  "read",  "close",   "rename",  "link",
                                         "unlink", "stat",  "lstat", "access",  "mkdir",   "listdir",
                                         "statfs", "inotify_init1", "inotify_add_watch"};
    return kNames[call];
  }

  // The at-th call (1-based) of this kind fails with err; the others run.
  void FailAt(Call call, int at, int err) {
    fail_call_ = call;
    fail_at_ = at;
    fail_errno_ = err;
  }
  int calls(Call call) const { return counts_[call]; }
  // Whether the injected failure happened.
  bool failed() const { return failed_; }

  int Open(const char* path, int flags, mode_t mode) override {
    return Fails(kOpen) ? -1 : FileSystem::Open(path, flags, mode);
  }
  ssize_t Write(int fd, const void* data, size_t size) override {
    return Fails(kWrite) ? -1 : FileSystem::Write(fd, data, size);
  }
  ssize_t Read(int fd, void* data, size_t size) override {
    return Fails(kRead) ? -1 : FileSystem::Read(fd, data, size);
  }
  int Close(int fd) override {
    // Linux releases the descriptor whatever close(2) reports.
    bool fail = Fails(kClose);
    int rc = FileSystem::Close(fd);
    if (fail) return errno = fail_errno_, -1;
    return rc;
  }
  int Rename(const char* from, const char* to) override {
    return Fails(kRename) ? -1 : FileSystem::Rename(from, to);
  }
  int Link(const char* from, const char* to) override { return Fails(kLink) ? -1 : FileSystem::Link(from, to); }
  int Unlink(const char* path) override { return Fails(kUnlink) ? -1 : FileSystem::Unlink(path); }
  int Stat(const char* path, struct stat* st) override { return Fails(kStat) ? -1 : FileSystem::Stat(path, st); }
  int Lstat(const char* path, struct stat* st) override { return Fails(kLstat) ? -1 : FileSystem::Lstat(path, st); }
  int Access(const char* path, int mode) override { return Fails(kAccess) ? -1 : FileSystem::Access(path, mode); }
  int MakeDir(const char* path, mode_t mode) override {
    return Fails(kMakeDir) ? -1 : FileSystem::MakeDir(path, mode);
  }
  int ListDir(const char* path, std::vector<std::string>* names) override {
    return Fails(kListDir) ? -1 : FileSystem::ListDir(path, names);
  }
  int StatFs(const char* path, struct statfs* st) override {
    return Fails(kStatFs) ? -1 : FileSystem::StatFs(path, st);
  }
  int WatchInit(int flags) override { return Fails(kWatchInit) ? -1 : FileSystem::WatchInit(flags); }
  int WatchAdd(int fd, const char* path, uint32_t mask) override {
    return Fails(kWatchAdd) ? -1 : FileSystem::WatchAdd(fd, path, mask);
  }

 private:
  // Counts the call; true (with errno set) if it is the one to fail.
  bool Fails(Call call) {
    if (++counts_[call] != fail_at_ || call != fail_call_) return false;
    failed_ = true;
    errno = fail_errno_;
    return true;
  }

  int counts_[kCallKinds] = {};
  Call fail_call_ = kCallKinds;
  int fail_at_ = 0;
  int fail_errno_ = 0;
  bool failed_ = false;
};

}  // namespace prof::testing
