// `prof validate FILE...`
#include <cstdio>
#include <exception>

#include "tools/prof/commands/commands.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/trace/validate.h"

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

  -q                    print failures only
  --max-unpacked-mb N   refuse a file larger than N MB once gunzipped
                        (default 16384)

The file is read as a stream: memory grows with the number of flows (about
56 bytes each), not with the file; a thread's slices are checked as they
arrive when they come in start order (as libprof writes them), else they are
held (24 bytes each) and that thread is read a second time. A file that
cannot be read is reported and the others are still checked.
)";

}  // namespace

int ValidateCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  bool quiet = false;
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
  std::vector<std::string> paths;
  if (int status = ParseFileArgs(args, "validate", kHelp, &max_unpacked, &paths, &quiet)) return status;
  size_t failed = 0;
  for (const std::string& path : paths) {
    ValidateResult result;
    uint64_t events = 0;
    std::string error;
    // Per file as in summary.cpp: each command reports a failure its own way (a FAIL line here).
    bool read = false;
    // Whatever goes wrong with one file is reported with its name, and the
    // next file is still checked.
    try {
      read = ValidateFile(path, max_unpacked, &result, &events, &error);
    } catch (const std::exception& e) {
      error = path + ": " + e.what();
    }
    if (!read) {
      std::printf("%s: FAIL\n  %s\n", path.c_str(), error.c_str());
      ++failed;
      continue;
    }
    if (!result.ok()) {
      ++failed;
      std::printf("%s: FAIL (%llu events)\n", path.c_str(), static_cast<unsigned long long>(events));
      for (const std::string& e : result.errors) std::printf("  %s\n", e.c_str());
    } else if (!quiet) {
      std::printf("%s: OK (%llu events%s)\n", path.c_str(), static_cast<unsigned long long>(events),
                  result.strict ? "" : ", not a libprof trace");
    }
    if (!quiet) {
      for (const std::string& w : result.warnings) std::printf("  warning: %s\n", w.c_str());
    }
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}

}  // namespace prof::tool
