#include "exporters/files/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace prof {

std::string ErrnoText(int err) {
  const char* desc = strerrordesc_np(err);
  const char* name = strerrorname_np(err);
  std::string text = desc ? desc : "errno " + std::to_string(err);
  if (name) text += std::string(" (") + name + ")";
  return text;
}

AtomicFile::AtomicFile(FileSystem& fs, std::string final_path) : fs_(fs), final_path_(std::move(final_path)) {
  // Hidden (leading dot) and unique per process, in the same directory so the
  // rename stays on one file system and is atomic.
  size_t slash = final_path_.rfind('/');
  std::string dir = slash == std::string::npos ? "" : final_path_.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? final_path_ : final_path_.substr(slash + 1);
  temp_dir_ = dir;
  temp_base_ = base;
}

namespace {
// Distinguishes temporaries of one process; the clock makes the name hard to
// guess in advance for someone planting files.
std::atomic<uint64_t> g_temp_serial{0};

// Temporaries being written, for RemoveUnfinishedTemporaries(). A slot is
// claimed (0 -> 1), filled, published (1 -> 2) and released (2 -> 0); the
// cleanup only reads published slots. Eight writers at once is plenty (one
// writer thread writes one file at a time); past that a temporary is simply
// not tracked.
struct TempSlot {
  std::atomic<int> state{0};
  char path[4096];
};
TempSlot g_temp_slots[8];

int TrackTemporary(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return -1;
  for (int i = 0; i < 8; ++i) {
    int expected = 0;
    if (g_temp_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
      g_temp_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void UntrackTemporary(int slot) {
  if (slot >= 0) g_temp_slots[slot].state.store(0, std::memory_order_release);
}

std::string TempSuffix() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t mix = (static_cast<uint64_t>(ts.tv_nsec) * 0x9E3779B97F4A7C15ull) ^ g_temp_serial.fetch_add(1);
  char buf[64];
  snprintf(buf, sizeof(buf), ".tmp%d.%llx", static_cast<int>(::getpid()), static_cast<unsigned long long>(mix & 0xFFFFFFFFFFull));
  return buf;
}
}  // namespace

long TemporaryPid(const char* name) {
  if (name[0] != '.') return -1;
  const char* tmp = std::strstr(name, ".tmp");
  for (const char* next = tmp; next != nullptr; next = std::strstr(next + 1, ".tmp")) tmp = next;  // the last
  if (tmp == nullptr) return -1;
  const char* p = tmp + 4;
  long pid = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 10; ++p, ++digits) pid = pid * 10 + (*p - '0');
  if (digits == 0 || *p != '.' || p[1] == 0) return -1;
  for (++p; *p != 0; ++p) {
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return -1;
  }
  return pid;
}

bool ProcessGone(long pid) {
  // ESRCH only: EPERM means the process exists (another user's).
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool RemoveTemporaryIfOurs(FileSystem& fs, const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;
  struct stat st;
  if (fs.Lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return false;
  return fs.Unlink(path.c_str()) == 0;
}

int RemoveDeadProcessTemporaries(const std::string& dir, const std::vector<std::string>& names,
                                 std::vector<std::string>* live, FileSystem& fs) {
  int removed = 0;
  for (const std::string& name : names) {
    long pid = TemporaryPid(name.c_str());
    if (pid <= 0 || pid == ::getpid()) continue;
    if (!ProcessGone(pid)) {
      if (live != nullptr) live->push_back(name);
      continue;
    }
    if (RemoveTemporaryIfOurs(fs, dir, name)) ++removed;
  }
  return removed;
}

int RemoveDeadProcessTemporaries(const std::string& dir, std::vector<std::string>* live, FileSystem& fs) {
  std::vector<std::string> names;
  if (fs.ListDir(dir.c_str(), &names) != 0) return 0;
  return RemoveDeadProcessTemporaries(dir, names, live, fs);
}

void RemoveUnfinishedTemporaries() {
  // unlink(2) itself, not through the FileSystem seam: this runs in a signal
  // handler, where only async-signal-safe calls may be made.
  for (TempSlot& slot : g_temp_slots) {
    if (slot.state.load(std::memory_order_acquire) == 2) ::unlink(slot.path);
  }
}

AtomicFile::~AtomicFile() {
  if (!done_) Abort();
}

void AtomicFile::Fail(const char* call, const std::string& path, int err) {
  if (error_.empty()) error_ = std::string(call) + " " + path + ": " + ErrnoText(err);
}

bool AtomicFile::Open() {
  // O_EXCL|O_NOFOLLOW: never through a planted symlink, never into a file
  // someone else made; a taken name (EEXIST) moves on to another one.
  for (int attempt = 0; attempt < 16; ++attempt) {
    temp_path_ = temp_dir_ + "." + temp_base_ + TempSuffix();
    do {
      fd_ = fs_.Open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    } while (fd_ < 0 && errno == EINTR);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ >= 0) temp_slot_ = TrackTemporary(temp_path_);
  if (fd_ < 0) {
    int err = errno;
    temp_path_.clear();  // not ours: Abort() must not unlink it
    errno = err;
    Fail("open", temp_dir_ + "." + temp_base_ + ".tmp*", errno);
    return false;
  }
  return true;
}

bool AtomicFile::Append(const char* data, size_t size) {
  if (!ok() || fd_ < 0) return false;
  while (size > 0) {
    ssize_t n = fs_.Write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail("write", temp_path_, errno);
      Abort();
      return false;
    }
    if (n == 0) {  // a zero-byte write never makes progress: treat as full
      Fail("write", temp_path_, ENOSPC);
      Abort();
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool AtomicFile::Commit() {
  if (!ok() || fd_ < 0) {
    Abort();
    return false;
  }
  return CloseTemporary() && RenameInto(final_path_);
}

bool AtomicFile::CommitNewAs(const std::string& final_path) {
  exists_ = false;
  if (!ok() || (fd_ < 0 && done_)) {
    Abort();
    return false;
  }
  if (fd_ >= 0 && !CloseTemporary()) return false;
  if (fs_.Link(temp_path_.c_str(), final_path.c_str()) == 0) {
    fs_.Unlink(temp_path_.c_str());
    Placed(final_path);
    return true;
  }
  if (errno == EEXIST) {
    exists_ = true;  // keep the temporary: the caller may pick another name
    return false;
  }
  // No hard links here (EPERM/ENOTSUP on some network and FUSE file
  // systems): the plain rename, which replaces.
  return RenameInto(final_path);
}

bool AtomicFile::CloseTemporary() {
  // close() can report a deferred write error (NFS, quota): check it. No
  // retry on EINTR: on Linux the descriptor is released either way.
  int rc = fs_.Close(fd_);
  fd_ = -1;
  if (rc == 0) return true;
  Fail("close", temp_path_, errno);
  Abort();
  return false;
}

bool AtomicFile::RenameInto(const std::string& final_path) {
  if (fs_.Rename(temp_path_.c_str(), final_path.c_str()) != 0) {
    Fail("rename", final_path, errno);
    Abort();
    return false;
  }
  Placed(final_path);
  return true;
}

void AtomicFile::Placed(const std::string& final_path) {
  UntrackTemporary(temp_slot_);
  temp_slot_ = -1;
  final_path_ = final_path;
  done_ = true;
}

void AtomicFile::Abort() {
  if (done_) return;
  if (fd_ >= 0) {
    fs_.Close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    int saved = errno;
    fs_.Unlink(temp_path_.c_str());
    errno = saved;
  }
  UntrackTemporary(temp_slot_);
  temp_slot_ = -1;
  done_ = true;
}

}  // namespace prof
