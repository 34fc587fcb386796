// The agent log: every record is one line whatever a value holds, and
// PROF_LOG_FILE is opened only if it is a regular file (a FIFO without a
// reader would block the host's start forever).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "base/log.h"

namespace prof {
namespace {

TEST_CASE("EscapeForLog turns control characters into escapes and keeps the rest", "[log][safety]") {
  CHECK(EscapeForLog("plain /path_1 é") == "plain /path_1 é");
  CHECK(EscapeForLog("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(EscapeForLog(std::string("x\x01y\x7f", 4)) == "x\\x01y\\x7f");
  CHECK(EscapeForLog("one\n[libprof] info: forged").find('\n') == std::string::npos);
}

TEST_CASE("OpenLogFile refuses a FIFO, a device and a directory without blocking", "[log][safety]") {
  char tmpl[] = "/tmp/libprof-log-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string fifo = dir + "/fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  // A reader keeps the FIFO open: a plain open for writing would succeed,
  // and the writes would block once the pipe fills.
  int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  for (const std::string& path : {fifo, std::string("/dev/null"), dir}) {
    INFO(path);
    std::string why;
    CHECK(OpenLogFile(path.c_str(), &why) == -1);
    CHECK(!why.empty());
  }
  close(reader);
  std::string why;
  int fd = OpenLogFile((dir + "/log.txt").c_str(), &why);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace prof
