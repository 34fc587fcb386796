// The window sink decides and does what happens to a sealed window: an
// empty one leaves nothing, a recorded one gets its files in a directory
// created for it, temporaries of dead processes are swept, and a failure
// leaves no partial file and is one line the writer logs.
#include "agent/session/window_sink.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "agent/session/writer.h"
#include "base/clock.h"
#include "base/log.h"
#include "fakes.h"

namespace prof {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/libprof-sink-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  // Every name in dir (hidden temporaries included), sorted.
  static std::vector<std::string> Files(const std::string& dir) {
    std::vector<std::string> names;
    DIR* d = opendir(dir.c_str());
    while (dirent* e = d ? readdir(d) : nullptr) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    if (d) closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }
};

// The agent's log, as lines "<level>: <message>", while it lives.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    sink_->set_pattern("%l: %v");
    Log().sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = Log().sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  std::vector<std::string> Lines(const std::string& level) const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(level + ": ", 0) == 0) lines.push_back(line.substr(level.size() + 2));
    }
    return lines;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// The real file system, with every write failing with ENOSPC.
class FullDisk final : public FileSystem {
 public:
  int Open(const char* path, int flags, mode_t mode) override { return PosixFileSystem().Open(path, flags, mode); }
  ssize_t Write(int, const void*, size_t) override { return errno = ENOSPC, -1; }
  int Close(int fd) override { return PosixFileSystem().Close(fd); }
  int Rename(const char* from, const char* to) override { return PosixFileSystem().Rename(from, to); }
  int Unlink(const char* path) override { return PosixFileSystem().Unlink(path); }
  int MakeDir(const char* path, mode_t mode) override { return PosixFileSystem().MakeDir(path, mode); }
};

// One launch and its kernel in steps 5-6.
Window Recorded() {
  Window w;
  w.strings = {"", "kernel_a"};
  w.meta.name = "worker";
  w.meta.hostname = "host";
  w.meta.pid = 4242;
  w.meta.first_step = 5;
  w.meta.last_step = 6;
  w.meta.start_ns = 0;
  w.meta.end_ns = 2'000'000;
  w.steps = {{5, 0, 1'000'000}, {6, 1'000'000, 2'000'000}};
  HostEvent call{};
  call.start_ns = 1000, call.end_ns = 5000, call.correlation_id = 1, call.tid = 4242;
  call.api = static_cast<uint16_t>(ApiId::cudaLaunchKernel);
  w.host_events.push_back(call);
  DeviceRecord kernel{};
  kernel.kind = static_cast<uint8_t>(DeviceKind::kKernel);
  kernel.start_ns = 6000, kernel.end_ns = 9000, kernel.correlation_id = 1, kernel.stream_id = 7, kernel.name_id = 1;
  w.device_records.push_back(kernel);
  return w;
}

Window Empty() {
  Window w = Recorded();
  w.host_events.clear();
  w.device_records.clear();
  return w;
}

WindowSinkOptions Options(const std::string& dir) {
  WindowSinkOptions options;
  options.files.output_dir = dir;
  options.files.chrome = true;
  options.files.summary = true;
  options.files.html = false;
  return options;
}

TEST_CASE("a window that recorded nothing leaves no file and no directory", "[sink]") {
  TempDir tmp;
  std::string dir = tmp.path + "/out";
  WindowFileSink sink(Options(dir));
  Window empty = Empty();
  // libprof's own calls (overhead records) are not the program's.
  DeviceRecord overhead{};
  overhead.kind = static_cast<uint8_t>(DeviceKind::kOverhead);
  empty.device_records.push_back(overhead);
  std::string note;
  CHECK(sink.Write(empty, &note));
  CHECK(note == "not written: nothing was recorded in it");
  struct stat st;
  CHECK(stat(dir.c_str(), &st) != 0);
}

TEST_CASE("a call only CUPTI recorded is enough for a window's files, as is an NVTX range", "[sink]") {
  Window w = Recorded();
  w.host_events.clear();
  CHECK(WindowFileSink::Recorded(w));
  w.device_records.clear();
  CHECK_FALSE(WindowFileSink::Recorded(w));
  w.nvtx_ranges.push_back(NvtxRange{});
  CHECK(WindowFileSink::Recorded(w));
}

TEST_CASE("a recorded window's files go into the output directory, made with its parents", "[sink]") {
  TempDir tmp;
  std::string dir = tmp.path + "/a/b";
  WindowFileSink sink(Options(dir));
  std::string note;
  REQUIRE(sink.Write(Recorded(), &note));
  CHECK(note.empty());
  CHECK(TempDir::Files(dir) == std::vector<std::string>{"worker.5.pt.trace.json", "worker.5.summary.txt"});
}

TEST_CASE("an output directory that is a file is one line naming PROF_OUTPUT_DIR", "[sink]") {
  TempDir tmp;
  std::string dir = tmp.path + "/taken";
  std::ofstream(dir) << "a file";
  WindowFileSink sink(Options(dir));
  std::string error;
  CHECK_FALSE(sink.Write(Recorded(), &error));
  CHECK(error == "PROF_OUTPUT_DIR='" + dir + "': it exists and is not a directory");
}

TEST_CASE("a fork child's first window written says once why it holds host calls only", "[sink]") {
  TempDir tmp;
  WindowSinkOptions options = Options(tmp.path);
  options.host_only = true;
  options.parent = 77;
  WindowFileSink sink(options);
  LogCapture log;
  std::string note;
  REQUIRE(sink.Write(Empty(), &note));  // nothing written: nothing said yet
  CHECK(log.Lines("info").empty());
  REQUIRE(sink.Write(Recorded(), &note));
  Window next = Recorded();
  next.meta.first_step = 11;
  REQUIRE(sink.Write(next, &note));
  std::vector<std::string> lines = log.Lines("info");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("was forked from pid 77 after that process had loaded CUDA") != std::string::npos);
}

TEST_CASE("temporaries a dead process left mid-write are swept after a window, and said", "[sink]") {
  TempDir tmp;
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  std::string left = tmp.path + "/.other.3.pt.trace.json.tmp" + std::to_string(child) + ".c1c2df1925";
  std::ofstream(left) << "partial";
  WindowFileSink sink(Options(tmp.path));
  LogCapture log;
  std::string note;
  REQUIRE(sink.Write(Recorded(), &note));
  CHECK(access(left.c_str(), F_OK) != 0);
  std::vector<std::string> lines = log.Lines("info");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("removed 1 temporary file(s) in PROF_OUTPUT_DIR") == 0);
}

TEST_CASE("through the writer, a full disk is one warning naming the steps, the call and ENOSPC", "[sink][writer]") {
  TempDir tmp;
  FullDisk fs;
  auto sink = std::make_shared<WindowFileSink>(Options(tmp.path), fs);
  testing::FakeCollector collector;
  Window recorded = Recorded();
  collector.records = recorded.device_records;
  WriterDeps deps;
  deps.collector = &collector;
  deps.sink = [sink](const Window& w, std::string* error) { return sink->Write(w, error); };
  LogCapture log;
  {
    WriterThread writer(std::move(deps));
    WindowJob job;
    job.meta = recorded.meta;
    job.steps = recorded.steps;
    job.deadline_ns = NowNs();
    writer.SubmitWindow(std::move(job));
    REQUIRE(writer.Drain(10'000'000'000));
    CHECK(writer.windows_failed() == 1);
  }
  std::vector<std::string> warnings = log.Lines("warning");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].rfind("window steps 5-6 not written: write " + tmp.path + "/.worker.5.", 0) == 0);
  CHECK(warnings[0].find("No space left on device (ENOSPC)") != std::string::npos);
  CHECK(TempDir::Files(tmp.path).empty());  // no temporary, no partial file
}

}  // namespace
}  // namespace prof
