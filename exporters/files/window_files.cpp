#include "exporters/files/window_files.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>
#include <optional>

#include "exporters/files/atomic_file.h"
#include "exporters/trace/chrome_trace.h"
#include "exporters/files/gzip_sink.h"
#include "exporters/report/report.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"
#include "exporters/job/rank_facts.h"

namespace prof {
namespace {

// Variant 0 is the plain stem; 1.. add the writing process's pid (and a
// number): another process with the same PROF_NAME (a fork-based worker, a
// launcher's other children, an earlier run) already holds the plain name.
constexpr int kStemVariants = 10;

// Anything that is not surely missing counts as taken (a name we cannot
// look at is not one to write to).
bool Exists(FileSystem& fs, const std::string& path) { return fs.Access(path.c_str(), F_OK) == 0 || errno != ENOENT; }

// Gives file's bytes the name dir + stem(variant) + suffix, never replacing
// an existing file: on EEXIST the next variant is tried, and *variant says
// which one took.
bool CommitUnique(AtomicFile& file, const WindowMeta& meta, const std::string& dir, const std::string& suffix,
                  int* variant) {
  for (; *variant < kStemVariants; ++*variant) {
    if (file.CommitNewAs(dir + WindowFileStemVariant(meta, *variant) + suffix)) return true;
    if (!file.exists()) return false;
  }
  file.Abort();
  return false;
}

// The trace names itself inside ("traceName"), so a name lost at commit to a
// process racing for it (another of a launcher's children with the same
// PROF_NAME) means writing it again under the next variant's name.
bool WriteTrace(const Window& window, const WindowIndex& index, const std::string& dir, const std::string& suffix,
                int* variant, bool gzip, FileSystem& fs, std::string* error, RankEvents* job) {
  for (; *variant < kStemVariants; ++*variant) {
    std::string trace_name = WindowFileStemVariant(window.meta, *variant) + suffix;
    AtomicFile file(fs, dir + trace_name);
    bool ok = file.Open();
    if (job != nullptr) *job = RankEvents{};
    if (ok) {
      if (gzip) {
        GzipSink zipped(file);
        ok = WriteChromeTrace(window, index, trace_name, zipped, job);
      } else {
        ok = WriteChromeTrace(window, index, trace_name, file, job);
      }
    }
    if (ok && file.CommitNew()) return true;
    if (ok && file.exists()) continue;  // taken since we looked: the next name, written again
    *error = file.error().empty() ? "writing " + dir + trace_name + " failed" : file.error();
    return false;
  }
  *error = "writing " + dir + WindowFileStemVariant(window.meta, 0) + suffix + " failed (no free name)";
  return false;
}

// A text file (summary, report page, folded stacks) under the window's stem.
bool WriteTextFile(const WindowMeta& meta, const std::string& dir, const std::string& suffix, const std::string& text,
                   int* variant, FileSystem& fs, std::string* error) {
  AtomicFile file(fs, dir + WindowFileStemVariant(meta, *variant) + suffix);
  bool ok = file.Open() && file.Append(text.data(), text.size()) && CommitUnique(file, meta, dir, suffix, variant);
  if (!ok) *error = file.error().empty() ? "writing " + dir + suffix + " failed (no free name)" : file.error();
  return ok;
}

// What the debug log's file times are read from.
uint64_t SteadyNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

std::string WindowFileStem(const WindowMeta& meta) { return WindowFileStemVariant(meta, 0); }

std::string WindowFileStemVariant(const WindowMeta& meta, int variant) {
  std::string name = meta.name.empty() ? meta.hostname + "_" + std::to_string(meta.pid) : meta.name;
  for (char& c : name) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (variant > 0) name += "_pid" + std::to_string(meta.pid);
  if (variant > 1) name += "_" + std::to_string(variant);
  if (meta.rank_known) name += "_rank" + std::to_string(meta.rank);
  return name + "." + std::to_string(meta.first_step);
}

bool WriteWindowFiles(const Window& window, const OutputOptions& options, FileSystem& fs, std::string* error,
                      std::vector<std::string>* written, FileTimes* times) {
  std::string scratch;
  if (error == nullptr) error = &scratch;
  error->clear();
  std::vector<std::string> unused;
  if (written == nullptr) written = &unused;
  try {
    std::string dir = options.output_dir.empty() ? "" : options.output_dir + "/";
    std::string trace_suffix = std::string(".pt.trace.json") + (options.gzip ? ".gz" : "");
    // The first variant whose names are all free (a race with another
    // process is settled at commit time: link(2) never replaces).
    int variant = 0;
    while (variant + 1 < kStemVariants &&
           ((options.chrome && Exists(fs, dir + WindowFileStemVariant(window.meta, variant) + trace_suffix)) ||
            (options.summary && Exists(fs, dir + WindowFileStemVariant(window.meta, variant) + ".summary.txt")) ||
            (options.html && Exists(fs, dir + WindowFileStemVariant(window.meta, variant) + ".report.html")) ||
            (options.stacks && Exists(fs, dir + WindowFileStemVariant(window.meta, variant) + ".stacks.txt")) ||
            (options.chrome && Exists(fs, dir + WindowFileStemVariant(window.meta, variant) + ".job.json")))) {
      ++variant;
    }
    bool ok = true;
    // One pass over every event builds it; every file shares it.
    std::optional<WindowIndex> index;
    if (options.chrome || options.summary || options.html || options.stacks) index.emplace(window);
    // A rank of a multi-rank job also writes what `prof merge` needs of its
    // trace for the job summary (exporters/job/rank_facts.h), taken as the
    // trace is written: a large job is summarized from these alone.
    std::optional<RankEvents> job;
    if (options.chrome && window.meta.rank_known && window.meta.world_size > 1) job.emplace();
    FileTimes scratch_times;
    if (times == nullptr) times = &scratch_times;
    uint64_t t0 = SteadyNs();
    if (options.chrome) {
      ok = WriteTrace(window, *index, dir, trace_suffix, &variant, options.gzip, fs, error, job ? &*job : nullptr);
    }
    times->trace_ns = SteadyNs() - t0;
    std::string trace_name = options.chrome && ok ? WindowFileStemVariant(window.meta, variant) + trace_suffix : "";
    if (!trace_name.empty()) written->push_back(dir + trace_name);
    // The others are still worth having when the trace failed (e.g. too big).
    // Each is placed under the stem variant's name it leaves in `variant`.
    auto note = [&](bool placed, const std::string& file_error, const char* suffix) {
      if (placed) written->push_back(dir + WindowFileStemVariant(window.meta, variant) + suffix);
      if (!placed && ok) *error = file_error;
      ok = ok && placed;
    };
    std::string file_error;
    if (job && ok) {
      RankFacts facts = SummarizeRank(*job);
      job.reset();
      facts.path = trace_name;
      facts.rank = window.meta.rank;
      facts.label = "rank " + std::to_string(window.meta.rank);
      note(WriteTextFile(window.meta, dir, ".job.json", RankFactsJson(facts), &variant, fs, &file_error), file_error,
           ".job.json");
    }
    if (options.summary || options.html) {
      // The summary's numbers, computed once: the page shows the same.
      uint64_t t1 = SteadyNs();
      Summary summary = ComputeSummary(window, *index);
      if (options.summary) {
        note(WriteTextFile(window.meta, dir, ".summary.txt", RenderSummary(summary), &variant, fs, &file_error),
             file_error, ".summary.txt");
      }
      times->summary_ns = SteadyNs() - t1;
      if (options.html) {
        uint64_t t2 = SteadyNs();
        std::string stem = WindowFileStemVariant(window.meta, variant);
        std::string page =
            RenderReportPage(stem, {ReportWindowJson(window, *index, summary, stem, trace_name)});
        note(WriteTextFile(window.meta, dir, ".report.html", page, &variant, fs, &file_error), file_error,
             ".report.html");
        times->page_ns = SteadyNs() - t2;
      }
    }
    if (options.stacks) {
      note(WriteTextFile(window.meta, dir, ".stacks.txt", FoldedStacks(window, *index), &variant, fs, &file_error),
           file_error, ".stacks.txt");
    }
    return ok;
  } catch (const std::exception& e) {  // bad_alloc: never let it reach the host
    *error = std::string("writing window files: ") + e.what();
    return false;
  }
}

bool WriteWindowFiles(const Window& window, const OutputOptions& options, std::string* error,
                      std::vector<std::string>* written) {
  return WriteWindowFiles(window, options, PosixFileSystem(), error, written);
}

}  // namespace prof
