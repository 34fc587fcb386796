// A file that appears all at once: bytes go to a hidden temporary name in the
// target directory and Commit() renames it into place. On any failure the
// temporary is removed, so a reader never sees half a file.
//
// The temporary is created O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0644 (less
// what the umask removes), at a name that is unique per process and per
// file: a symlink or file planted there by someone else is never followed
// or truncated; another name is tried instead.
#pragma once

#include <string>
#include <vector>

#include "exporters/files/byte_sink.h"
#include "base/file_system.h"

namespace prof {

class AtomicFile final : public ByteSink {
 public:
  AtomicFile(FileSystem& fs, std::string final_path);
  ~AtomicFile() override;  // aborts (unlinks the temporary) unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool Open();
  bool Append(const char* data, size_t size) override;  // retries EINTR and short writes
  bool Finish() override { return ok(); }
  // Closes and renames into place; false (and nothing left behind) on failure.
  bool Commit();
  // Closes and gives the bytes the final name only if nothing holds it yet
  // (link(2)): false with exists() true when something does, and then the
  // temporary is kept for CommitNewAs() with another name. File systems
  // without hard links fall back to Commit()'s rename.
  bool CommitNew() { return CommitNewAs(final_path_); }
  bool CommitNewAs(const std::string& final_path);
  bool exists() const { return exists_; }
  void Abort();

  bool ok() const { return error_.empty(); }
  // One line naming the call, the path and the errno ("write ...: No space
  // left on device (ENOSPC)"); empty while ok.
  const std::string& error() const { return error_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void Fail(const char* call, const std::string& path, int err);
  // Commit's steps, each aborting on failure: close the temporary (a
  // deferred write error), rename it to final_path (replacing), and, once
  // it is there, forget it (nothing left to sweep or undo).
  bool CloseTemporary();
  bool RenameInto(const std::string& final_path);
  void Placed(const std::string& final_path);

  FileSystem& fs_;
  std::string final_path_;
  std::string temp_dir_;   // directory part of the final path, with '/'
  std::string temp_base_;  // file name part
  std::string temp_path_;  // set by Open(); empty unless we created it
  int fd_ = -1;
  bool done_ = false;  // committed or aborted: nothing left to undo
  bool exists_ = false;  // CommitNewAs found its name taken
  int temp_slot_ = -1;   // in the table RemoveUnfinishedTemporaries() reads
  std::string error_;
};

// Unlinks every temporary an AtomicFile of this process still has open
// (async-signal-safe: unlink(2) on paths kept in a fixed table). The exit
// path calls it when its time budget ran out with a window still being
// written, and the fatal-signal handler calls it: no ".<name>.tmp..." file
// outlives the process. A file already linked into place is whole either
// way.
void RemoveUnfinishedTemporaries();

// Removes, in dir, the temporaries (".<name>.tmp<pid>.<hex>", regular files of
// this user) of processes that no longer exist: a process that left through
// _exit() (multiprocessing's forked workers) runs no exit path, so a window
// its writer thread was writing then stays a temporary. A process that
// exists (or a pid reused since) keeps its files. Returns how many were
// removed; a directory it cannot list, or a file it cannot look at or
// remove, is passed over (the next sweep tries again). `live`, if given,
// gets the names of the temporaries of other processes that exist
// (TemporarySweeper watches them).
int RemoveDeadProcessTemporaries(const std::string& dir, std::vector<std::string>* live = nullptr,
                                 FileSystem& fs = PosixFileSystem());
// The same for names already listed from dir.
int RemoveDeadProcessTemporaries(const std::string& dir, const std::vector<std::string>& names,
                                 std::vector<std::string>* live, FileSystem& fs);

// Whether the process with this pid is gone (kill(pid, 0) says ESRCH).
bool ProcessGone(long pid);

// Removes dir/name if it is a regular file of this user (never a link, a
// directory or someone else's file); true if removed.
bool RemoveTemporaryIfOurs(FileSystem& fs, const std::string& dir, const std::string& name);

// The pid in a temporary's name (".<name>.tmp<pid>.<hex>"), or -1 for any
// other name.
long TemporaryPid(const char* name);

// "No space left on device (ENOSPC)".
std::string ErrnoText(int err);

}  // namespace prof
