// `prof validate FILE...`
#include <cstdio>

#include "tools/prof/commands.h"
#include "tools/prof/trace_io.h"
#include "tools/prof/validate.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof validate [-q] FILE...

Checks Chrome trace files (.json or .json.gz) against the rules Perfetto's
JSON importer and Holistic Trace Analysis rely on: strict JSON; ph/ts/pid/tid
on every event, dur and cat on X events; no negative timestamps; X events on
one thread nest or are disjoint; flow starts lie inside a slice and have a
finish; kernels carry args.stream and args.correlation; distributedInfo.rank.
Each failure names its rule and the event. Exit status 0 when every file
passes, 1 otherwise.

  -q   print failures only
)";

}  // namespace

bool WantsHelp(const Args& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

int ValidateCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  bool quiet = false;
  size_t files = 0, failed = 0;
  for (const std::string& path : args) {
    if (path == "-q") {
      quiet = true;
      continue;
    }
    ++files;
    nlohmann::json trace;
    std::string error;
    if (!LoadTrace(path, &trace, &error)) {
      std::printf("%s: FAIL\n  %s\n", path.c_str(), error.c_str());
      ++failed;
      continue;
    }
    ValidateResult result = ValidateTrace(trace);
    size_t events = trace.is_object() && trace.contains("traceEvents") ? trace["traceEvents"].size() : 0;
    if (!result.ok()) {
      ++failed;
      std::printf("%s: FAIL (%zu events)\n", path.c_str(), events);
      for (const std::string& e : result.errors) std::printf("  %s\n", e.c_str());
    } else if (!quiet) {
      std::printf("%s: OK (%zu events%s)\n", path.c_str(), events, result.strict ? "" : ", not a libprof trace");
    }
    if (!quiet) {
      for (const std::string& w : result.warnings) std::printf("  warning: %s\n", w.c_str());
    }
  }
  if (files == 0) {
    std::fprintf(stderr, "prof validate: no files given\n%s", kHelp);
    return 2;
  }
  return failed ? 1 : 0;
}

}  // namespace prof::tool
