// Temporaries left by processes that ended through _exit() mid-write are
// removed by the next libprof process writing to the directory; those of
// live processes, other files and links are left alone.
#include "exporters/files/atomic_file.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "test/unit/exporters/temp_files.h"

namespace prof {
namespace {

using testing::DeadPid;
using testing::Exists;
using testing::Touch;

std::string MakeDir() { return testing::MakeDir("libprof-atomic"); }

TEST_CASE("temporaries of processes that no longer exist are removed, nothing else", "[atomic_file]") {
  std::string dir = MakeDir();
  std::string dead = std::to_string(DeadPid());
  std::string live = std::to_string(getppid());
  std::string self = std::to_string(getpid());
  std::string gone = dir + "/.job.3.pt.trace.json.tmp" + dead + ".c1c2df1925";
  std::string gone_summary = dir + "/.job.3.summary.txt.tmp" + dead + ".a0";
  std::string alive = dir + "/.job.4.pt.trace.json.tmp" + live + ".c1c2df1925";
  std::string mine = dir + "/.job.5.pt.trace.json.tmp" + self + ".ff";
  std::string whole = dir + "/job.3.pt.trace.json";
  std::string other = dir + "/.notes.tmp" + dead;  // no hex part: not ours
  std::string link = dir + "/.job.6.pt.trace.json.tmp" + dead + ".b0";
  for (const std::string& p : {gone, gone_summary, alive, mine, whole, other}) Touch(p);
  REQUIRE(symlink(whole.c_str(), link.c_str()) == 0);

  CHECK(RemoveDeadProcessTemporaries(dir) == 2);
  CHECK_FALSE(Exists(gone));
  CHECK_FALSE(Exists(gone_summary));
  CHECK(Exists(alive));
  CHECK(Exists(mine));  // this process's own, possibly being written
  CHECK(Exists(whole));
  CHECK(Exists(other));
  CHECK(Exists(link));  // not a regular file: never unlinked
  CHECK(RemoveDeadProcessTemporaries(dir + "/missing") == 0);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace prof
