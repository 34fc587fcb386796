// PROF_* parsing: each variable's accepted forms, and for each malformed
// value exactly one problem line naming the variable, the value and what is
// accepted, with the documented consequence (default or disabled).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/config_loader.h"
#include "base/output_dir.h"

namespace prof {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup Lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

// Every TempDir() made by this process, removed when it exits (each test
// case runs as its own process under CTest; /tmp used to keep them all).
struct TempDirs {
  std::vector<std::string> paths;
  ~TempDirs() {
    std::error_code ignored;
    for (const auto& p : paths) std::filesystem::remove_all(p, ignored);
  }
};

// A writable output dir so PROF_OUTPUT_DIR itself never adds a problem.
std::string TempDir() {
  static TempDirs dirs;
  char tmpl[] = "/tmp/libprof-config-XXXXXX";
  dirs.paths.push_back(mkdtemp(tmpl));
  return dirs.paths.back();
}

ConfigResult Parse(std::map<std::string, std::string> vars) {
  static const std::string dir = TempDir();
  if (!vars.count("PROF_OUTPUT_DIR")) vars["PROF_OUTPUT_DIR"] = dir;
  FakeEnv env{vars};
  return ParseConfig(env.Lookup());
}

// One problem line, naming the variable and the value.
void RequireOneProblem(const ConfigResult& r, const std::string& var, const std::string& value) {
  INFO("problems: " << (r.problems.empty() ? "(none)" : r.problems[0]));
  REQUIRE(r.problems.size() == 1);
  const std::string& line = r.problems[0];
  CHECK(line.find(var + "='" + value + "'") != std::string::npos);
  CHECK(line.find("expected") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("defaults are DESIGN.md's when nothing is set", "[config]") {
  ConfigResult r = Parse({});
  CHECK(r.problems.empty());
  const Config& c = r.config;
  CHECK(c.enabled);
  CHECK(c.step_source == StepSource::kAuto);
  CHECK(c.step_time_ns == 100'000'000);  // auto's fallback
  CHECK(c.auto_timeout_ns == 60'000'000'000);
  CHECK(c.skip_first == 0);
  CHECK(c.wait == 30);
  CHECK(c.warmup == 2);
  CHECK(c.active == 5);
  CHECK(c.repeat == 1);
  CHECK(c.activities == kDefaultActivities);
  CHECK(c.write_chrome);
  CHECK(c.write_summary);
  CHECK_FALSE(c.gzip);
  CHECK(c.buffer_bytes == 256ull << 20);
  CHECK(c.trigger_file.empty());
  CHECK(c.rank == -1);
  CHECK(c.flush_timeout_ns == 3'000'000'000ull);
}

TEST_CASE("PROF_ENABLE accepts 1/0 spellings, anything else disables", "[config]") {
  for (const char* on : {"1", "true", "yes", "on", "TRUE"}) CHECK(Parse({{"PROF_ENABLE", on}}).config.enabled);
  for (const char* off : {"0", "false", "no", "off"}) {
    ConfigResult r = Parse({{"PROF_ENABLE", off}});
    CHECK_FALSE(r.config.enabled);
    CHECK(r.problems.empty());
  }
  for (const char* bad : {"2", "maybe", "", "-1"}) {
    ConfigResult r = Parse({{"PROF_ENABLE", bad}});
    RequireOneProblem(r, "PROF_ENABLE", bad);
    CHECK(r.problems[0].find("profiling disabled") != std::string::npos);
    CHECK_FALSE(r.config.enabled);
  }
}

TEST_CASE("PROF_STEP parses every source", "[config]") {
  Config c = Parse({{"PROF_STEP", "time:2s"}}).config;
  CHECK(c.step_source == StepSource::kTime);
  CHECK(c.step_time_ns == 2'000'000'000ull);
  c = Parse({{"PROF_STEP", "time:250us"}}).config;
  CHECK(c.step_time_ns == 250'000);
  c = Parse({{"PROF_STEP", "time:1.5ms"}}).config;
  CHECK(c.step_time_ns == 1'500'000);
  c = Parse({{"PROF_STEP", "kernel:^void sgemm.*"}}).config;
  CHECK(c.step_source == StepSource::kKernel);
  CHECK(c.step_pattern == "^void sgemm.*");
  c = Parse({{"PROF_STEP", "nvtx:ProfilerStep#\\d+"}}).config;
  CHECK(c.step_source == StepSource::kNvtx);
  c = Parse({{"PROF_STEP", "api:cudaGraphLaunch"}}).config;
  CHECK(c.step_source == StepSource::kApi);
  CHECK(c.step_api == ApiId::cudaGraphLaunch);
  CHECK(Parse({{"PROF_STEP", "sync"}}).config.step_source == StepSource::kSync);
  CHECK(Parse({{"PROF_STEP", "manual"}}).config.step_source == StepSource::kManual);
  CHECK(Parse({{"PROF_STEP", "auto"}}).config.step_source == StepSource::kAuto);
}

TEST_CASE("PROF_AUTO_TIMEOUT takes a duration, and a bad one keeps the 60 s default and says so", "[config]") {
  CHECK(Parse({{"PROF_AUTO_TIMEOUT", "2s"}}).config.auto_timeout_ns == 2'000'000'000);
  CHECK(Parse({{"PROF_AUTO_TIMEOUT", "500ms"}}).config.auto_timeout_ns == 500'000'000);
  for (const char* bad : {"60", "soon", "-1s"}) {
    ConfigResult r = Parse({{"PROF_AUTO_TIMEOUT", bad}});
    RequireOneProblem(r, "PROF_AUTO_TIMEOUT", bad);
    CHECK(r.config.enabled);
    CHECK(r.config.auto_timeout_ns == 60'000'000'000);
  }
}

TEST_CASE("PROF_TORCH_OPS takes names, shapes or 0, with modules as an option (on by default), and a bad value "
          "keeps the default", "[config]") {
  Config d = Parse({}).config;
  CHECK(d.torch_ops == TorchOps::kNames);
  CHECK(d.torch_modules);
  CHECK(Parse({{"PROF_TORCH_OPS", "shapes"}}).config.torch_ops == TorchOps::kShapes);
  CHECK_FALSE(Parse({{"PROF_TORCH_OPS", "shapes"}}).config.torch_modules);
  CHECK_FALSE(Parse({{"PROF_TORCH_OPS", "names"}}).config.torch_modules);
  CHECK(Parse({{"PROF_TORCH_OPS", "0"}}).config.torch_ops == TorchOps::kOff);
  Config m = Parse({{"PROF_TORCH_OPS", "shapes,modules"}}).config;
  CHECK(m.torch_ops == TorchOps::kShapes);
  CHECK(m.torch_modules);
  CHECK(Parse({{"PROF_TORCH_OPS", "modules"}}).config.torch_modules);
  for (const char* bad : {"all", "0,modules", "names,stacks"}) {
    ConfigResult r = Parse({{"PROF_TORCH_OPS", bad}});
    RequireOneProblem(r, "PROF_TORCH_OPS", bad);
    CHECK(r.config.enabled);
    CHECK(r.config.torch_ops == TorchOps::kNames);
    CHECK(r.config.torch_modules);
  }
}

TEST_CASE("PROF_TORCH_MEMORY is on by default, off with 0, and a bad value keeps it on", "[config]") {
  CHECK(Parse({}).config.torch_memory);
  CHECK_FALSE(Parse({{"PROF_TORCH_MEMORY", "0"}}).config.torch_memory);
  CHECK(Parse({{"PROF_TORCH_MEMORY", "on"}}).config.torch_memory);
  ConfigResult r = Parse({{"PROF_TORCH_MEMORY", "tensors"}});
  RequireOneProblem(r, "PROF_TORCH_MEMORY", "tensors");
  CHECK(r.config.enabled);
  CHECK(r.config.torch_memory);
}

TEST_CASE("PROF_STEP rejects bad sources, durations and regexes and disables profiling", "[config]") {
  for (const char* bad : {"bogus", "time:", "time:100", "time:-5ms", "time:0ms", "time:10xs", "time:1..5s", "time:100ns",
                          "kernel:", "kernel:([a-z", "nvtx:*oops", "api:cudaNotAFunction", "api:", "Sync", "time:99999999s"}) {
    ConfigResult r = Parse({{"PROF_STEP", bad}});
    RequireOneProblem(r, "PROF_STEP", bad);
    CHECK(r.problems[0].find("profiling disabled") != std::string::npos);
    CHECK_FALSE(r.config.enabled);
  }
}

TEST_CASE("schedule numbers accept non-negative integers and fall back to defaults", "[config]") {
  Config c = Parse({{"PROF_SKIP_FIRST", "1"}, {"PROF_WAIT", "3"}, {"PROF_WARMUP", "0"}, {"PROF_ACTIVE", "2"},
                    {"PROF_REPEAT", "0"}})
                 .config;
  CHECK(c.skip_first == 1);
  CHECK(c.wait == 3);
  CHECK(c.warmup == 0);
  CHECK(c.active == 2);
  CHECK(c.repeat == 0);
  const std::map<std::string, uint64_t> defaults = {
      {"PROF_SKIP_FIRST", 0}, {"PROF_WAIT", 30}, {"PROF_WARMUP", 2}, {"PROF_ACTIVE", 5}, {"PROF_REPEAT", 1}};
  for (const auto& [var, def] : defaults) {
    for (const char* bad : {"abc", "-1", "1.5", "", " 3x", "99999999999999999999999", "0x10", "1e3", "+4"}) {
      ConfigResult r = Parse({{var, bad}});
      RequireOneProblem(r, var, bad);
      CHECK(r.problems[0].find("using the default " + std::to_string(def)) != std::string::npos);
      CHECK(r.config.enabled);
    }
  }
  // active must record at least one step.
  ConfigResult r = Parse({{"PROF_ACTIVE", "0"}});
  RequireOneProblem(r, "PROF_ACTIVE", "0");
  CHECK(r.config.active == 5);
}

TEST_CASE("PROF_ACTIVITIES takes a comma list of known names", "[config]") {
  Config c = Parse({{"PROF_ACTIVITIES", "kernel, memcpy,driver"}}).config;
  CHECK(c.activities == (kActKernel | kActMemcpy | kActDriver));
  for (const char* bad : {"kernel,gpu", "", ",", "KERNELS", "memcpy;memset"}) {
    ConfigResult r = Parse({{"PROF_ACTIVITIES", bad}});
    RequireOneProblem(r, "PROF_ACTIVITIES", bad);
    CHECK(r.config.activities == kDefaultActivities);
  }
}

TEST_CASE("PROF_FORMATS and PROF_COMPRESS", "[config]") {
  Config defaults = Parse({}).config;
  CHECK((defaults.write_chrome && defaults.write_summary && defaults.write_html && !defaults.write_stacks));
  Config c = Parse({{"PROF_FORMATS", "summary"}, {"PROF_COMPRESS", "gzip"}}).config;
  CHECK_FALSE(c.write_chrome);
  CHECK(c.write_summary);
  CHECK_FALSE(c.write_html);
  CHECK(c.gzip);
  Config page = Parse({{"PROF_FORMATS", " HTML, stacks"}}).config;
  CHECK((!page.write_chrome && !page.write_summary && page.write_html && page.write_stacks));
  for (const char* bad : {"json", "", "chrome,pdf", "html,svg"}) {
    ConfigResult r = Parse({{"PROF_FORMATS", bad}});
    RequireOneProblem(r, "PROF_FORMATS", bad);
    CHECK((r.config.write_chrome && r.config.write_summary && r.config.write_html && !r.config.write_stacks));
  }
  for (const char* bad : {"zip", "", "gz"}) {
    ConfigResult r = Parse({{"PROF_COMPRESS", bad}});
    RequireOneProblem(r, "PROF_COMPRESS", bad);
    CHECK_FALSE(r.config.gzip);
  }
}

TEST_CASE("PROF_BUFFER_MB is a positive number of MiB", "[config]") {
  CHECK(Parse({{"PROF_BUFFER_MB", "1"}}).config.buffer_bytes == 1ull << 20);
  for (const char* bad : {"0", "-5", "lots", "1.5", "99999999999"}) {
    ConfigResult r = Parse({{"PROF_BUFFER_MB", bad}});
    RequireOneProblem(r, "PROF_BUFFER_MB", bad);
    CHECK(r.config.buffer_bytes == 256ull << 20);
  }
}

TEST_CASE("PROF_FLUSH_TIMEOUT_MS bounds the wait for late device records", "[config]") {
  CHECK(Parse({{"PROF_FLUSH_TIMEOUT_MS", "250"}}).config.flush_timeout_ns == 250'000'000);
  CHECK(Parse({{"PROF_FLUSH_TIMEOUT_MS", "0"}}).config.flush_timeout_ns == 0);
  for (const char* bad : {"-1", "soon", "600001", ""}) {
    ConfigResult r = Parse({{"PROF_FLUSH_TIMEOUT_MS", bad}});
    RequireOneProblem(r, "PROF_FLUSH_TIMEOUT_MS", bad);
    CHECK(r.config.flush_timeout_ns == 3'000'000'000ull);
  }
}

TEST_CASE("PROF_NAME, PROF_TRIGGER_FILE, PROF_CUPTI_LIB", "[config]") {
  CHECK(Parse({{"PROF_NAME", "worker-3"}}).config.name == "worker-3");
  for (const char* bad : {"", "a/b", "..", "tab\there"}) {
    ConfigResult r = Parse({{"PROF_NAME", bad}});
    RequireOneProblem(r, "PROF_NAME", bad);
    CHECK(r.config.name.empty());
  }
  CHECK(Parse({{"PROF_TRIGGER_FILE", "/tmp/go"}}).config.trigger_file == "/tmp/go");
  RequireOneProblem(Parse({{"PROF_TRIGGER_FILE", ""}}), "PROF_TRIGGER_FILE", "");
  CHECK(Parse({{"PROF_CUPTI_LIB", "/bin/sh"}}).config.cupti_lib == "/bin/sh");
  for (const char* bad : {"/no/such/libcupti.so", "/tmp", ""}) {
    ConfigResult r = Parse({{"PROF_CUPTI_LIB", bad}});
    RequireOneProblem(r, "PROF_CUPTI_LIB", bad);
    CHECK(r.config.cupti_lib.empty());
  }
}

TEST_CASE("rank comes from PROF_RANK, else the launcher's variables", "[config]") {
  CHECK(Parse({}).config.rank == -1);
  CHECK(Parse({{"RANK", "3"}}).config.rank == 3);
  CHECK(Parse({{"SLURM_PROCID", "5"}}).config.rank == 5);
  CHECK(Parse({{"OMPI_COMM_WORLD_RANK", "6"}}).config.rank == 6);
  CHECK(Parse({{"PMI_RANK", "7"}}).config.rank == 7);
  CHECK(Parse({{"PMIX_RANK", "9"}}).config.rank == 9);
  CHECK(Parse({{"PROF_RANK", "2"}, {"RANK", "3"}}).config.rank == 2);
  // torchrun under Slurm, mpirun inside an allocation: the launcher that
  // started the process wins over the allocation's SLURM_PROCID.
  CHECK(Parse({{"RANK", "3"}, {"SLURM_PROCID", "0"}}).config.rank == 3);
  CHECK(Parse({{"OMPI_COMM_WORLD_RANK", "6"}, {"SLURM_PROCID", "0"}}).config.rank == 6);
  CHECK(Parse({{"PMIX_RANK", "5"}, {"PMI_RANK", "4"}, {"SLURM_PROCID", "0"}}).config.rank == 5);
  CHECK(Parse({{"WORLD_SIZE", "8"}}).config.world_size == 8);
  CHECK(Parse({{"SLURM_NTASKS", "4"}}).config.world_size == 4);
  CHECK(Parse({{"OMPI_COMM_WORLD_SIZE", "16"}, {"SLURM_NTASKS", "1"}}).config.world_size == 16);
  ConfigResult r = Parse({{"PROF_RANK", "-1"}, {"RANK", "4"}});
  RequireOneProblem(r, "PROF_RANK", "-1");
  CHECK(r.config.rank == 4);
  r = Parse({{"RANK", "x"}});
  RequireOneProblem(r, "RANK", "x");
  CHECK(r.config.rank == -1);
}

TEST_CASE("PROF_OUTPUT_DIR must be usable, else profiling is disabled", "[config]") {
  ConfigResult r = Parse({{"PROF_OUTPUT_DIR", "/proc/libprof-cannot-create"}});
  RequireOneProblem(r, "PROF_OUTPUT_DIR", "/proc/libprof-cannot-create");
  CHECK_FALSE(r.config.enabled);
  r = Parse({{"PROF_OUTPUT_DIR", "/etc/hostname/sub"}});
  RequireOneProblem(r, "PROF_OUTPUT_DIR", "/etc/hostname/sub");
  CHECK_FALSE(r.config.enabled);
  r = Parse({{"PROF_OUTPUT_DIR", "/etc/hostname"}});
  RequireOneProblem(r, "PROF_OUTPUT_DIR", "/etc/hostname");
  CHECK_FALSE(r.config.enabled);
  r = Parse({{"PROF_OUTPUT_DIR", "/etc/hostname/sub/deeper/"}});
  RequireOneProblem(r, "PROF_OUTPUT_DIR", "/etc/hostname/sub/deeper/");
  CHECK(r.problems[0].find("Not a directory") != std::string::npos);
  CHECK_FALSE(r.config.enabled);
  r = Parse({{"PROF_OUTPUT_DIR", "/sys/libprof-cannot-create/a"}});
  RequireOneProblem(r, "PROF_OUTPUT_DIR", "/sys/libprof-cannot-create/a");
  CHECK(r.problems[0].find("'/sys', a sysfs file system") != std::string::npos);
  CHECK_FALSE(r.config.enabled);
  // Missing but creatable: accepted, and left for the writer to create (a
  // process that never writes a window leaves no empty directory behind).
  std::string base = TempDir();
  std::string fresh = base + "/a/b";
  r = Parse({{"PROF_OUTPUT_DIR", fresh}});
  CHECK(r.problems.empty());
  CHECK(r.config.enabled);
  CHECK(access((base + "/a").c_str(), F_OK) != 0);
  // Missing and relative, with a trailing slash: checked against the
  // working directory, nothing created.
  r = Parse({{"PROF_OUTPUT_DIR", "libprof-missing-relative/x/"}});
  CHECK(r.problems.empty());
  CHECK(access("libprof-missing-relative", F_OK) != 0);
  std::vector<std::string> created;
  std::string why;
  REQUIRE(MakeDirectories(fresh, &created, &why));
  CHECK(created == std::vector<std::string>{base + "/a", fresh});
  CHECK(access(fresh.c_str(), W_OK) == 0);
}

TEST_CASE("PROF_CONFIG_FILE sets keys the environment leaves unset", "[config]") {
  std::string path = TempDir() + "/prof.conf";
  {
    std::ofstream out(path);
    out << "# comment\n\nPROF_WAIT=7\nexport PROF_ACTIVE = 3\nPROF_STEP=\"manual\"\nPROF_WARMUP=zzz\nNOT_A_KEY=1\nno equals sign\n";
  }
  ConfigResult r = Parse({{"PROF_CONFIG_FILE", path}, {"PROF_ACTIVE", "4"}});
  CHECK(r.config.wait == 7);
  CHECK(r.config.active == 4);  // environment wins
  CHECK(r.config.step_source == StepSource::kManual);
  CHECK(r.config.warmup == 2);
  REQUIRE(r.problems.size() == 3);
  CHECK(r.problems[0].find("line 7") != std::string::npos);
  CHECK(r.problems[1].find("line 8") != std::string::npos);
  CHECK(r.problems[2].find("PROF_WARMUP='zzz'") != std::string::npos);

  ConfigResult missing = Parse({{"PROF_CONFIG_FILE", "/no/such/file"}});
  RequireOneProblem(missing, "PROF_CONFIG_FILE", "/no/such/file");
  CHECK(missing.config.enabled);
}

TEST_CASE("PROF_CONFIG_FILE must be a regular file: FIFO, device and directory are refused without blocking", "[config][safety]") {
  std::string dir = TempDir();
  std::string fifo = dir + "/fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // nobody writes it: a blocking open or read would hang here
  for (const std::string& path : {fifo, std::string("/dev/zero"), std::string("/dev/urandom"), dir}) {
    INFO(path);
    ConfigResult r = Parse({{"PROF_CONFIG_FILE", path}});
    RequireOneProblem(r, "PROF_CONFIG_FILE", path);
    CHECK(r.problems[0].find("regular file") != std::string::npos);
    CHECK(r.config.enabled);
  }
}

TEST_CASE("PROF_CONFIG_FILE larger than 1 MiB is refused, and garbage lines are reported at most ten times", "[config][safety]") {
  std::string dir = TempDir();
  {
    std::ofstream big(dir + "/big.conf");
    big << std::string((1u << 20) + 1, 'x');
  }
  ConfigResult r = Parse({{"PROF_CONFIG_FILE", dir + "/big.conf"}});
  RequireOneProblem(r, "PROF_CONFIG_FILE", dir + "/big.conf");
  {
    std::ofstream garbage(dir + "/garbage.conf");
    for (int i = 0; i < 5000; ++i) garbage << "garbage " << i << "\n";
    garbage << "PROF_WAIT=9\n";
  }
  r = Parse({{"PROF_CONFIG_FILE", dir + "/garbage.conf"}});
  CHECK(r.config.wait == 9);  // the good line still counts
  REQUIRE(r.problems.size() == 11);
  CHECK(r.problems.back().find("4990 more invalid lines") != std::string::npos);
}

TEST_CASE("a relative PROF_OUTPUT_DIR is made absolute at start, so a later chdir changes nothing", "[config][safety]") {
  std::string dir = TempDir();
  char old[4096];
  REQUIRE(getcwd(old, sizeof(old)) != nullptr);
  REQUIRE(chdir(dir.c_str()) == 0);
  ConfigResult r = Parse({{"PROF_OUTPUT_DIR", "./traces/a"}});
  REQUIRE(chdir(old) == 0);
  CHECK(r.problems.empty());
  char real[4096];
  REQUIRE(realpath(dir.c_str(), real) != nullptr);
  CHECK(r.config.output_dir == std::string(real) + "/traces/a");
}

TEST_CASE("directories libprof creates are not world-writable whatever the umask", "[config][safety]") {
  std::string base = TempDir();
  mode_t old = umask(0);
  std::string why;
  bool ok = MakeDirectories(base + "/x/y", nullptr, &why);
  umask(old);
  REQUIRE(ok);
  struct stat st {};
  REQUIRE(stat((base + "/x/y").c_str(), &st) == 0);
  CHECK((st.st_mode & 0002) == 0);
  REQUIRE(stat((base + "/x").c_str(), &st) == 0);
  CHECK((st.st_mode & 0002) == 0);
}

TEST_CASE("Describe lists every key as applied", "[config]") {
  Config c = Parse({{"PROF_STEP", "kernel:gemm"}, {"PROF_WAIT", "4"}}).config;
  auto described = c.Describe();
  std::map<std::string, std::string> m(described.begin(), described.end());
  CHECK(m["PROF_STEP"] == "kernel:gemm");
  CHECK(m["PROF_WAIT"] == "4");
  CHECK(m["PROF_ACTIVITIES"] == "kernel,memcpy,memset,runtime,sync,memory,nvtx");
  CHECK(m.count("PROF_FLUSH_TIMEOUT_MS") == 1);
}

TEST_CASE("PROF_RANGE takes cudaProfilerApi or nvtx:<regex>, and unset the schedule makes the windows", "[config]") {
  CHECK(Parse({}).config.range_kind == RangeKind::kNone);
  for (const char* v : {"cudaProfilerApi", "cudaprofilerapi", " cudaProfilerApi "}) {
    ConfigResult r = Parse({{"PROF_RANGE", v}});
    CHECK(r.problems.empty());
    CHECK(r.config.range_kind == RangeKind::kProfilerApi);
  }
  ConfigResult r = Parse({{"PROF_RANGE", "nvtx:^train@step$"}});
  CHECK(r.problems.empty());
  CHECK(r.config.range_kind == RangeKind::kNvtx);
  CHECK(r.config.range_pattern == "^train@step$");
  CHECK(Parse({{"PROF_RANGE", ""}}).config.range_kind == RangeKind::kNone);
  // As applied, for the trace metadata.
  bool described = false;
  for (const auto& [key, value] : r.config.Describe()) {
    if (key == "PROF_RANGE") described = value == "nvtx:^train@step$";
  }
  CHECK(described);
}

TEST_CASE("a bad PROF_RANGE is one line and falls back to the schedule, profiling stays on", "[config]") {
  for (const char* bad : {"nvtx", "nvtx:", "nvtx:([", "cudaProfilerApis", "kernel:foo", "range"}) {
    ConfigResult r = Parse({{"PROF_RANGE", bad}});
    RequireOneProblem(r, "PROF_RANGE", bad);
    CHECK(r.problems[0].find("capture ranges off: windows follow the PROF_STEP schedule") != std::string::npos);
    CHECK(r.config.enabled);
    CHECK(r.config.range_kind == RangeKind::kNone);
    CHECK(r.config.range_pattern.empty());
  }
}

}  // namespace
}  // namespace prof
