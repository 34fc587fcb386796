// The window sink decides and does what happens to a sealed window: an
// empty one leaves nothing, a recorded one gets its files in a directory
// created for it, temporaries of dead processes are swept, and a failure
// leaves no partial file and is one line the writer logs.
#include "agent/session/window_sink.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>

#include "agent/session/writer.h"
#include "base/clock.h"
#include "base/log.h"
#include "fakes.h"
#include "test/unit/base/faulty_file_system.h"
#include "test/unit/base/temp_dir.h"

namespace prof {
namespace {

using testing::FaultyFileSystem;
using testing::TempDir;

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

// One window through a writer thread and the sink; the warnings it logged.
struct Outcome {
  uint64_t failed = 0;
  std::vector<std::string> warnings;
  std::vector<std::string> infos;
};

Outcome WriteThrough(WindowFileSink* sink, const Window& window) {
  testing::FakeCollector collector;
  collector.records = window.device_records;
  WriterDeps deps;
  deps.collector = &collector;
  deps.sink = [sink](const Window& w, std::string* error, std::vector<std::string>* files) {
    return sink->Write(w, error, files);
  };
  LogCapture log;
  Outcome outcome;
  {
    WriterThread writer(std::move(deps));
    WindowJob job;
    job.meta = window.meta;
    job.steps = window.steps;
    job.deadline_ns = NowNs();
    writer.SubmitWindow(std::move(job));
    REQUIRE(writer.Drain(10'000'000'000));
    outcome.failed = writer.windows_failed();
  }
  outcome.warnings = log.Lines("warning");
  for (const std::string& line : log.Lines("error")) outcome.warnings.push_back(line);
  outcome.infos = log.Lines("info");
  return outcome;
}

TEST_CASE("through the writer, a written window's line names its process, its rank and each file it wrote",
          "[sink][writer]") {
  TempDir tmp;
  WindowFileSink sink(Options(tmp.path));
  // Two processes of one job with the same PROF_NAME and no rank: the second
  // takes the name with its pid (WindowFileStemVariant), and says so.
  Window first = Recorded();
  Window second = Recorded();
  second.meta.pid = 4343;
  Outcome a = WriteThrough(&sink, first);
  Outcome b = WriteThrough(&sink, second);
  REQUIRE(a.infos.size() == 1);
  REQUIRE(b.infos.size() == 1);
  const std::string counts = " written: 0 CUDA calls, 1 kernels/copies/memsets on the GPU; files: ";
  CHECK(a.infos[0] == "window steps 5-6 of pid 4242" + counts + tmp.path + "/worker.5.pt.trace.json, " + tmp.path +
                          "/worker.5.summary.txt");
  CHECK(b.infos[0] == "window steps 5-6 of pid 4343" + counts + tmp.path + "/worker_pid4343.5.pt.trace.json, " +
                          tmp.path + "/worker_pid4343.5.summary.txt");
  // Ranks of a job: each line names its rank, and the files it names are there.
  Window ranked = Recorded();
  ranked.meta.rank_known = true;
  ranked.meta.rank = 3;
  ranked.meta.partial = true;
  Outcome c = WriteThrough(&sink, ranked);
  REQUIRE(c.infos.size() == 1);
  CHECK(c.infos[0] == "window steps 5-6 (partial) of pid 4242 (rank 3)" + counts + tmp.path +
                          "/worker_rank3.5.pt.trace.json, " + tmp.path + "/worker_rank3.5.summary.txt");
  std::vector<std::string> files = TempDir::Files(tmp.path);
  for (const char* name : {"worker.5.pt.trace.json", "worker_pid4343.5.summary.txt", "worker_rank3.5.summary.txt"}) {
    CHECK(std::find(files.begin(), files.end(), name) != files.end());
  }
}

TEST_CASE("a file that could not be written is not named among the window's files", "[sink][writer]") {
  TempDir tmp;
  FaultyFileSystem fs;
  fs.FailAt(FaultyFileSystem::kWrite, 1, ENOSPC);  // the trace's first write
  WindowFileSink sink(Options(tmp.path), fs);
  std::string error;
  std::vector<std::string> placed;
  CHECK_FALSE(sink.Write(Recorded(), &error, &placed));
  CHECK(placed == std::vector<std::string>{tmp.path + "/worker.5.summary.txt"});
}

TEST_CASE("through the writer, a full disk is one warning naming the steps, the call and ENOSPC", "[sink][writer]") {
  TempDir tmp;
  FaultyFileSystem fs;
  fs.FailAt(FaultyFileSystem::kWrite, 1, ENOSPC);
  WindowFileSink sink(Options(tmp.path), fs);
  Outcome outcome = WriteThrough(&sink, Recorded());
  CHECK(outcome.failed == 1);
  REQUIRE(outcome.warnings.size() == 1);
  CHECK(outcome.warnings[0].rfind("window steps 5-6 not written: write " + tmp.path + "/.worker.5.", 0) == 0);
  CHECK(outcome.warnings[0].find("No space left on device (ENOSPC)") != std::string::npos);
  // The summary still came; no temporary and no partial trace are left.
  CHECK(TempDir::Files(tmp.path) == std::vector<std::string>{"worker.5.summary.txt"});
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A file's name and bytes as the plain variant would have them: the name
// another process's file made us take ("worker_pid4242[_k]") and our own
// temporary's hidden name (".<final>.tmp<pid>.<hex>") both back to the final
// name, so any whole file compares equal to the clean run's.
std::string Normalized(std::string text) { return std::regex_replace(text, std::regex("_pid4242(_[0-9]+)?"), ""); }
std::string FinalName(const std::string& name) {
  std::smatch m;
  std::string own = "^\\.(.*)\\.tmp" + std::to_string(getpid()) + "\\.[0-9a-f]+$";
  if (std::regex_match(name, m, std::regex(own))) return Normalized(m[1]);
  return Normalized(name);
}

// The temporary of a process that has exited (what the sweep removes).
std::string PlantDeadTemporary(const std::string& dir, const std::string& stem) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  std::string name = "." + stem + ".pt.trace.json.tmp" + std::to_string(child) + ".c1c2df1925";
  std::ofstream(dir + "/" + name) << "partial";
  return name;
}

// What the sink meets: a missing nested directory (created), or an existing
// one holding a dead process's temporary (swept at the first window, listed;
// another appears before the second window, seen by the directory's watch).
enum class Scene { kNewDirectory, kSweeping };

struct SceneRun {
  std::vector<Outcome> windows;
  std::map<std::string, std::string> files;  // name -> bytes, in the output directory
  std::vector<std::string> planted;          // the dead processes' temporaries
};

SceneRun Play(Scene scene, FileSystem& fs) {
  TempDir tmp;
  std::string dir = tmp.path + (scene == Scene::kNewDirectory ? "/a/b" : "/out");
  SceneRun run;
  if (scene == Scene::kSweeping) {
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    run.planted.push_back(PlantDeadTemporary(dir, "other.3"));
  }
  WindowFileSink sink(Options(dir), fs);
  run.windows.push_back(WriteThrough(&sink, Recorded()));
  if (scene == Scene::kSweeping) {
    run.planted.push_back(PlantDeadTemporary(dir, "other.9"));
    Window next = Recorded();
    next.meta.first_step = 11;
    next.meta.last_step = 12;
    next.steps = {{11, 0, 1'000'000}, {12, 1'000'000, 2'000'000}};
    run.windows.push_back(WriteThrough(&sink, next));
  }
  for (const std::string& name : TempDir::Files(dir)) run.files[name] = ReadAll(dir + "/" + name);
  return run;
}

TEST_CASE("a failure at any file or directory call the sink makes leaves no partial file and is one warning",
          "[sink][faults]") {
  for (Scene scene : {Scene::kNewDirectory, Scene::kSweeping}) {
    FaultyFileSystem counting;
    SceneRun clean = Play(scene, counting);
    for (const Outcome& w : clean.windows) REQUIRE(w.failed == 0);
    for (const Outcome& w : clean.windows) REQUIRE(w.warnings.empty());
    // The calls each scene is there to reach.
    using F = FaultyFileSystem;
    for (F::Call c : {F::kAccess, F::kOpen, F::kWrite, F::kClose, F::kLink, F::kUnlink, F::kStat}) {
      CHECK(counting.calls(c) >= 1);
    }
    if (scene == Scene::kNewDirectory) CHECK(counting.calls(F::kMakeDir) >= 2);
    if (scene == Scene::kSweeping) {
      for (F::Call c : {F::kListDir, F::kLstat, F::kWatchInit, F::kWatchAdd, F::kRead}) CHECK(counting.calls(c) >= 1);
      CHECK(counting.calls(F::kLstat) >= 2);  // the listing's and the watch's
      for (const std::string& name : clean.planted) CHECK(clean.files.count(name) == 0);  // both swept
    }
    std::map<std::string, std::string> whole;  // the clean run's files, by final name
    for (const auto& [name, bytes] : clean.files) whole[FinalName(name)] = Normalized(bytes);
    int injected = 0;
    for (int call = 0; call < FaultyFileSystem::kCallKinds; ++call) {
      auto kind = static_cast<FaultyFileSystem::Call>(call);
      for (int at = 1; at <= counting.calls(kind); ++at) {
        for (int err : {ENOSPC, EACCES, EINTR, EEXIST}) {
          INFO("scene " << static_cast<int>(scene) << ": " << FaultyFileSystem::Name(kind) << " #" << at
                        << " fails with " << strerrorname_np(err));
          FaultyFileSystem fs;
          fs.FailAt(kind, at, err);
          SceneRun run = Play(scene, fs);
          CHECK(fs.failed());
          ++injected;
          // Each window that failed says so in exactly one line, naming the
          // steps and the error; one that was written says nothing alarming.
          for (const Outcome& w : run.windows) {
            REQUIRE(w.warnings.size() == w.failed);
            for (const std::string& line : w.warnings) {
              CHECK(line.rfind("window steps ", 0) == 0);
              CHECK(line.find(" not written: ") != std::string::npos);
              // (A fake EEXIST from mkdir leaves the directory missing: the
              // next call's error is the one named.)
              if (err != EEXIST || kind != FaultyFileSystem::kMakeDir) {
                CHECK(line.find(std::strerror(err)) != std::string::npos);
              }
            }
          }
          // Every file left is whole: the clean run's bytes under the same
          // final name (our own temporary is whole only when it is a second
          // link to a file already in place); dead processes' temporaries
          // may stay when the sweep could not remove them.
          for (const auto& [name, bytes] : run.files) {
            INFO(name);
            if (std::find(run.planted.begin(), run.planted.end(), name) != run.planted.end()) continue;
            REQUIRE(whole.count(FinalName(name)) == 1);
            CHECK(Normalized(bytes) == whole[FinalName(name)]);
          }
        }
      }
    }
    CHECK(injected > 40);
  }
}

}  // namespace
}  // namespace prof
