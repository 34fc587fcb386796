#include "tools/prof/job/job_render.h"

#include "exporters/common/format.h"
#include "exporters/summary/text_table.h"
#include "tools/prof/job/job_stats.h"
#include "tools/prof/json/json_dump.h"

namespace prof::tool {
namespace {

// ,"key":<v> as nlohmann writes a double.
void Append(std::string* out, const char* key, double v, bool comma = true) {
  *out += std::string(comma ? "," : "") + "\"" + key + "\":";
  AppendJsonDouble(out, v);
}

}  // namespace

std::string RenderJobSummary(const JobSummary& job) {
  std::string out;
  unsigned long long rows = job.cells.size();
  // Traces that carry no rank are processes, named as the timeline names
  // them ("python3 pid 4242"), never ranks 0..N-1 made up from their order.
  const char* unit = job.ranked ? "rank" : "process";
  auto who = [&job](size_t i) { return job.ranked ? std::to_string(job.totals[i].rank) : job.labels[i]; };
  if (job.ranked) {
    out += Printf("Job: %zu ranks, %llu steps, %llu collectives matched across ranks\n", job.world, rows,
                  static_cast<unsigned long long>(job.collectives));
  } else {
    out += Printf("Job: %zu processes (their traces carry no rank), %llu steps, %llu collectives matched across "
                  "processes\n",
                  job.world, rows, static_cast<unsigned long long>(job.collectives));
  }
  const ClockAlignment& c = job.clocks;
  if (c.collectives == 0) {
    out += "Clocks: not aligned (no collective seen on two ranks); times as each rank's clock read them\n";
  } else {
    out += Printf("Clocks: aligned to %s on the end times of %zu collectives; residual %s median, %s worst\n",
                  job.labels[c.reference].c_str(), c.collectives, FormatDuration(double(c.residual_median_ns)).c_str(),
                  FormatDuration(double(c.residual_max_ns)).c_str());
    std::string offsets;
    for (size_t i = 0; i < job.world; ++i) {
      if (i == c.reference) continue;
      offsets += offsets.empty() ? "  offsets: " : ", ";
      offsets += job.labels[i] + (c.aligned[i] ? Printf(" %+.3f ms", double(c.offset_ns[i]) / 1e6) : " not aligned");
    }
    if (!offsets.empty()) out += offsets + "\n";
  }
  out += Printf("\nPer step and %s (ms; waiting: in collectives, for the last %s to arrive; host gap: longest "
                "between the %s's CUDA calls):\n",
                unit, unit, unit);
  TextTable t({job.steps_by_number ? "Step" : "Step (k-th)", job.ranked ? "Rank" : "Process", "Step time", "Compute",
               "Communication", "Waiting", "Host gap"});
  constexpr size_t kMaxRowsShown = 20;  // steps; the per-rank table covers them all
  for (size_t row = 0; row < job.cells.size() && row < kMaxRowsShown; ++row) {
    for (size_t i = 0; i < job.world; ++i) {
      const JobCell& x = job.cells[row][i];
      if (!x.present) continue;
      t.AddRow({std::to_string(job.step_numbers[row]), who(i), Ms(double(x.step_ns)),
                Ms(double(x.compute_ns)), Ms(double(x.comm_ns)), Ms(double(x.wait_ns)), Ms(double(x.gap_ns))});
    }
  }
  out += t.Render();
  if (job.cells.size() > kMaxRowsShown) {
    out += Printf("  (%zu more steps not shown; the means below cover them all)\n", job.cells.size() - kMaxRowsShown);
  }
  out += Printf("\nPer %s (mean per step, ms):\n", unit);
  TextTable r({job.ranked ? "Rank" : "Process", "Step time", "Compute", "Communication", "Waiting", "Host gap",
               "Arrived last", "Others waited for it", "Comm overlapped (%)"});
  for (size_t i = 0; i < job.totals.size(); ++i) {
    const JobRankTotals& x = job.totals[i];
    r.AddRow({who(i), Ms(x.mean_step_ns), Ms(x.mean_compute_ns), Ms(x.mean_comm_ns),
              Ms(x.mean_wait_ns), Ms(x.mean_gap_ns), Grouped(static_cast<unsigned long long>(x.arrived_last)),
              Ms(x.cost_per_rank_step_ns),
              x.comm_overlap_percent < 0 ? "-" : Grouped(x.comm_overlap_percent, 1)});
  }
  out += r.Render();
  out += "\n" + job.straggler_line + "\n";
  for (const std::string& e : job.evidence) out += "  " + e + "\n";
  return out;
}

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

}  // namespace prof::tool
