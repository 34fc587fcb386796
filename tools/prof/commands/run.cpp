// `prof run`: sets the environment libprof reads and execs the command, so
// the command's exit status (or terminating signal) is prof's own.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "tools/prof/commands/commands.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof run [options] -- CMD [ARGS...]

Runs CMD with libprof injected (LD_PRELOAD, appended to any existing value;
NVTX_INJECTION64_PATH) and the schedule given below (PROF_* variables; any
PROF_* already in the environment is kept unless an option overrides it).
The exit status is CMD's.

options:
  --step SPEC        what a step is: auto (default), time:100ms, kernel:<regex>,
                     nvtx:<regex>, api:<cudaFunction>, sync, manual (PROF_STEP)
  --range SPEC       windows from ranges the program marks instead of the
                     schedule: cudaProfilerApi (cudaProfilerStart..Stop) or
                     nvtx:<regex>; --repeat caps how many  (PROF_RANGE)
  --skip-first N     steps skipped before the schedule starts   (PROF_SKIP_FIRST)
  --wait N           steps waited per cycle                     (PROF_WAIT)
  --warmup N         steps warmed up per cycle                  (PROF_WARMUP)
  --active N         steps recorded per window                  (PROF_ACTIVE)
  --repeat N         windows (ranges with --range); 0: no limit (PROF_REPEAT)
  --out DIR          where traces and summaries go              (PROF_OUTPUT_DIR)
  --name NAME        worker name in file names                  (PROF_NAME)
  --gzip             write .pt.trace.json.gz                    (PROF_COMPRESS=gzip)
  --lib PATH         libprof.so to inject (default: ../lib/libprof.so next to
                     this program, or the build tree's agent/libprof.so)
  -q, --quiet        do not print what is being run
)";

bool IsCount(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string SelfDir() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  std::string exe(path, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

bool Exists(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// ../<libdir>/libprof.so when installed; <build>/agent/libprof.so when run
// from the build tree (<build>/tools/prof/prof).
std::string FindLibrary() {
  std::string dir = SelfDir();
  for (const std::string& candidate :
       {dir + "/../" LIBDIR_FROM_PREFIX "/libprof.so", dir + "/../lib/libprof.so", dir + "/../lib64/libprof.so",
        dir + "/../../agent/libprof.so"}) {
    if (Exists(candidate)) {
      char resolved[PATH_MAX];
      return realpath(candidate.c_str(), resolved) ? std::string(resolved) : candidate;
    }
  }
  return {};
}

}  // namespace

int RunCommand(const Args& args) {
  std::vector<std::pair<std::string, std::string>> env;  // PROF_* to set
  std::string lib;
  bool quiet = false;
  size_t i = 0;
  static const std::pair<const char*, const char*> kCountOptions[] = {
      {"--skip-first", "PROF_SKIP_FIRST"}, {"--wait", "PROF_WAIT"},     {"--warmup", "PROF_WARMUP"},
      {"--active", "PROF_ACTIVE"},         {"--repeat", "PROF_REPEAT"}};
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      return 0;
    }
    if (a == "-q" || a == "--quiet") {
      quiet = true;
      continue;
    }
    if (a == "--gzip") {
      env.emplace_back("PROF_COMPRESS", "gzip");
      continue;
    }
    bool takes_value = a == "--step" || a == "--range" || a == "--out" || a == "--lib" || a == "--name";
    for (const auto& [option, variable] : kCountOptions) takes_value |= a == option;
    if (!takes_value) {
      std::fprintf(stderr, "prof run: unknown option '%s' (did you forget '--' before the command?)\n%s", a.c_str(),
                   kHelp);
      return 2;
    }
    if (i + 1 >= args.size()) {
      std::fprintf(stderr, "prof run: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string& value = args[++i];
    if (a == "--step") env.emplace_back("PROF_STEP", value);
    if (a == "--range") env.emplace_back("PROF_RANGE", value);
    if (a == "--out") env.emplace_back("PROF_OUTPUT_DIR", value);
    if (a == "--name") env.emplace_back("PROF_NAME", value);
    if (a == "--lib") lib = value;
    for (const auto& [option, variable] : kCountOptions) {
      if (a != option) continue;
      if (!IsCount(value)) {
        std::fprintf(stderr, "prof run: %s '%s': expected a whole number of steps (0, 1, 2, ...)\n", a.c_str(),
                     value.c_str());
        return 2;
      }
      env.emplace_back(variable, value);
    }
  }
  if (i >= args.size()) {
    std::fprintf(stderr, "prof run: no command given\n%s", kHelp);
    return 2;
  }
  if (lib.empty()) lib = FindLibrary();
  if (lib.empty() || !Exists(lib)) {
    std::fprintf(stderr, "prof run: libprof.so not found%s%s; pass --lib PATH\n", lib.empty() ? "" : " at ",
                 lib.c_str());
    return 2;
  }
  for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), /*overwrite=*/1);
  const char* preload = std::getenv("LD_PRELOAD");
  std::string new_preload = preload && *preload ? std::string(preload) + ":" + lib : lib;
  setenv("LD_PRELOAD", new_preload.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);

  std::vector<char*> argv;
  for (size_t k = i; k < args.size(); ++k) argv.push_back(const_cast<char*>(args[k].c_str()));
  argv.push_back(nullptr);
  if (!quiet) {
    const char* out = std::getenv("PROF_OUTPUT_DIR");
    std::fprintf(stderr, "prof: running %s with %s; windows go to %s\n", argv[0], lib.c_str(),
                 out ? out : "./prof-traces");
  }
  execvp(argv[0], argv.data());
  int err = errno;
  std::fprintf(stderr, "prof run: cannot run '%s': %s\n", argv[0], std::strerror(err));
  return err == ENOENT ? 127 : 126;  // the shell's conventions
}

}  // namespace prof::tool
