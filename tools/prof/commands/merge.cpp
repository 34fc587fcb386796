// `prof merge FILE|DIR... -o OUT`
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>

#include "exporters/files/atomic_file.h"
#include "exporters/files/gzip_sink.h"
#include "tools/prof/commands/commands.h"
#include "tools/prof/job/facts_file.h"
#include "tools/prof/job/job_render.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/merge/merge.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof merge FILE|DIR... -o OUT [--ranks R,...]
       prof merge --summary-only FILE|DIR... [-o SUMMARY]

Merges several ranks' traces into one timeline and writes the job summary
beside it. A directory stands for the traces in it (*.pt.trace.json and
*.pt.trace.json.gz, the merged output itself left out); traces copied from
several nodes merge the same way.

The timeline: every event is kept, each input's processes form a group
labelled "rank R" (pids renumbered into a block per input; an input without
a rank is given none: it is labelled by its program and pid, "python3 pid
4242", or by its file name), flow ids stay distinct, times share the earliest baseTimeNanoseconds, and each rank's
clock is aligned to the others' on the collectives they share: the same
collective (communicator, collective, sequence number) ends at nearly the
same instant on every rank, so a rank's offset is the median difference of
those end times; the residual (how far one collective's ends still lie
apart) is reported. OUT ending in .gz is gzip-compressed. Events whose
pid, tid, ts or dur has the wrong type (`prof validate`, rule field-types)
cannot be placed and are left out; the output says how many and names the
first. The result is validated (as `prof validate`) before it is written.

The job summary (printed, and written to OUT's stem + .summary.txt): per
step and rank, the step time, compute and communication (GPU time of each
kind of kernel), the time spent waiting in collectives for the last rank to
arrive, and the longest gap between the host's CUDA calls; per rank, how
often it arrived last and what that cost every other rank per step; then
one line naming the straggler with its evidence, or saying that no rank
stands out. Traces that carry no rank (processes started without a
launcher's rank) are processes there, named as in the timeline ("python3
pid 4242"), and the merged trace then claims no distributedInfo.

Exit status 0 when the merge was written and is valid, 1 otherwise.

  --summary-only        the job summary alone, no merged timeline: printed,
                        and written to SUMMARY when -o is given. Each rank of
                        a multi-rank job writes beside its trace the facts the
                        summary needs (<stem>.job.json, a few numbers per step
                        and per collective); a directory stands for those and
                        for the traces that have none, so a large job is
                        summarized without reading its traces. FILE may be
                        either.
  --ranks R[,R...]      the timeline holds only these ranks (say the
                        straggler and its neighbours): a large job's merged
                        timeline stays a size a viewer opens; the job summary
                        still covers every input
  --max-unpacked-mb N   refuse an input larger than N MB once gunzipped
                        (default 16384)

Inputs are streamed (read twice: their headers and what the job summary
needs, then each event rewritten, validated and written to a temporary file
that is renamed to OUT once the merge is complete), so memory does not grow
with their size beyond what validation and the job summary hold. Every
input that cannot be read is named, and then nothing is written.
)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsTraceName(const std::string& name) {
  return EndsWith(name, ".pt.trace.json") || EndsWith(name, ".pt.trace.json.gz");
}

std::string TraceStem(const std::string& name) {
  for (const char* suffix : {".pt.trace.json.gz", ".pt.trace.json", ".job.json"}) {
    if (EndsWith(name, suffix)) return name.substr(0, name.size() - std::string(suffix).size());
  }
  return name;
}

// The traces in `dir`, sorted, or false when it is not a readable directory.
// With `facts`, a trace's facts file stands for it where there is one.
bool TracesIn(const std::string& dir, bool facts, std::vector<std::string>* paths) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  std::vector<std::string> traces, facts_files;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (IsTraceName(name)) traces.push_back(name);
    if (facts && IsFactsFileName(name)) facts_files.push_back(name);
  }
  closedir(d);
  std::vector<std::string> found = facts_files;
  for (const std::string& t : traces) {
    bool has_facts = std::any_of(facts_files.begin(), facts_files.end(),
                                 [&](const std::string& f) { return TraceStem(f) == TraceStem(t); });
    if (!has_facts) found.push_back(t);
  }
  for (std::string& name : found) name = dir + (EndsWith(dir, "/") ? "" : "/") + name;
  std::sort(found.begin(), found.end());
  paths->insert(paths->end(), found.begin(), found.end());
  return true;
}

// OUT without .gz, .json and .pt.trace, plus .summary.txt.
std::string SummaryPathFor(std::string out) {
  for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
    if (EndsWith(out, suffix)) out.resize(out.size() - std::string(suffix).size());
  }
  return out + ".summary.txt";
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// 0, or the exit status for bad arguments (having said why).
// "2,5,7" into `ranks`; false on anything else.
bool ParseRanks(const std::string& text, std::vector<int>* ranks) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos) return false;
    ranks->push_back(std::stoi(item));
    start = comma + 1;
  }
  return !ranks->empty();
}

int ParseArgs(const Args& args, std::string* out, uint64_t* max_unpacked, bool* summary_only,
              std::vector<int>* ranks, std::vector<std::string>* inputs) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--ranks") {
      if (i + 1 >= args.size() || !ParseRanks(args[i + 1], ranks)) {
        std::fprintf(stderr, "prof merge: --ranks needs a list of ranks, like 2 or 0,2,5\n");
        return 2;
      }
      ++i;
      continue;
    }
    if (args[i] == "--summary-only") {
      *summary_only = true;
      continue;
    }
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "prof merge: %s needs a file name\n", args[i].c_str());
        return 2;
      }
      *out = args[++i];
      continue;
    }
    if (args[i] == "--max-unpacked-mb") {
      if (i + 1 >= args.size() || !ParseMegabytes(args[i + 1], max_unpacked)) {
        std::fprintf(stderr, "prof merge: --max-unpacked-mb needs a whole number of MB\n");
        return 2;
      }
      ++i;
      continue;
    }
    inputs->push_back(args[i]);
  }
  return 0;
}

// The traces the inputs name (a directory: the traces in it, an earlier
// merge into `out` left out). False when a directory cannot be read.
bool CollectSources(const std::vector<std::string>& inputs, const std::string& out, uint64_t max_unpacked,
                    bool facts, std::vector<MergeSource>* sources) {
  for (const std::string& input : inputs) {
    struct stat st;
    std::vector<std::string> paths;
    if (stat(input.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      if (!TracesIn(input, facts, &paths)) {
        std::fprintf(stderr, "prof merge: %s: cannot read the directory\n", input.c_str());
        return false;
      }
      if (paths.empty()) std::fprintf(stderr, "prof merge: %s: no *.pt.trace.json[.gz] in it\n", input.c_str());
    } else {
      paths.push_back(input);
    }
    for (const std::string& path : paths) {
      if (!out.empty() && SameFile(path, out) && input != path) continue;  // an earlier merge in the directory
      sources->push_back({path, [path, max_unpacked](std::string* error) {
                            return OpenFileSource(path, max_unpacked, error);
                          }});
    }
  }
  return true;
}

// The merged trace, written under a temporary name and renamed into place
// once whole and validated: the output never exists half-written, and an
// input that fails on a later pass leaves nothing behind. False with every
// line of the error said.
bool WriteMerge(const std::vector<MergeSource>& sources, const std::string& out, const std::vector<int>& ranks,
                MergeReport* report) {
  AtomicFile file(PosixFileSystem(), out);
  std::unique_ptr<GzipSink> zipped;
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
      ok = StreamMerge(sources, *sink, report, &error, validated, ranks);
      if (!ok && error.empty()) error = CannotWrite(out, file.error());
    } else {
      error = CannotWrite(out, file.error());
    }
    ok = ok && sink->Finish() && file.Commit();
    if (!ok && error.empty()) error = CannotWrite(out, file.error());
  } catch (const std::exception& e) {
    ok = false;
    error = e.what();
  }
  if (ok) return true;
  file.Abort();
  for (size_t start = 0; start <= error.size();) {
    size_t nl = error.find('\n', start);
    if (nl == std::string::npos) nl = error.size();
    std::fprintf(stderr, "prof merge: %s\n", error.substr(start, nl - start).c_str());
    start = nl + 1;
  }
  return false;
}

// Writes `text` to `path` atomically; false having said why.
bool WriteSummary(const std::string& path, const std::string& text) {
  AtomicFile file(PosixFileSystem(), path);
  if (file.Open() && file.Append(text.data(), text.size()) && file.Commit()) return true;
  std::fprintf(stderr, "prof merge: %s\n", CannotWrite(path, file.error()).c_str());
  file.Abort();
  return false;
}

// `--summary-only`: the job summary from the inputs' facts, printed and,
// with -o, written.
int SummaryOnly(const std::vector<MergeSource>& sources, const std::string& out) {
  if (sources.empty()) {
    std::fprintf(stderr, "prof merge: need input files\n%s", kHelp);
    return 2;
  }
  JobSummary job;
  std::string error;
  if (!SummarizeJob(sources, &job, &error)) {
    for (size_t start = 0; start <= error.size();) {
      size_t nl = error.find('\n', start);
      if (nl == std::string::npos) nl = error.size();
      std::fprintf(stderr, "prof merge: %s\n", error.substr(start, nl - start).c_str());
      start = nl + 1;
    }
    return 1;
  }
  std::string summary = RenderJobSummary(job);
  std::fputs(summary.c_str(), stdout);
  if (out.empty()) return 0;
  if (!WriteSummary(out, summary)) return 1;
  std::printf("%s: the job summary\n", out.c_str());
  return 0;
}

}  // namespace

int MergeCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string out;
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
  bool summary_only = false;
  std::vector<int> ranks;
  std::vector<std::string> inputs;
  if (int status = ParseArgs(args, &out, &max_unpacked, &summary_only, &ranks, &inputs)) return status;
  std::vector<MergeSource> sources;
  if (!CollectSources(inputs, out, max_unpacked, summary_only, &sources)) return 1;
  if (summary_only) return SummaryOnly(sources, out);
  if (out.empty() || sources.empty()) {
    std::fprintf(stderr, "prof merge: need input files and -o OUT\n%s", kHelp);
    return 2;
  }
  MergeReport report;
  if (!WriteMerge(sources, out, ranks, &report)) return 1;
  // The job summary, beside the merged trace.
  std::string summary = RenderJobSummary(report.job);
  std::string summary_path = SummaryPathFor(out);
  WriteSummary(summary_path, summary);
  std::fputs(summary.c_str(), stdout);
  std::printf("\n%s: %zu inputs, %llu input events, %llu events written%s\n", out.c_str(), sources.size(),
              static_cast<unsigned long long>(report.input_events),
              static_cast<unsigned long long>(report.events_written), report.validation.ok() ? "" : " (INVALID, see above)");
  if (report.skipped.count) std::printf("%s: %s\n", out.c_str(), report.skipped.Sentence().c_str());
  std::printf("%s: the job summary\n", summary_path.c_str());
  return report.validation.ok() ? 0 : 1;
}

}  // namespace prof::tool
