// `prof report TRACE|DIR [-o FILE] [--stacks]`: the report page (or folded
// stacks) from saved traces, with the code the agent's writer runs.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "exporters/files/atomic_file.h"
#include "exporters/common/compact_window.h"
#include "exporters/report/report.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"
#include "tools/prof/commands.h"
#include "tools/prof/job.h"
#include "tools/prof/json_stream.h"
#include "tools/prof/merge.h"
#include "tools/prof/trace_to_window.h"

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

// What `prof merge`'s job analysis reads (tools/prof/job.h), from one
// rank's trace or from a merged trace, whose events are split back into
// their ranks by pid block (times there are already on one clock).
class JobInput : public TraceStreamHandler {
 public:
  explicit JobInput(std::vector<RankEvents>* ranks) : ranks_(ranks) {}

  void Member(std::string_view key, const JsonValue& v) override {
    if (key == "baseTimeNanoseconds") {
      v.ToInt64(&base_ns_);
    } else if (key == "distributedInfo" && v.is_object()) {
      int64_t rank = 0;
      if (v.Get("rank").ToInt64(&rank) && rank >= 0 && rank <= INT32_MAX) rank_ = static_cast<int>(rank);
    } else if (key == "libprof_merge" && v.is_object()) {
      JsonValue inputs = v.Get("inputs");
      for (JsonValue in = inputs.first(); in.valid(); in = inputs.next(in)) {
        int64_t rank = 0, offset = 0;
        in.Get("rank").ToInt64(&rank);
        in.Get("clock_offset_ns").ToInt64(&offset);
        merged_ranks_.push_back(static_cast<int>(rank));
        merged_offsets_.push_back(offset);
      }
      merged_ = true;
    }
  }
  void EventsBegin(bool) override {
    if (merged_) {
      first_ = ranks_->size();
      for (int rank : merged_ranks_) {
        ranks_->emplace_back();
        ranks_->back().rank = rank;
      }
    } else {
      first_ = ranks_->size();
      ranks_->emplace_back();
    }
  }
  void Event(uint64_t, const JsonValue& e) override {
    size_t slot = 0;
    if (merged_) {
      // The merge numbers input k's pids (k + 1) * kMergePidBlock + pid,
      // and a pid that was a string "rank R: <pid>".
      JsonValue pid = e.Get("pid");
      int64_t n = 0;
      if (pid.ToInt64(&n) && n >= kMergePidBlock) {
        slot = static_cast<size_t>(n / kMergePidBlock - 1);
      } else if (pid.is_string() && pid.str().rfind("rank ", 0) == 0) {
        int rank = std::atoi(std::string(pid.str().substr(5)).c_str());
        slot = merged_ranks_.size();
        for (size_t k = 0; k < merged_ranks_.size(); ++k) {
          if (merged_ranks_[k] == rank) slot = k;
        }
      } else {
        return;
      }
      if (slot >= merged_ranks_.size()) return;
    }
    ReadJobEvent(e, &(*ranks_)[first_ + slot]);
  }
  void EventsEnd(uint64_t) override {
    if (merged_) {
      // The merge took each rank's clock offset out of its times: put it
      // back, so the analysis finds (and reports) the same offsets.
      for (size_t k = 0; k < merged_offsets_.size() && first_ + k < ranks_->size(); ++k) {
        ShiftRankEvents(&(*ranks_)[first_ + k], merged_offsets_[k]);
      }
      return;
    }
    if (first_ >= ranks_->size()) return;
    RankEvents& r = (*ranks_)[first_];
    r.rank = rank_ >= 0 ? rank_ : static_cast<int>(first_);
    ShiftRankEvents(&r, base_ns_);
  }

 private:
  std::vector<RankEvents>* ranks_;
  size_t first_ = 0;
  int64_t base_ns_ = 0;
  int rank_ = -1;
  bool merged_ = false;
  std::vector<int> merged_ranks_;
  std::vector<int64_t> merged_offsets_;
};

void Append(std::string* out, const char* key, double v, bool comma = true) {
  *out += std::string(comma ? "," : "") + "\"" + key + "\":";
  AppendJsonDouble(out, v);
}

// The job view's data: prof merge's job summary (its text, and its numbers
// for the heat map and the per-rank chart).
std::string JobJson(const JobSummary& job) {
  std::string out = "{\"text\":";
  AppendJsonString(&out, RenderJobSummary(job));
  out += ",\"labels\":[";
  for (size_t i = 0; i < job.labels.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(&out, job.labels[i]);
  }
  out += "],\"steps\":[";
  for (size_t i = 0; i < job.step_numbers.size(); ++i) out += (i ? "," : "") + std::to_string(job.step_numbers[i]);
  out += std::string("],\"by_number\":") + (job.steps_by_number ? "true" : "false") + ",\"cells\":[";
  for (size_t row = 0; row < job.cells.size(); ++row) {
    out += row ? ",[" : "[";
    for (size_t i = 0; i < job.cells[row].size(); ++i) {
      const JobCell& c = job.cells[row][i];
      if (i) out += ',';
      if (!c.present) {
        out += "null";
        continue;
      }
      out += "[" + std::to_string(c.step_ns) + "," + std::to_string(c.compute_ns) + "," + std::to_string(c.comm_ns) +
             "," + std::to_string(c.wait_ns) + "," + std::to_string(c.gap_ns) + "," + std::to_string(c.syncs) + "," +
             std::to_string(c.cost_ns) + "]";
    }
    out += "]";
  }
  out += "],\"totals\":[";
  for (size_t i = 0; i < job.totals.size(); ++i) {
    const JobRankTotals& t = job.totals[i];
    out += (i ? ",{" : "{") + std::string("\"rank\":") + std::to_string(t.rank) +
           ",\"arrived_last\":" + std::to_string(t.arrived_last);
    Append(&out, "cost_per_rank_step", t.cost_per_rank_step_ns);
    Append(&out, "step", t.mean_step_ns);
    Append(&out, "compute", t.mean_compute_ns);
    Append(&out, "comm", t.mean_comm_ns);
    Append(&out, "wait", t.mean_wait_ns);
    Append(&out, "gap", t.mean_gap_ns);
    Append(&out, "overlap", t.comm_overlap_percent);
    out += "}";
  }
  out += "],\"straggler\":" + std::to_string(job.straggler) + ",\"straggler_line\":";
  AppendJsonString(&out, job.straggler_line);
  out += ",\"evidence\":[";
  for (size_t i = 0; i < job.evidence.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(&out, job.evidence[i]);
  }
  out += "]}";
  return out;
}

}  // namespace

int ReportCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string input, out;
  bool stacks = false;
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "prof report: %s needs a file name\n", args[i].c_str());
        return 2;
      }
      out = args[++i];
    } else if (args[i] == "--stacks") {
      stacks = true;
    } else if (args[i] == "--max-unpacked-mb") {
      if (i + 1 >= args.size() || !ParseMegabytes(args[i + 1], &max_unpacked)) {
        std::fprintf(stderr, "prof report: --max-unpacked-mb needs a whole number of MB\n");
        return 2;
      }
      ++i;
    } else if (input.empty()) {
      input = args[i];
    } else {
      std::fprintf(stderr, "prof report: one trace or directory, not '%s' too\n%s", args[i].c_str(), kHelp);
      return 2;
    }
  }
  if (input.empty()) {
    std::fprintf(stderr, "prof report: no trace given\n%s", kHelp);
    return 2;
  }
  bool dir = IsDirectory(input);
  std::vector<std::string> paths = dir ? TracesIn(input) : std::vector<std::string>{input};
  if (paths.empty()) {
    std::fprintf(stderr, "prof report: no .pt.trace.json[.gz] in %s\n", input.c_str());
    return 1;
  }
  if (out.empty()) {
    std::string base = dir ? input + (EndsWith(input, "/") ? "" : "/") : Stem(input) + ".";
    out = base + (stacks ? "stacks.txt" : "report.html");
  }

  int status = 0;
  std::vector<std::string> windows;  // the page's parts, or
  std::string folded;                // the stacks' lines
  size_t count = 0;
  for (const std::string& path : paths) {
    std::vector<CompactWindow> read;
    std::string error;
    bool ok = false;
    try {
      ok = ReadWindows(path, max_unpacked, &read, &error);
    } catch (const std::exception& e) {
      error = path + ": " + e.what();
    }
    if (!ok) {
      std::fprintf(stderr, "prof report: %s\n", error.c_str());
      status = 1;
      continue;
    }
    for (size_t i = 0; i < read.size(); ++i) {
      try {
        const CompactWindow& w = read[i];
        std::string label = dir ? BaseName(Stem(path)) : BaseName(path);
        if (read.size() > 1) label = w.meta.rank_known ? "rank " + std::to_string(w.meta.rank) : label + " #" + std::to_string(i);
        WindowIndex index(w);
        if (stacks) {
          std::string lines = FoldedStacks(w, index);
          if (paths.size() > 1 || read.size() > 1) {
            // Several windows: each line starts with the window's name.
            std::string prefixed;
            for (size_t at = 0; at < lines.size();) {
              size_t nl = lines.find('\n', at);
              prefixed += label + ";" + lines.substr(at, nl - at + 1);
              at = nl + 1;
            }
            lines.swap(prefixed);
          }
          folded += lines;
        } else {
          Summary summary = ComputeSummary(w);
          windows.push_back(ReportWindowJson(w, index, summary, label, path));
        }
        ++count;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "prof report: %s: %s\n", path.c_str(), e.what());
        status = 1;
      }
      read[i] = CompactWindow();
    }
  }
  if (count == 0) return 1;
  // A job (a merged trace, or a directory of several ranks' traces): prof
  // merge's job analysis, on the same events it reads.
  std::string job_json;
  if (!stacks && count > 1) {
    std::vector<RankEvents> ranks;
    for (const std::string& path : paths) {
      std::string error;
      std::unique_ptr<ByteSource> source = OpenFileSource(path, max_unpacked, &error);
      if (!source) continue;
      JobInput handler(&ranks);
      StreamTrace(source.get(), &handler);
    }
    if (ranks.size() > 1) {
      for (size_t i = 0; i < ranks.size(); ++i) ranks[i].path = paths.size() == 1 ? paths[0] : paths[i];
      JobSummary job = AnalyzeJob(ranks, AlignClocks(ranks));
      job_json = JobJson(job);
    }
  }
  std::string title = BaseName(dir ? input : Stem(input));
  std::string bytes = stacks ? folded : RenderReportPage(title, windows, job_json);
  // Whole or not at all: written under a temporary name, then renamed.
  AtomicFile file(PosixFileSystem(), out);
  if (!(file.Open() && file.Append(bytes.data(), bytes.size()) && file.Commit())) {
    std::fprintf(stderr, "prof report: %s\n", file.error().empty() ? ("writing " + out + " failed").c_str()
                                                                    : file.error().c_str());
    return 1;
  }
  std::printf("%s: %s of %zu window%s\n", out.c_str(), stacks ? "folded stacks" : "report", count,
              count == 1 ? "" : "s");
  return status;
}

}  // namespace prof::tool
