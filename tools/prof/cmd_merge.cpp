// `prof merge FILE... -o OUT`
#include <cstdio>

#include "exporters/atomic_file.h"
#include "exporters/gzip_sink.h"
#include "tools/prof/commands.h"
#include "tools/prof/merge.h"
#include "tools/prof/trace_io.h"
#include "tools/prof/validate.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof merge FILE... -o OUT

Merges several ranks' traces into one timeline: every event is kept, each
input's processes form a group labelled "rank R" (pids renumbered into a
block per input), flow ids stay distinct, and times share the earliest
baseTimeNanoseconds. OUT ending in .gz is gzip-compressed. The result is
validated (as `prof validate`) before it is written; exit status 0 when it
was written and is valid, 1 otherwise.
)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool WriteJson(const nlohmann::json& doc, const std::string& path, std::string* error) {
  std::string text = doc.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  text += '\n';
  AtomicFile file(PosixFileSystem(), path);
  bool ok = file.Open();
  if (ok && EndsWith(path, ".gz")) {
    GzipSink zipped(file);
    ok = zipped.Append(text.data(), text.size()) && zipped.Finish();
  } else if (ok) {
    ok = file.Append(text.data(), text.size());
  }
  ok = ok && file.Commit();
  if (!ok) *error = file.error().empty() ? "writing " + path + " failed" : file.error();
  return ok;
}

}  // namespace

int MergeCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string out;
  std::vector<MergeInput> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "prof merge: %s needs a file name\n", args[i].c_str());
        return 2;
      }
      out = args[++i];
      continue;
    }
    inputs.push_back({args[i], {}});
  }
  if (out.empty() || inputs.empty()) {
    std::fprintf(stderr, "prof merge: need input files and -o OUT\n%s", kHelp);
    return 2;
  }
  size_t total = 0;
  for (MergeInput& in : inputs) {
    std::string error;
    if (!LoadTrace(in.path, &in.trace, &error)) {
      std::fprintf(stderr, "prof merge: %s\n", error.c_str());
      return 1;
    }
    if (in.trace.contains("traceEvents")) total += in.trace["traceEvents"].size();
  }
  nlohmann::json merged;
  std::string error;
  if (!MergeTraces(&inputs, &merged, &error)) {
    std::fprintf(stderr, "prof merge: %s\n", error.c_str());
    return 1;
  }
  ValidateResult result = ValidateTrace(merged);
  for (const std::string& e : result.errors) std::fprintf(stderr, "prof merge: invalid result: %s\n", e.c_str());
  if (!WriteJson(merged, out, &error)) {
    std::fprintf(stderr, "prof merge: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %zu inputs, %zu input events, %zu events written%s\n", out.c_str(), inputs.size(), total,
              merged["traceEvents"].size(), result.ok() ? "" : " (INVALID, see above)");
  return result.ok() ? 0 : 1;
}

}  // namespace prof::tool
