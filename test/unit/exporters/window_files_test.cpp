#include "exporters/files/window_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test/unit/base/temp_dir.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/json/trace_file.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

using testing::TempDir;
using testing::WindowBuilder;

// The real file system, with failures, short writes and races injected on
// chosen calls (the directory is the window sink's: window_sink_test).
class FaultyFileSystem final : public FileSystem {
 public:
  int fail_open_errno = 0;        // every Open fails with this
  int fail_write_errno = 0;       // Write number `fail_write_at` fails with this
  int fail_write_at = 0;          // 1-based
  int interrupt_writes = 0;       // the first N writes fail with EINTR
  int fail_rename_errno = 0;
  int plant_before_link = 0;      // the next N links find their name just taken
  int writes = 0;

  int open_flags = 0;             // of the last Open
  mode_t open_mode = 0;

  int Open(const char* path, int flags, mode_t mode) override {
    open_flags = flags;
    open_mode = mode;
    if (fail_open_errno) return errno = fail_open_errno, -1;
    return PosixFileSystem().Open(path, flags, mode);
  }
  ssize_t Write(int fd, const void* data, size_t size) override {
    ++writes;
    if (interrupt_writes > 0) return --interrupt_writes, errno = EINTR, -1;
    if (fail_write_errno && writes == fail_write_at) return errno = fail_write_errno, -1;
    // Short writes: at most 1000 bytes at a time, so callers must loop.
    return PosixFileSystem().Write(fd, data, std::min<size_t>(size, 1000));
  }
  int Close(int fd) override { return PosixFileSystem().Close(fd); }
  int Rename(const char* from, const char* to) override {
    if (fail_rename_errno) return errno = fail_rename_errno, -1;
    return PosixFileSystem().Rename(from, to);
  }
  int Link(const char* from, const char* to) override {
    if (fail_rename_errno) return errno = fail_rename_errno, -1;
    if (plant_before_link > 0) {  // another process takes the name between our look and our commit
      --plant_before_link;
      std::ofstream(to) << "the other process's window";
    }
    return PosixFileSystem().Link(from, to);
  }
  int Unlink(const char* path) override { return PosixFileSystem().Unlink(path); }
};

Window Small() {
  WindowBuilder b;
  b.window().meta.first_step = 35;
  b.Step(35, 0, 1'000'000);
  for (uint32_t i = 1; i <= 200; ++i) b.Launch("kernel_with_a_long_name", i * 1000, 500, i * 1000 + 600, i * 1000 + 900, i);
  return b.Build();
}

TEST_CASE("files are named <name>[_rank<R>].<first step> with the trace and summary suffixes", "[files]") {
  WindowMeta m;
  m.name = "trainer/a";
  m.first_step = 35;
  CHECK(WindowFileStem(m) == "trainer_a.35");
  m.rank_known = true;
  m.rank = 3;
  CHECK(WindowFileStem(m) == "trainer_a_rank3.35");
  m.name.clear();
  m.hostname = "node1";
  m.pid = 77;
  CHECK(WindowFileStem(m) == "node1_77_rank3.35");
}

TEST_CASE("temporaries are created O_EXCL|O_NOFOLLOW|O_CLOEXEC, never world-writable", "[files][safety]") {
  TempDir dir;
  FaultyFileSystem fs;
  std::string error;
  REQUIRE(WriteWindowFiles(Small(), {dir.path, true, false, false}, fs, &error));
  CHECK((fs.open_flags & (O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_CREAT)) == (O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_CREAT));
  CHECK((fs.open_flags & O_TRUNC) == 0);
  CHECK((fs.open_mode & 0022) == 0);
}

TEST_CASE("a file planted at a temporary's name is neither followed nor truncated", "[files][safety]") {
  TempDir dir;
  // Plant a symlink at every name a temporary would have had under the old
  // scheme (".<final>.tmp<pid>") and pointing at a file we must not touch.
  std::string victim = dir.path + "/victim";
  { std::ofstream(victim) << "precious"; }
  std::string planted = dir.path + "/.worker.35.pt.trace.json.tmp" + std::to_string(getpid());
  REQUIRE(symlink(victim.c_str(), planted.c_str()) == 0);
  std::string error;
  REQUIRE(WriteWindowFiles(Small(), {dir.path, true, false, false}, &error));
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "precious");
  struct stat st {};
  REQUIRE(lstat(planted.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
}

TEST_CASE("an existing file is never replaced: another process's window keeps its name", "[files][safety]") {
  TempDir dir;
  { std::ofstream(dir.path + "/worker.35.pt.trace.json") << "the other process's window"; }
  Window w = Small();
  w.meta.pid = 4242;
  std::string error;
  REQUIRE(WriteWindowFiles(w, {dir.path, true, true, false}, &error));
  CHECK(dir.Files() == std::vector<std::string>{"worker.35.pt.trace.json", "worker_pid4242.35.pt.trace.json",
                                                "worker_pid4242.35.summary.txt"});
  std::ifstream in(dir.path + "/worker.35.pt.trace.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "the other process's window");
  nlohmann::json trace;
  REQUIRE(tool::LoadTrace(dir.path + "/worker_pid4242.35.pt.trace.json", &trace, &error));
  CHECK(trace["traceName"] == "worker_pid4242.35.pt.trace.json");
  // A third writer of the same window gets the next free name.
  REQUIRE(WriteWindowFiles(w, {dir.path, true, true, false}, &error));
  CHECK(dir.Files().size() == 5);
  CHECK(access((dir.path + "/worker_pid4242_2.35.summary.txt").c_str(), F_OK) == 0);
}

TEST_CASE("a name taken between the look and the commit: the trace is written again under the name it has",
          "[files][safety]") {
  // The trace names itself inside; three children of a launcher with one
  // PROF_NAME raced for "job.2" and one trace said "job.2" in a file named
  // "job_pid<pid>.2".
  TempDir dir;
  FaultyFileSystem fs;
  fs.plant_before_link = 1;
  Window w = Small();
  w.meta.pid = 4242;
  std::string error;
  REQUIRE(WriteWindowFiles(w, {dir.path, true, true, false}, fs, &error));
  CHECK(dir.Files() == std::vector<std::string>{"worker.35.pt.trace.json", "worker_pid4242.35.pt.trace.json",
                                                "worker_pid4242.35.summary.txt"});
  nlohmann::json trace;
  REQUIRE(tool::LoadTrace(dir.path + "/worker_pid4242.35.pt.trace.json", &trace, &error));
  CHECK(trace["traceName"] == "worker_pid4242.35.pt.trace.json");
  std::ifstream in(dir.path + "/worker.35.pt.trace.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "the other process's window");
}

TEST_CASE("WriteWindowFiles writes a valid trace and a summary and nothing else", "[files]") {
  TempDir dir;
  std::string error;
  OutputOptions options{dir.path, true, true, false};
  REQUIRE(WriteWindowFiles(Small(), options, &error));
  CHECK(error.empty());
  DIR* d = opendir(dir.path.c_str());
  REQUIRE(d);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"worker.35.pt.trace.json", "worker.35.summary.txt"});
  nlohmann::json trace;
  REQUIRE(tool::LoadTrace(dir.path + "/worker.35.pt.trace.json", &trace, &error));
  CHECK(tool::ValidateTrace(trace).ok());
}

TEST_CASE("with gzip the trace is .pt.trace.json.gz and decompresses to a valid trace", "[files]") {
  TempDir dir;
  std::string error;
  REQUIRE(WriteWindowFiles(Small(), {dir.path, true, false, true}, &error));
  CHECK(dir.Files() == std::vector<std::string>{"worker.35.pt.trace.json.gz"});
  std::string bytes;
  REQUIRE(tool::ReadFileBytes(dir.path + "/worker.35.pt.trace.json.gz", &bytes, &error));
  nlohmann::json trace = nlohmann::json::parse(bytes);
  CHECK(trace["traceEvents"].size() > 400);
  CHECK(tool::ValidateTrace(trace).ok());
  // And it is really compressed.
  struct stat st {};
  stat((dir.path + "/worker.35.pt.trace.json.gz").c_str(), &st);
  CHECK(static_cast<size_t>(st.st_size) < bytes.size() / 3);
}

TEST_CASE("ENOSPC mid-write fails with a one-line error and leaves no file behind", "[files]") {
  TempDir dir;
  FaultyFileSystem fs;
  fs.fail_write_errno = ENOSPC;
  fs.fail_write_at = 3;
  std::string error;
  CHECK_FALSE(WriteWindowFiles(Small(), {dir.path, true, false, false}, fs, &error));
  CHECK(error.find("ENOSPC") != std::string::npos);
  CHECK(error.find("write") == 0);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(dir.Files().empty());  // neither the final name nor the temporary
}

// Another scenario than the test above: the gzip trace's first write fails.
TEST_CASE("ENOSPC on the gzip trace leaves no trace file but the summary is still written", "[files]") {
  TempDir dir;
  FaultyFileSystem fs;
  fs.fail_write_errno = ENOSPC;
  fs.fail_write_at = 1;
  std::string error;
  CHECK_FALSE(WriteWindowFiles(Small(), {dir.path, true, true, true}, fs, &error));
  CHECK(error.find("No space left on device (ENOSPC)") != std::string::npos);
  CHECK(dir.Files() == std::vector<std::string>{"worker.35.summary.txt"});
}

TEST_CASE("EACCES on open is reported with the path and nothing is written", "[files]") {
  TempDir dir;
  FaultyFileSystem fs;
  fs.fail_open_errno = EACCES;
  std::string error;
  CHECK_FALSE(WriteWindowFiles(Small(), {dir.path, true, true, false}, fs, &error));
  CHECK(error.find("open " + dir.path) == 0);
  CHECK(error.find("EACCES") != std::string::npos);
  CHECK(dir.Files().empty());
}

TEST_CASE("a failed rename removes the temporary", "[files]") {
  TempDir dir;
  FaultyFileSystem fs;
  fs.fail_rename_errno = EXDEV;
  std::string error;
  CHECK_FALSE(WriteWindowFiles(Small(), {dir.path, true, true, false}, fs, &error));
  CHECK(error.find("rename") == 0);
  CHECK(dir.Files().empty());
}

TEST_CASE("EINTR and short writes are retried until every byte is written", "[files]") {
  TempDir dir;
  FaultyFileSystem fs;
  fs.interrupt_writes = 5;
  std::string error;
  REQUIRE(WriteWindowFiles(Small(), {dir.path, true, true, false}, fs, &error));
  CHECK(fs.writes > 10);  // 1000-byte short writes
  nlohmann::json trace;
  REQUIRE(tool::LoadTrace(dir.path + "/worker.35.pt.trace.json", &trace, &error));
  CHECK(tool::ValidateTrace(trace).ok());
}

}  // namespace
}  // namespace prof
