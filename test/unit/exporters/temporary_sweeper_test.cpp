// The temporary sweeper removes what a listing of the directory would
// remove at each window (temporaries of processes that no longer exist,
// nothing else), listing the directory only once while it can watch it.
#include "exporters/files/temporary_sweeper.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "test/unit/base/faulty_file_system.h"
#include "test/unit/exporters/temp_files.h"

namespace prof {
namespace {

using testing::DeadPid;
using testing::Exists;
using testing::Touch;
using testing::FaultyFileSystem;

std::string MakeDir() { return testing::MakeDir("libprof-sweeper"); }

// A child that waits until its pipe closes, then exits.
struct LiveChild {
  pid_t pid = -1;
  int fd = -1;
  LiveChild() {
    int p[2];
    REQUIRE(pipe(p) == 0);
    pid = fork();
    if (pid == 0) {
      close(p[1]);
      char c;
      while (read(p[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(p[0]);
    fd = p[1];
  }
  void End() {
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
  }
};

std::string Temp(const std::string& dir, const std::string& name, pid_t pid) {
  return dir + "/." + name + ".tmp" + std::to_string(pid) + ".c1c2df1925";
}

TEST_CASE("the first sweep lists the directory and removes dead processes' temporaries", "[sweeper]") {
  std::string dir = MakeDir();
  std::string gone = Temp(dir, "job.3.pt.trace.json", DeadPid());
  std::string mine = Temp(dir, "job.5.pt.trace.json", getpid());
  std::string whole = dir + "/job.3.pt.trace.json";
  for (const std::string& p : {gone, mine, whole}) Touch(p);
  TemporarySweeper sweeper(dir);
  CHECK(sweeper.Sweep() == 1);
  CHECK_FALSE(Exists(gone));
  CHECK(Exists(mine));
  CHECK(Exists(whole));
  CHECK(sweeper.listings() == 1);
  std::system(("rm -rf " + dir).c_str());
}

// Another scenario than the test above: the same set-up and final checks.
TEST_CASE("a temporary left after the first sweep is removed by the next, without listing again", "[sweeper]") {
  std::string dir = MakeDir();
  TemporarySweeper sweeper(dir);
  CHECK(sweeper.Sweep() == 0);
  // Written after the first sweep: a process that died mid-write, one still
  // writing (dies later), this process's own, a whole file, another user's
  // kind of name, a link.
  pid_t dead = DeadPid();
  std::string gone = Temp(dir, "job.7.pt.trace.json", dead);
  std::string gone_summary = Temp(dir, "job.7.summary.txt", dead);
  LiveChild child;
  std::string later = Temp(dir, "job.8.pt.trace.json", child.pid);
  std::string mine = Temp(dir, "job.9.pt.trace.json", getpid());
  std::string whole = dir + "/job.7.pt.trace.json";
  std::string other = dir + "/.notes.tmp" + std::to_string(dead);
  std::string link = Temp(dir, "job.6.pt.trace.json", dead) + "b";
  for (const std::string& p : {gone, gone_summary, later, mine, whole, other}) Touch(p);
  REQUIRE(symlink(whole.c_str(), link.c_str()) == 0);
  CHECK(sweeper.Sweep() == 2);
  CHECK_FALSE(Exists(gone));
  CHECK_FALSE(Exists(gone_summary));
  CHECK(Exists(later));  // its process exists
  CHECK(Exists(mine));
  CHECK(Exists(whole));
  CHECK(Exists(other));
  CHECK(Exists(link));
  CHECK(sweeper.Sweep() == 0);
  child.End();  // now it is a dead process's temporary
  CHECK(sweeper.Sweep() == 1);
  CHECK_FALSE(Exists(later));
  CHECK(Exists(mine));
  CHECK(sweeper.listings() == 1);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a temporary renamed into place by its live process is forgotten", "[sweeper]") {
  std::string dir = MakeDir();
  TemporarySweeper sweeper(dir);
  sweeper.Sweep();
  LiveChild child;
  std::string temp = Temp(dir, "job.1.pt.trace.json", child.pid);
  std::string whole = dir + "/job.1.pt.trace.json";
  Touch(temp);
  CHECK(sweeper.Sweep() == 0);
  REQUIRE(rename(temp.c_str(), whole.c_str()) == 0);
  child.End();
  // A new temporary of the same name, this time of this process: not the
  // dead one's, so it stays.
  std::string mine = Temp(dir, "job.1.pt.trace.json", getpid());
  Touch(mine);
  CHECK(sweeper.Sweep() == 0);
  CHECK(Exists(whole));
  CHECK(Exists(mine));
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a directory removed and made again is listed again", "[sweeper]") {
  std::string dir = MakeDir();
  TemporarySweeper sweeper(dir);
  sweeper.Sweep();
  std::system(("rm -rf " + dir).c_str());
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  std::string gone = Temp(dir, "job.2.pt.trace.json", DeadPid());
  Touch(gone);
  // The old watch reports its directory gone: this sweep lists the new one.
  CHECK(sweeper.Sweep() == 1);
  CHECK_FALSE(Exists(gone));
  CHECK(sweeper.listings() == 2);
  std::string again = Temp(dir, "job.3.pt.trace.json", DeadPid());
  Touch(again);
  CHECK(sweeper.Sweep() == 1);
  CHECK_FALSE(Exists(again));
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("a directory that does not exist yet is listed at each sweep until it can be watched", "[sweeper]") {
  std::string dir = MakeDir() + "/later";
  TemporarySweeper sweeper(dir);
  CHECK(sweeper.Sweep() == 0);
  CHECK(sweeper.Sweep() == 0);
  CHECK(sweeper.listings() == 2);
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  std::string gone = Temp(dir, "job.2.pt.trace.json", DeadPid());
  Touch(gone);
  CHECK(sweeper.Sweep() == 1);
  CHECK(sweeper.listings() == 3);
  Touch(gone);
  CHECK(sweeper.Sweep() == 1);
  CHECK(sweeper.listings() == 3);
  std::system(("rm -rf " + dir.substr(0, dir.size() - 6)).c_str());
}

TEST_CASE("a listing that fails is made again at the next sweep, watched or not", "[sweeper][faults]") {
  for (auto kind : {FaultyFileSystem::kWatchInit, FaultyFileSystem::kWatchAdd, FaultyFileSystem::kListDir}) {
    INFO(FaultyFileSystem::Name(kind));
    std::string dir = MakeDir();
    std::string gone = Temp(dir, "job.3.pt.trace.json", DeadPid());
    Touch(gone);
    FaultyFileSystem fs;
    fs.FailAt(kind, 1, kind == FaultyFileSystem::kListDir ? EINTR : EMFILE);
    TemporarySweeper sweeper(dir, fs);
    // The first sweep's listing fails, or its watch does (then it lists).
    CHECK(sweeper.Sweep() == (kind == FaultyFileSystem::kListDir ? 0 : 1));
    CHECK(fs.failed());
    CHECK(Exists(gone) == (kind == FaultyFileSystem::kListDir));
    CHECK(sweeper.Sweep() == (kind == FaultyFileSystem::kListDir ? 1 : 0));
    CHECK_FALSE(Exists(gone));
    CHECK(sweeper.listings() == 2);
    std::system(("rm -rf " + dir).c_str());
  }
}

TEST_CASE("a watch whose events cannot be read is dropped and the directory listed", "[sweeper][faults]") {
  std::string dir = MakeDir();
  FaultyFileSystem fs;
  fs.FailAt(FaultyFileSystem::kRead, 2, EIO);
  TemporarySweeper sweeper(dir, fs);
  CHECK(sweeper.Sweep() == 0);  // watched (its first read finds nothing), listed
  std::string gone = Temp(dir, "job.4.pt.trace.json", DeadPid());
  Touch(gone);
  CHECK(sweeper.Sweep() == 1);  // the events' read failed: listed instead
  CHECK(fs.failed());
  CHECK_FALSE(Exists(gone));
  CHECK(sweeper.listings() == 2);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace prof
