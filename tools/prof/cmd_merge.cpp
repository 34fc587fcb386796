// `prof merge FILE... -o OUT`
#include <cstdio>
#include <exception>
#include <memory>

#include "exporters/atomic_file.h"
#include "exporters/gzip_sink.h"
#include "tools/prof/commands.h"
#include "tools/prof/merge.h"
#include "tools/prof/json_stream.h"
#include "tools/prof/validate.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof merge FILE... -o OUT

Merges several ranks' traces into one timeline: every event is kept, each
input's processes form a group labelled "rank R" (pids renumbered into a
block per input), flow ids stay distinct, and times share the earliest
baseTimeNanoseconds. OUT ending in .gz is gzip-compressed. Events whose
pid, tid, ts or dur has the wrong type (`prof validate`, rule field-types)
cannot be placed and are left out; the output says how many and names the
first. The result is
validated (as `prof validate`) before it is written; exit status 0 when it
was written and is valid, 1 otherwise.

  --max-unpacked-mb N   refuse an input larger than N MB once gunzipped
                        (default 16384)

Inputs are streamed (read twice: their headers, then each event rewritten,
validated and written to a temporary file that is renamed to OUT once the
merge is complete), so memory does not grow with their size beyond what
validation holds. Every input that cannot be read is named, and then
nothing is written.
)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int MergeCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string out;
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
  std::vector<MergeSource> sources;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "prof merge: %s needs a file name\n", args[i].c_str());
        return 2;
      }
      out = args[++i];
      continue;
    }
    if (args[i] == "--max-unpacked-mb") {
      if (i + 1 >= args.size() || !ParseMegabytes(args[i + 1], &max_unpacked)) {
        std::fprintf(stderr, "prof merge: --max-unpacked-mb needs a whole number of MB\n");
        return 2;
      }
      ++i;
      continue;
    }
    std::string path = args[i];
    sources.push_back({path, [path, &max_unpacked](std::string* error) {
                         return OpenFileSource(path, max_unpacked, error);
                       }});
  }
  if (out.empty() || sources.empty()) {
    std::fprintf(stderr, "prof merge: need input files and -o OUT\n%s", kHelp);
    return 2;
  }
  // Written under a temporary name and renamed into place once whole and
  // validated: the output never exists half-written, and an input that
  // fails on a later pass leaves nothing behind.
  AtomicFile file(PosixFileSystem(), out);
  std::unique_ptr<GzipSink> zipped;
  MergeReport report;
  std::string error;
  bool ok = false;
  try {
    ok = file.Open();
    ByteSink* sink = &file;
    if (ok && EndsWith(out, ".gz")) {
      zipped = std::make_unique<GzipSink>(file);
      sink = zipped.get();
    }
    auto validated = [](const MergeReport& r) {
      for (const std::string& e : r.validation.errors) {
        std::fprintf(stderr, "prof merge: invalid result: %s\n", e.c_str());
      }
      return true;  // written all the same, and the exit status says it is invalid
    };
    if (ok) {
      ok = StreamMerge(sources, *sink, &report, &error, validated);
      if (!ok && error.empty()) error = file.error();
    } else {
      error = file.error();
    }
    ok = ok && sink->Finish() && file.Commit();
    if (!ok && error.empty()) error = file.error().empty() ? "writing " + out + " failed" : file.error();
  } catch (const std::exception& e) {
    ok = false;
    error = e.what();
  }
  if (!ok) {
    file.Abort();
    for (size_t start = 0; start <= error.size();) {
      size_t nl = error.find('\n', start);
      if (nl == std::string::npos) nl = error.size();
      std::fprintf(stderr, "prof merge: %s\n", error.substr(start, nl - start).c_str());
      start = nl + 1;
    }
    return 1;
  }
  std::printf("%s: %zu inputs, %llu input events, %llu events written%s\n", out.c_str(), sources.size(),
              static_cast<unsigned long long>(report.input_events),
              static_cast<unsigned long long>(report.events_written), report.validation.ok() ? "" : " (INVALID, see above)");
  if (report.skipped.count) std::printf("%s: %s\n", out.c_str(), report.skipped.Sentence().c_str());
  return report.validation.ok() ? 0 : 1;
}

}  // namespace prof::tool
