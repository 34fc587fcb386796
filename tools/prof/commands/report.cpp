// `prof report TRACE|DIR [-o FILE] [--stacks]`: the report page (or folded
// stacks) from saved traces, with the code the agent's writer runs.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>

#include "exporters/common/compact_window.h"
#include "exporters/common/window_index.h"
#include "exporters/files/atomic_file.h"
#include "exporters/report/report.h"
#include "exporters/summary/summary.h"
#include "tools/prof/commands/commands.h"
#include "tools/prof/job/clock_alignment.h"
#include "tools/prof/job/job_analysis.h"
#include "tools/prof/job/job_render.h"
#include "tools/prof/job/rank_events.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/trace/trace_to_window.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof report TRACE|DIR [-o FILE] [--stacks] [--max-unpacked-mb N]

Writes the report page of saved traces: one self-contained HTML file (no
network, no other file) with the overview and findings, the step-time and
GPU idle breakdowns, a timeline, the kernel, CUDA API and memory tables,
GPU time by Python call site with flame graphs, and memory. TRACE is any
trace libprof reads: its own (.pt.trace.json[.gz]), a `prof merge` output
(one tab per rank), or torch.profiler's. DIR: every .pt.trace.json[.gz] in
it, one tab each (a job's ranks, a run's windows).

  -o FILE               where to write (default: TRACE's name with
                        .report.html, or DIR/report.html)
  --stacks              write folded stacks instead ("frame;...;kernel <ns>":
                        kernel time by Python stack, for flamegraph.pl,
                        speedscope, inferno); default name .stacks.txt
  --max-unpacked-mb N   refuse a file larger than N MB once gunzipped
                        (default 16384)

Exit status 0, 1 when an input could not be read or the output written,
2 for bad arguments.
)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string BaseName(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The trace's name without its extension: "a/b.pt.trace.json.gz" -> "a/b".
std::string Stem(const std::string& path) {
  for (const char* ext : {".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json", ".gz"}) {
    if (EndsWith(path, ext)) return path.substr(0, path.size() - std::string(ext).size());
  }
  return path;
}

bool IsDirectory(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The traces in a directory, by name.
std::vector<std::string> TracesIn(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name[0] != '.' && (EndsWith(name, ".pt.trace.json") || EndsWith(name, ".pt.trace.json.gz"))) {
      out.push_back(dir + (EndsWith(dir, "/") ? "" : "/") + name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

struct ReportOptions {
  std::string input, out;
  bool stacks = false;
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
};

// 0, or the exit status for bad arguments (having said why).
int ParseArgs(const Args& args, ReportOptions* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "prof report: %s needs a file name\n", args[i].c_str());
        return 2;
      }
      o->out = args[++i];
    } else if (args[i] == "--stacks") {
      o->stacks = true;
    } else if (args[i] == "--max-unpacked-mb") {
      if (i + 1 >= args.size() || !ParseMegabytes(args[i + 1], &o->max_unpacked)) {
        std::fprintf(stderr, "prof report: --max-unpacked-mb needs a whole number of MB\n");
        return 2;
      }
      ++i;
    } else if (o->input.empty()) {
      o->input = args[i];
    } else {
      std::fprintf(stderr, "prof report: one trace or directory, not '%s' too\n%s", args[i].c_str(), kHelp);
      return 2;
    }
  }
  if (o->input.empty()) {
    std::fprintf(stderr, "prof report: no trace given\n%s", kHelp);
    return 2;
  }
  return 0;
}

// What the windows read become: the page's parts, or the stacks' lines.
struct ReportParts {
  std::vector<std::string> windows;
  std::string folded;
  size_t count = 0;
  int status = 0;
};

// "label;<line>" for each line of folded stacks.
std::string Prefixed(const std::string& label, const std::string& lines) {
  std::string prefixed;
  for (size_t at = 0; at < lines.size();) {
    size_t nl = lines.find('\n', at);
    prefixed += label + ";" + lines.substr(at, nl - at + 1);
    at = nl + 1;
  }
  return prefixed;
}

// The windows of the trace at `path` into `parts`; `several`: the report
// has more than one input file.
void AddWindows(const std::string& path, bool dir, bool several, const ReportOptions& o, ReportParts* parts) {
  std::vector<CompactWindow> read;
  std::string error;
  bool ok = false;
  try {
    ok = ReadWindows(path, o.max_unpacked, &read, &error);
  } catch (const std::exception& e) {
    error = path + ": " + e.what();
  }
  if (!ok) {
    std::fprintf(stderr, "prof report: %s\n", error.c_str());
    parts->status = 1;
    return;
  }
  for (size_t i = 0; i < read.size(); ++i) {
    try {
      const CompactWindow& w = read[i];
      std::string label = dir ? BaseName(Stem(path)) : BaseName(path);
      if (read.size() > 1) label = w.meta.rank_known ? "rank " + std::to_string(w.meta.rank) : label + " #" + std::to_string(i);
      WindowIndex index(w);
      if (o.stacks) {
        std::string lines = FoldedStacks(w, index);
        // Several windows: each line starts with the window's name.
        parts->folded += several || read.size() > 1 ? Prefixed(label, lines) : lines;
      } else {
        Summary summary = ComputeSummary(w);
        parts->windows.push_back(ReportWindowJson(w, index, summary, label, path));
      }
      ++parts->count;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "prof report: %s: %s\n", path.c_str(), e.what());
      parts->status = 1;
    }
    read[i] = CompactWindow();
  }
}

// A job (a merged trace, or a directory of several ranks' traces): prof
// merge's job analysis, on the same events it reads; "" when the inputs
// hold one rank.
std::string JobViewJson(const std::vector<std::string>& paths, uint64_t max_unpacked) {
  std::vector<RankEvents> ranks;
  for (const std::string& path : paths) {
    std::string error;
    std::unique_ptr<ByteSource> source = OpenFileSource(path, max_unpacked, &error);
    if (!source) continue;
    size_t first = ranks.size();
    ReadJobRanks(source.get(), &ranks);
    for (size_t i = first; i < ranks.size(); ++i) ranks[i].path = path;
  }
  if (ranks.size() < 2) return "";
  return JobJson(AnalyzeJob(ranks, AlignClocks(ranks)));
}

}  // namespace

int ReportCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  ReportOptions o;
  if (int status = ParseArgs(args, &o)) return status;
  const std::string& input = o.input;
  bool dir = IsDirectory(input);
  std::vector<std::string> paths = dir ? TracesIn(input) : std::vector<std::string>{input};
  if (paths.empty()) {
    std::fprintf(stderr, "prof report: no .pt.trace.json[.gz] in %s\n", input.c_str());
    return 1;
  }
  std::string out = o.out;
  if (out.empty()) {
    std::string base = dir ? input + (EndsWith(input, "/") ? "" : "/") : Stem(input) + ".";
    out = base + (o.stacks ? "stacks.txt" : "report.html");
  }
  ReportParts parts;
  for (const std::string& path : paths) AddWindows(path, dir, paths.size() > 1, o, &parts);
  if (parts.count == 0) return 1;
  std::string job_json = !o.stacks && parts.count > 1 ? JobViewJson(paths, o.max_unpacked) : "";
  std::string title = BaseName(dir ? input : Stem(input));
  std::string bytes = o.stacks ? parts.folded : RenderReportPage(title, parts.windows, job_json);
  // Whole or not at all: written under a temporary name, then renamed.
  AtomicFile file(PosixFileSystem(), out);
  if (!(file.Open() && file.Append(bytes.data(), bytes.size()) && file.Commit())) {
    std::fprintf(stderr, "prof report: %s\n", CannotWrite(out, file.error()).c_str());
    return 1;
  }
  std::printf("%s: %s of %zu window%s\n", out.c_str(), o.stacks ? "folded stacks" : "report", parts.count,
              parts.count == 1 ? "" : "s");
  return parts.status;
}

}  // namespace prof::tool
