// `prof summary FILE...`: the summary exporter run on windows read back from
// traces; with several windows, a table comparing them follows.
#include <cstdio>
#include <exception>

#include "exporters/common/compact_window.h"
#include "exporters/common/format.h"
#include "exporters/summary/summary.h"
#include "exporters/summary/text_table.h"
#include "tools/prof/commands/commands.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/trace/trace_to_window.h"

namespace prof::tool {
namespace {

constexpr const char* kHelp = R"(usage: prof summary FILE...

Recomputes the summary of each window from its saved trace (.pt.trace.json or
.json.gz; a `prof merge` output is split back into its ranks) with the same
code the agent uses for .summary.txt, and prints it. With several windows
(several files, several ranks) a table comparing them follows.
Exit status 0, or 1 when a file could not be read or holds no CUDA activity
(no CUDA call, no GPU work: it is named, and the others are still read).
Events whose pid, tid, ts or dur has the wrong type (see `prof validate`,
rule field-types) are skipped, and the summary says how many and names the
first.

  --max-unpacked-mb N   refuse a file larger than N MB once gunzipped
                        (default 16384)

The file is read as a stream: what is held is the window's records in
compact form (40 bytes per CUDA call and 48 per GPU record), not the JSON;
events the summary does not use (cpu_op, python_function...) are not held.
)";

struct Row {
  std::string label;
  Summary summary;
};

void Compare(const std::vector<Row>& rows) {
  std::printf("\n==> %zu windows compared <==\n", rows.size());
  TextTable t({"Rank", "Steps", "Wall (ms)", "GPU busy (%)", "Kernels", "Kernel time (ms)", "Findings", "Window"});
  for (const Row& r : rows) {
    const Summary& s = r.summary;
    uint64_t kernels = 0, kernel_ns = 0;
    for (const TimeRow& k : s.kernels) kernels += k.count, kernel_ns += k.total_ns;
    std::string findings;
    for (const Finding& f : s.findings) findings += (findings.empty() ? "" : ",") + f.id;
    uint64_t wall = s.span_end_ns > s.span_start_ns ? s.span_end_ns - s.span_start_ns : 0;
    t.AddRow({s.meta.rank_known ? std::to_string(s.meta.rank) : "-",
              Printf("%llu-%llu", static_cast<unsigned long long>(s.meta.first_step),
                     static_cast<unsigned long long>(s.meta.last_step)),
              Ms(double(wall)), s.meta.has_gpu_timings ? Grouped(s.gpu_busy_percent, 1) : "n/a",
              Grouped(static_cast<unsigned long long>(kernels)), Ms(double(kernel_ns)),
              findings.empty() ? "-" : findings, r.label});
  }
  std::fputs(t.Render().c_str(), stdout);
}

}  // namespace

int SummaryCommand(const Args& args) {
  if (WantsHelp(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  uint64_t max_unpacked = kDefaultMaxUnpackedBytes;
  std::vector<std::string> paths;
  if (int status = ParseFileArgs(args, "summary", kHelp, &max_unpacked, &paths)) return status;
  int status = 0;
  std::vector<Row> rows;
  for (const std::string& path : paths) {
    std::vector<CompactWindow> windows;
    std::string error;
    SkippedEvents skipped;
    bool read = false;
    // Whatever goes wrong with one file is reported with its name, and the
    // next file is still read.
    try {
      read = ReadWindows(path, max_unpacked, &windows, &error, &skipped);
    } catch (const std::exception& e) {
      error = path + ": " + e.what();
    }
    if (!read) {
      std::fprintf(stderr, "prof summary: %s\n", error.c_str());
      status = 1;
      continue;
    }
    for (size_t i = 0; i < windows.size(); ++i) {
      // Nothing CUDA did: no table or finding could say anything true.
      if (windows[i].host_events.empty() && windows[i].device_records.empty()) {
        std::fprintf(stderr, "prof summary: %s%s: no CUDA activity: the trace holds no CUDA call and no GPU work, so "
                     "there is nothing to summarize\n",
                     path.c_str(), windows.size() > 1 ? (" #" + std::to_string(i)).c_str() : "");
        status = 1;
        continue;
      }
      try {
        Row row{windows.size() > 1 ? path + " #" + std::to_string(i) : path, ComputeSummary(windows[i])};
        windows[i] = CompactWindow();
        // Events the file holds that could not be read are said once, above its first window.
        std::string note = i == 0 && skipped.count ? path + ": " + skipped.Sentence() + "\n" : "";
        std::printf("%s==> %s <==\n%s%s", rows.empty() ? "" : "\n", row.label.c_str(), note.c_str(),
                    RenderSummary(row.summary).c_str());
        rows.push_back(std::move(row));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "prof summary: %s: %s\n", path.c_str(), e.what());
        status = 1;
      }
    }
    std::fflush(stdout);
  }
  if (rows.size() > 1) Compare(rows);
  return status;
}

}  // namespace prof::tool
