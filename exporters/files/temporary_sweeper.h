// Removes the temporaries of processes that no longer exist from one output
// directory after each window, as RemoveDeadProcessTemporaries does, without
// listing the directory every time: that listing grows with every window
// written there (two files each), so a long run paid for it once per window
// over and over (1.1 s of system time in a 20,000-step run of 2,000 windows).
//
// The directory is listed at the first Sweep, and again only when it cannot
// be watched or the watch lost events. In between an inotify watch reports
// the names created in it; the temporaries of other processes among them
// are the only files that can become a dead process's temporary, so each
// Sweep looks at those alone: removed once their process is gone, forgotten
// once renamed into place (or removed by someone else), kept while their
// process exists. The watch is added before the first listing, so nothing
// created in between is missed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/file_system.h"

namespace prof {

class TemporarySweeper {
 public:
  // fs must outlive the sweeper (PosixFileSystem() does).
  explicit TemporarySweeper(std::string dir, FileSystem& fs = PosixFileSystem()) : dir_(std::move(dir)), fs_(fs) {}
  ~TemporarySweeper();
  TemporarySweeper(const TemporarySweeper&) = delete;
  TemporarySweeper& operator=(const TemporarySweeper&) = delete;

  // Removes what a listing would have removed now; returns how many files.
  int Sweep();

  // Listings done so far (tests: a watched directory is listed once).
  int listings() const { return listings_; }

 private:
  void Watch();
  void Unwatch();
  // Reads the watch's events; false if they cannot be trusted to be all of
  // them (overflow, the directory itself gone or moved, a read error).
  bool ReadEvents();
  int SweepCandidates();

  std::string dir_;
  FileSystem& fs_;
  pid_t owner_ = -1;  // the process whose watch fd_ is (a fork child starts its own)
  int fd_ = -1;       // inotify instance, -1 when not watching
  bool list_next_ = true;
  int listings_ = 0;
  // Names of other processes' temporaries seen, not yet gone.
  std::vector<std::string> candidates_;
};

}  // namespace prof
