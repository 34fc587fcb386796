#include "exporters/files/temporary_sweeper.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "exporters/files/atomic_file.h"

namespace prof {

TemporarySweeper::~TemporarySweeper() { Unwatch(); }

void TemporarySweeper::Unwatch() {
  if (fd_ >= 0) fs_.Close(fd_);
  fd_ = -1;
}

void TemporarySweeper::Watch() {
  fd_ = fs_.WatchInit(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) return;  // no inotify (or out of instances): list every time
  owner_ = ::getpid();
  // IN_MOVED_TO: a temporary renamed in from elsewhere counts as created.
  // The *_SELF events and IN_IGNORED say the watch no longer sees the
  // directory that is written to.
  uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
  if (fs_.WatchAdd(fd_, dir_.c_str(), mask) < 0) Unwatch();
}

bool TemporarySweeper::ReadEvents() {
  alignas(inotify_event) char buf[16384];
  for (;;) {
    ssize_t n = fs_.Read(fd_, buf, sizeof(buf));
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;
    for (ssize_t off = 0; off < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      if (e->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)) return false;
      if (e->len == 0) continue;
      long pid = TemporaryPid(e->name);
      if (pid > 0 && pid != ::getpid()) candidates_.emplace_back(e->name);
    }
  }
}

int TemporarySweeper::SweepCandidates() {
  if (candidates_.empty()) return 0;  // the usual case: nothing but this process's own files
  int removed = 0;
  // The same tests as the listing's (RemoveDeadProcessTemporaries).
  auto settled = [&](const std::string& name) {
    struct stat st;
    std::string path = dir_ + "/" + name;
    if (fs_.Lstat(path.c_str(), &st) != 0) return true;                        // renamed or removed
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return true;         // never ours to remove
    if (!ProcessGone(TemporaryPid(name.c_str()))) return false;               // its process exists
    if (fs_.Unlink(path.c_str()) == 0) ++removed;
    return true;
  };
  candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(), settled), candidates_.end());
  return removed;
}

int TemporarySweeper::Sweep() {
  if (fd_ >= 0 && owner_ != ::getpid()) {
    // A fork child shares its parent's inotify instance: reading it would
    // take the parent's events. Start over with its own (closing this
    // process's descriptor leaves the parent's open).
    Unwatch();
    candidates_.clear();
    list_next_ = true;
  }
  if (fd_ < 0) {
    Watch();
    list_next_ = true;
  }
  if (fd_ >= 0 && !ReadEvents()) {
    Unwatch();  // watched again, and listed, at the next Sweep
    list_next_ = true;
  }
  if (fd_ < 0 || list_next_) {
    ++listings_;
    candidates_.clear();
    std::vector<std::string> names;
    if (fs_.ListDir(dir_.c_str(), &names) != 0) {
      list_next_ = true;  // what it missed is looked for at the next Sweep
      return 0;
    }
    int removed = RemoveDeadProcessTemporaries(dir_, names, &candidates_, fs_);
    list_next_ = fd_ < 0;
    return removed;
  }
  return SweepCandidates();
}

}  // namespace prof
