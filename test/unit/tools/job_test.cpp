// `prof merge`'s job analysis on hand-built rank traces carrying Kineto's
// collective arguments: a small data-parallel job is simulated in true time
// (each collective ends on every rank once the last rank has arrived, plus a
// transfer time), then each rank's trace is written on its own clock, offset
// by a known amount. The analysis must recover the offsets, charge the
// waiting to the rank that arrived last, and name a straggler only when one
// rank is slowed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tools/prof/job/clock_alignment.h"
#include "tools/prof/job/facts_file.h"
#include "tools/prof/job/job_analysis.h"
#include "tools/prof/job/job_render.h"
#include "tools/prof/job/rank_events.h"
#include "tools/prof/json/parse.h"
#include "tools/prof/merge/merge.h"
#include "tools/prof/trace/trace_to_window.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

using nlohmann::json;

struct JobSpec {
  int ranks = 4;
  int steps = 5;
  int buckets = 3;                  // all-reduces per step
  int slow_rank = -1;               // this rank's host sleeps delay_ns at each step's start
  int64_t delay_ns = 0;
  std::vector<int64_t> clock_ns;    // per rank: its clock minus true time
  std::vector<int64_t> jitter_ns;   // per (step, rank): extra host time, for noise
  std::vector<int64_t> forward_extra_ns;  // per rank: its forward kernel runs this much longer
  bool poller = false;  // a second thread polls an event every 50 us, making the most calls
  int64_t base_ns = 1'700'000'000'000'000'000;
};

constexpr int64_t kForwardNs = 4'000'000;
constexpr int64_t kBackwardSliceNs = 200'000;  // one per bucket, shorter than a transfer
constexpr int64_t kTransferNs = 300'000;
constexpr int64_t kLaunchNs = 5'000;

json X(const char* cat, const std::string& name, int64_t pid, int64_t tid, int64_t start_ns, int64_t dur_ns,
       int64_t clock_ns, int64_t base_ns, json args = json::object()) {
  json e = {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid},
            {"ts", double(start_ns + clock_ns) / 1000.0}, {"dur", double(dur_ns) / 1000.0}};
  (void)base_ns;  // times are relative to the trace's baseTimeNanoseconds
  if (std::string(cat) == "kernel") {
    static int64_t correlation = 1'000'000;
    args["stream"] = tid;
    if (!args.contains("correlation")) args["correlation"] = ++correlation;
  }
  if (!args.empty()) e["args"] = args;
  return e;
}

// Rank traces of a data-parallel job: per step a forward kernel, then per
// bucket a backward kernel and an all-reduce on a second stream; the next
// step starts when the last all-reduce has ended (the optimizer needs it).
// seq numbers count all-reduces of process group "0" from 1.
std::vector<json> BuildJob(const JobSpec& spec) {
  std::vector<json> traces(spec.ranks);
  for (int r = 0; r < spec.ranks; ++r) {
    traces[r] = {{"baseTimeNanoseconds", spec.base_ns},
                 {"distributedInfo", {{"backend", "nccl"}, {"rank", r}, {"world_size", spec.ranks}}},
                 {"traceEvents", json::array()}};
  }
  auto clock = [&](int r) { return spec.clock_ns.empty() ? 0 : spec.clock_ns[r]; };
  int64_t t = 10'000'000;  // true time of the first step's start
  int64_t seq = 1;
  for (int step = 0; step < spec.steps; ++step) {
    std::vector<int64_t> host(spec.ranks), gpu(spec.ranks);
    for (int r = 0; r < spec.ranks; ++r) {
      json& ev = traces[r]["traceEvents"];
      int64_t c = clock(r), b = spec.base_ns;
      int64_t h = t;
      ev.push_back(X("cuda_runtime", "cudaLaunchKernel", 100, 100, h, kLaunchNs, c, b));  // the step's marker
      h += kLaunchNs;
      if (r == spec.slow_rank) h += spec.delay_ns;
      if (!spec.jitter_ns.empty()) h += spec.jitter_ns[static_cast<size_t>(step * spec.ranks + r)];
      // The forward pass, launched from train.py line 88 after the delay.
      ev.push_back(X("python_function", "train.py(88): train_step", 100, 100, h, 2 * kLaunchNs, c, b));
      json launch = {{"correlation", 10 * (step * spec.ranks + r) + 1}};
      ev.push_back(X("cuda_runtime", "cudaLaunchKernel", 100, 100, h, kLaunchNs, c, b, launch));
      int64_t g = std::max(t + kLaunchNs, h + kLaunchNs);
      int64_t forward = kForwardNs + (spec.forward_extra_ns.empty() ? 0 : spec.forward_extra_ns[r]);
      ev.push_back(X("kernel", "forward_kernel", 0, 7, g, forward, c, b, launch));
      g += forward;
      h += kLaunchNs;
      host[r] = h;
      gpu[r] = g;
    }
    int64_t comm_free = 0;
    std::vector<int64_t> comm_end(spec.ranks, 0);
    for (int k = 0; k < spec.buckets; ++k, ++seq) {
      std::vector<int64_t> arrive(spec.ranks);
      for (int r = 0; r < spec.ranks; ++r) {
        json& ev = traces[r]["traceEvents"];
        int64_t c = clock(r), b = spec.base_ns;
        ev.push_back(X("cuda_runtime", "cudaLaunchKernel", 100, 100, host[r], kLaunchNs, c, b));
        ev.push_back(X("kernel", "backward_kernel", 0, 7, gpu[r], kBackwardSliceNs, c, b));
        gpu[r] += kBackwardSliceNs;
        host[r] += kLaunchNs;
        ev.push_back(X("cuda_runtime", "ncclAllReduce", 100, 100, host[r], kLaunchNs, c, b));
        host[r] += kLaunchNs;
        arrive[r] = std::max({gpu[r], comm_end[r], host[r]});
      }
      int64_t end = *std::max_element(arrive.begin(), arrive.end()) + kTransferNs;
      comm_free = end;
      for (int r = 0; r < spec.ranks; ++r) {
        json args = {{"Collective name", "allreduce"}, {"In msg nelems", 1 << 20}, {"Out msg nelems", 1 << 20},
                     {"Group size", spec.ranks}, {"dtype", "Float"}, {"Process Group Name", "0"},
                     {"Process Group Ranks", "[0, 1, 2, 3]"}, {"Seq", seq}};
        traces[r]["traceEvents"].push_back(X("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 13, arrive[r],
                                             end - arrive[r], clock(r), spec.base_ns, args));
        comm_end[r] = end;
      }
    }
    // The optimizer waits for the last all-reduce: the step ends there.
    int64_t step_end = comm_free + 100'000;
    for (int r = 0; r < spec.ranks; ++r) {
      json& ev = traces[r]["traceEvents"];
      for (int64_t p = t; spec.poller && p + 1'000 < step_end; p += 50'000) {
        ev.push_back(X("cuda_runtime", "cudaEventQuery", 100, 300, p, 1'000, clock(r), spec.base_ns));
      }
      ev.push_back(X("cuda_runtime", "cudaStreamSynchronize", 100, 100, host[r], comm_free - host[r], clock(r),
                     spec.base_ns));
      ev.push_back(X("user_annotation", "ProfilerStep#" + std::to_string(40 + step), 100, 100, t, step_end - t,
                     clock(r), spec.base_ns));
    }
    t = step_end;
  }
  return traces;
}

std::vector<tool::RankEvents> Read(const std::vector<json>& traces) {
  std::vector<tool::RankEvents> out(traces.size());
  for (size_t i = 0; i < traces.size(); ++i) {
    out[i].rank = traces[i]["distributedInfo"]["rank"];
    for (const json& e : traces[i]["traceEvents"]) {
      tool::JsonDoc doc;
      std::string error;
      REQUIRE(tool::ParseJson(e.dump(), &doc, &error));
      tool::ReadJobEvent(tool::JsonValue(&doc, 0), &out[i]);
    }
    tool::ShiftRankEvents(&out[i], traces[i]["baseTimeNanoseconds"].get<int64_t>());
  }
  return out;
}

TEST_CASE("clock offsets are recovered from the collectives' shared end instants", "[job]") {
  JobSpec spec;
  spec.clock_ns = {0, 1'500'000, -730'000, 250'123};  // rank clocks off by up to 1.5 ms
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::ClockAlignment c = tool::AlignClocks(ranks);
  CHECK(c.reference == 0);
  CHECK(c.collectives == 15);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    CHECK(c.aligned[r]);
    CHECK(std::llabs(c.offset_ns[r] - spec.clock_ns[r]) <= 1);  // ts carry µs with 3 decimals
  }
  CHECK(c.residual_max_ns <= 2);
}

TEST_CASE("a collective kernel the trace clipped on its track is aligned by its true end", "[job]") {
  // The exporter draws a kernel that starts a few ns before the previous
  // one on its stream ends inside that one, clipped, its true duration in
  // "unclipped dur" (exporters/trace/chrome_trace.cpp). Read as drawn, its end
  // would be early by the whole kernel and the residual as large.
  JobSpec spec;
  spec.clock_ns = {0, 1'500'000, -730'000, 250'123};
  std::vector<json> traces = BuildJob(spec);
  int clipped = 0;
  for (json& e : traces[2]["traceEvents"]) {
    if (e["cat"] == "kernel" && e.contains("args") && e["args"].value("Seq", 0) == 5) {
      e["args"]["unclipped dur"] = e["dur"];
      e["dur"] = 0.01;
      ++clipped;
    }
  }
  REQUIRE(clipped == 1);
  tool::ClockAlignment c = tool::AlignClocks(Read(traces));
  CHECK(c.collectives == 15);
  CHECK(std::llabs(c.offset_ns[2] - spec.clock_ns[2]) <= 1);
  CHECK(c.residual_max_ns <= 2);
}

TEST_CASE("thirty-two ranks, each with its own clock, align and name their straggler", "[job]") {
  JobSpec spec;
  spec.ranks = 32;
  spec.steps = 25;
  spec.buckets = 6;
  spec.slow_rank = 17;
  spec.delay_ns = 2'000'000;
  for (int r = 0; r < spec.ranks; ++r) spec.clock_ns.push_back((r * 7919 % 61 - 30) * 100'000);  // -3 ms .. +3 ms
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::ClockAlignment c = tool::AlignClocks(ranks);
  CHECK(c.collectives == 150);
  for (int r = 0; r < spec.ranks; ++r) {
    INFO("rank " << r);
    CHECK(std::llabs(c.offset_ns[r] - (spec.clock_ns[r] - spec.clock_ns[c.reference])) <= 1);
  }
  tool::JobSummary job = tool::AnalyzeJob(ranks, c);
  CHECK(job.straggler == 17);
  CHECK(job.totals[17].cost_per_rank_step_ns == Approx(2e6).epsilon(0.1));
  // The per-step table shows 20 steps; the per-rank means cover all 25.
  CHECK(tool::RenderJobSummary(job).find("(5 more steps not shown") != std::string::npos);
}

TEST_CASE("the slowed rank is named, with the others' wait per step and its host gap at the Python line", "[job]") {
  JobSpec spec;
  spec.slow_rank = 2;
  spec.delay_ns = 6'000'000;
  spec.clock_ns = {0, 800'000, -2'000'000, 40'000};
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  REQUIRE(job.straggler == 2);
  CHECK(job.steps_by_number);
  REQUIRE(job.cells.size() == 5);
  CHECK(job.step_numbers.front() == 40);
  // Every other rank waits for the slowed one the injected delay per step.
  for (size_t row = 0; row < job.cells.size(); ++row) {
    for (int r = 0; r < 4; ++r) {
      INFO("row " << row << " rank " << r);
      if (r == 2) {
        CHECK(job.cells[row][r].wait_ns < spec.delay_ns / 100);
      } else {
        CHECK(std::abs(double(job.cells[row][r].wait_ns) - double(spec.delay_ns)) <= 0.1 * double(spec.delay_ns));
      }
    }
  }
  CHECK(job.totals[2].arrived_last == 5);  // the first bucket of each step; the later ones nobody waits at
  CHECK(job.totals[2].cost_per_rank_step_ns == Approx(double(spec.delay_ns)).epsilon(0.1));
  std::string text = tool::RenderJobSummary(job);
  INFO(text);
  CHECK(job.straggler_line.rfind("straggler: rank 2: arrived last at 5 of the 5 collectives", 0) == 0);
  REQUIRE(!job.evidence.empty());
  CHECK(job.evidence[0].find("before cudaLaunchKernel at train.py(88): train_step") != std::string::npos);
  CHECK(text.find("Clocks: aligned to rank 0 on the end times of 15 collectives") != std::string::npos);
}

TEST_CASE("a slowed rank whose busiest thread never waits is named with its GPU's wait for work as evidence",
          "[job]") {
  // A thread that polls an event all along (as PyTorch's NCCL watchdog
  // does) makes the most calls on every rank, so no rank's longest gap
  // between that thread's calls stands out; the slowed rank's GPU does.
  JobSpec spec;
  spec.slow_rank = 1;
  spec.delay_ns = 6'000'000;
  spec.poller = true;
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  REQUIRE(job.straggler == 1);
  for (int r = 0; r < 4; ++r) CHECK(job.totals[r].mean_gap_ns < 60'000);
  CHECK(job.totals[1].mean_idle_ns == Approx(double(spec.delay_ns)).epsilon(0.05));
  CHECK(job.totals[0].mean_idle_ns < 200'000);
  REQUIRE(job.evidence.size() == 1);
  CHECK(job.evidence[0].rfind("its host is idle longer: its GPU has no work for 6.0", 0) == 0);
  CHECK(job.evidence[0].find("before cudaLaunchKernel at train.py(88): train_step") != std::string::npos);
  // Without the slowed rank, nothing stands out and no evidence is given.
  spec.slow_rank = -1;
  ranks = Read(BuildJob(spec));
  job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  CHECK(job.straggler == -1);
  CHECK(job.evidence.empty());
}

TEST_CASE("with no slowed rank, noise in arrivals names no straggler", "[job]") {
  JobSpec spec;
  spec.clock_ns = {0, 300'000, 600'000, 900'000};
  // Each step a different rank is up to 60 µs late (deterministic noise).
  for (int step = 0; step < spec.steps; ++step) {
    for (int r = 0; r < spec.ranks; ++r) spec.jitter_ns.push_back(((step * 7 + r * 13) % 5) * 15'000);
  }
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  INFO(tool::RenderJobSummary(job));
  CHECK(job.straggler == -1);
  CHECK(job.straggler_line.rfind("straggler: none", 0) == 0);
  CHECK(job.evidence.empty());
}

TEST_CASE("a rank late once by a lot is not the straggler", "[job]") {
  JobSpec spec;
  spec.jitter_ns.assign(static_cast<size_t>(spec.steps * spec.ranks), 0);
  spec.jitter_ns[2 * spec.ranks + 1] = 8'000'000;  // rank 1, step 2 only: a page fault, the scheduler
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  INFO(tool::RenderJobSummary(job));
  CHECK(job.totals[1].arrived_last == 1);
  CHECK(job.totals[1].cost_per_rank_step_ns > 0.1 * job.median_step_ns);  // on average it cost a lot ...
  CHECK(job.straggler == -1);                                             // ... but only once
  CHECK(job.straggler_line.rfind("straggler: none: no rank stands out (the most waited-for, rank 1", 0) == 0);
}

TEST_CASE("a rank whose kernels are slower is named with its compute as evidence", "[job]") {
  JobSpec spec;
  spec.forward_extra_ns = {0, 3'000'000, 0, 0};  // rank 1's forward kernel is 3 ms slower
  std::vector<tool::RankEvents> ranks = Read(BuildJob(spec));
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  INFO(tool::RenderJobSummary(job));
  REQUIRE(job.straggler == 1);
  bool compute = false;
  for (const std::string& e : job.evidence) compute = compute || e.find("its kernels run longer") == 0;
  CHECK(compute);
  CHECK(job.totals[1].cost_per_rank_step_ns == Approx(3e6).epsilon(0.1));
}

TEST_CASE("prof merge aligns the ranks' clocks on the timeline and splits back to each rank's own", "[job][merge]") {
  JobSpec spec;
  spec.slow_rank = 3;
  spec.delay_ns = 2'000'000;
  spec.clock_ns = {0, 1'000'000, 2'000'000, 3'000'000};
  std::vector<json> traces = BuildJob(spec);
  traces[1]["baseTimeNanoseconds"] = spec.base_ns + 5'000'000;  // another base: ts are relative to it
  for (json& e : traces[1]["traceEvents"]) e["ts"] = e["ts"].get<double>() - 5000.0;
  std::vector<tool::MergeInput> inputs;
  for (int r = 0; r < 4; ++r) {
    // Metadata at ts 0, as every trace has: it must stay at a time >= 0 once
    // a rank whose clock is ahead is moved back.
    traces[r]["traceEvents"].push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", 100}, {"tid", 0}, {"ts", 0}, {"args", {{"name", "host"}}}});
    inputs.push_back({"rank" + std::to_string(r), traces[r]});
  }
  json merged;
  std::string error;
  REQUIRE(tool::MergeTraces(&inputs, &merged, &error));
  tool::ValidateResult valid = tool::ValidateTrace(merged);
  INFO(json(valid.errors).dump());
  CHECK(valid.ok());
  const json& align = merged["libprof_merge"]["clock_alignment"];
  CHECK(align["collectives"] == 15);
  CHECK(align["residual_max_ns"].get<int64_t>() <= 2);
  for (int r = 0; r < 4; ++r) {
    CHECK(std::llabs(merged["libprof_merge"]["inputs"][r]["clock_offset_ns"].get<int64_t>() - spec.clock_ns[r]) <= 1);
  }
  // On the merged timeline, each all-reduce ends at one instant on every rank.
  std::map<int64_t, std::vector<double>> ends;
  for (const json& e : merged["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e.contains("args") && e["args"].contains("Seq")) {
      ends[e["args"]["Seq"].get<int64_t>()].push_back(e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  REQUIRE(ends.size() == 15);
  for (const auto& [seq, v] : ends) {
    INFO("seq " << seq);
    REQUIRE(v.size() == 4);
    CHECK(*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end()) <= 0.003);
  }
  // Split back, each rank's events are on its own clock again.
  std::vector<json> parts;
  REQUIRE(tool::SplitMerged(merged, &parts));
  REQUIRE(parts.size() == 4);
  for (int r = 0; r < 4; ++r) {
    std::vector<double> a, b;
    for (const json& e : traces[r]["traceEvents"]) {
      if (e.value("ph", "") == "X") a.push_back(e["ts"].get<double>());
    }
    for (const json& e : parts[r]["traceEvents"]) {
      if (e.value("ph", "") == "X") b.push_back(e["ts"].get<double>());
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(0.0015));
  }
  // `prof summary`'s streaming reader also puts each rank back on its own clock.
  std::vector<Window> windows;
  REQUIRE(tool::ReadWindowsFromBytes(merged.dump(), &windows, &error));
  REQUIRE(windows.size() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    double first_kernel_us = 1e300;
    for (const json& e : traces[r]["traceEvents"]) {
      if (e["cat"] == "kernel") first_kernel_us = std::min(first_kernel_us, e["ts"].get<double>());
    }
    REQUIRE_FALSE(windows[r].device_records.empty());
    uint64_t first = windows[r].device_records.front().start_ns;
    for (const DeviceRecord& d : windows[r].device_records) first = std::min(first, d.start_ns);
    CHECK(std::llabs(static_cast<int64_t>(first) - std::llround(first_kernel_us * 1000)) <= 2);
  }
}

// Four processes' traces as libprof writes them with no rank to be had
// (distributedInfo rank 0 of 1, libprof.rank_known false), or, `ranked`,
// as the ranks of a job.
std::vector<tool::MergeSource> LibprofJob(bool ranked, std::vector<std::string>* texts) {
  JobSpec spec;
  std::vector<json> traces = BuildJob(spec);
  std::vector<tool::MergeSource> sources;
  texts->clear();
  for (int r = 0; r < spec.ranks; ++r) {
    json& t = traces[r];
    t["libprof"] = {{"process", "train_loop"}, {"pid", 4240 + r}, {"rank_known", ranked}};
    if (!ranked) t["distributedInfo"] = {{"rank", 0}, {"world_size", 1}};
    texts->push_back(t.dump());
  }
  for (int r = 0; r < spec.ranks; ++r) {
    const std::string& text = (*texts)[r];
    sources.push_back({"p" + std::to_string(r) + ".pt.trace.json",
                       [&text](std::string*) { return tool::MemorySource(text); }});
  }
  return sources;
}

TEST_CASE("prof merge of traces with no rank calls them processes by program and pid, and claims no rank",
          "[job][merge]") {
  for (bool ranked : {false, true}) {
    INFO((ranked ? "ranked" : "unranked"));
    std::vector<std::string> texts;
    std::vector<tool::MergeSource> sources = LibprofJob(ranked, &texts);
    std::string out, error;
    StringSink sink(&out);
    tool::MergeReport report;
    REQUIRE(tool::StreamMerge(sources, sink, &report, &error));
    INFO(json(report.validation.errors).dump());
    CHECK(report.validation.ok());
    json merged = json::parse(out);
    // `prof validate` of the file holds it to the same rules.
    tool::ValidateResult valid = tool::ValidateTrace(merged);
    INFO(json(valid.errors).dump());
    CHECK(valid.ok());
    std::string text = tool::RenderJobSummary(report.job);
    INFO(text);
    // `prof report` reads the merged file back into the same job.
    std::vector<tool::RankEvents> back;
    auto bytes = tool::MemorySource(out);
    tool::ReadJobRanks(bytes.get(), &back);
    REQUIRE(back.size() == 4);
    tool::JobSummary reread = tool::AnalyzeJob(back, tool::AlignClocks(back));
    if (ranked) {
      CHECK(text.rfind("Job: 4 ranks, 5 steps", 0) == 0);
      CHECK(merged["distributedInfo"]["ranks"] == json({0, 1, 2, 3}));
      CHECK(reread.labels == std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"});
      continue;
    }
    CHECK(text.rfind("Job: 4 processes (their traces carry no rank), 5 steps", 0) == 0);
    CHECK(text.find("Rank") == std::string::npos);
    CHECK(text.find(" 40  train_loop pid 4240 ") != std::string::npos);  // a row of the first table
    CHECK(text.find("\n train_loop pid 4243 ") != std::string::npos);       // a row of the second
    CHECK_FALSE(merged.contains("distributedInfo"));
    for (const json& in : merged["libprof_merge"]["inputs"]) CHECK_FALSE(in.contains("rank"));
    CHECK_FALSE(reread.ranked);
    CHECK(reread.labels ==
          std::vector<std::string>{"train_loop pid 4240", "train_loop pid 4241", "train_loop pid 4242",
                                   "train_loop pid 4243"});
  }
}

TEST_CASE("traces without collectives merge unaligned and name no straggler", "[job]") {
  std::vector<tool::RankEvents> ranks(2);
  ranks[1].rank = 1;
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  CHECK(job.straggler == -1);
  CHECK(job.straggler_line == "straggler: none can be named: no collective was found on two ranks or more");
  CHECK(tool::RenderJobSummary(job).find("Clocks: not aligned") != std::string::npos);
}

TEST_CASE("communication overlapped by compute is measured as HTA's get_comm_comp_overlap does", "[job]") {
  std::vector<tool::RankEvents> ranks(2);
  ranks[1].rank = 1;
  for (tool::RankEvents& r : ranks) {
    // Compute [0, 10) and [20, 30) on two streams, [8, 12) overlapping the first;
    // communication [5, 25) and [24, 26).
    r.kernels.push_back({0, 10'000, false, "", ""});
    r.kernels.push_back({8'000, 12'000, false, "", ""});
    r.kernels.push_back({20'000, 30'000, false, "", ""});
    r.kernels.push_back({5'000, 25'000, true, "0/allreduce/1", "allreduce"});
    r.kernels.push_back({24'000, 26'000, true, "", "ncclDevKernel_SendRecv"});
  }
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  // Overlap: [5, 12) and [20, 26) = 13 us of the 21 us of communication.
  CHECK(job.totals[0].comm_overlap_percent == Approx(100.0 * 13 / 21));
  CHECK(job.totals[1].comm_overlap_percent == Approx(100.0 * 13 / 21));
}

TEST_CASE("a kernel drawn from the previous one's end is read at its true start and duration", "[job]") {
  // Drawn [12, 20) µs on its stream's track, it ran [10, 20): the writer moved
  // its start past the kernel before it. Read as drawn, the communication
  // [5, 11) would be 0 % overlapped instead of 1 µs in 6.
  json trace = {{"distributedInfo", {{"rank", 0}}}, {"baseTimeNanoseconds", 0}};
  trace["traceEvents"] = json::array({
      json{{"ph", "X"}, {"cat", "kernel"}, {"name", "gemm"}, {"pid", 0}, {"tid", 7}, {"ts", 12.0}, {"dur", 8.0},
           {"args", {{"clipped start", 2.0}, {"unclipped dur", 10.0}}}},
      json{{"ph", "X"}, {"cat", "kernel"}, {"name", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}, {"pid", 0},
           {"tid", 8}, {"ts", 5.0}, {"dur", 6.0}, {"args", json::object()}},
  });
  std::vector<tool::RankEvents> ranks = Read({trace});
  REQUIRE(ranks[0].kernels.size() == 2);
  CHECK(ranks[0].kernels[0].start_ns == 10'000);
  CHECK(ranks[0].kernels[0].end_ns == 20'000);
  tool::JobSummary job = tool::AnalyzeJob(ranks, tool::AlignClocks(ranks));
  CHECK(job.totals[0].comm_overlap_percent == Approx(100.0 / 6));
}

TEST_CASE("a rank's facts name each step's longest host gap by its call and innermost Python frame", "[job]") {
  tool::RankEvents r;
  r.steps = {{1, 0, 100'000}, {2, 100'000, 200'000}};
  uint32_t launch = r.Intern("cudaLaunchKernel"), sync = r.Intern("cudaDeviceSynchronize");
  // Step 1: calls at 0 and 50 us (a 40 us gap before the second), inside
  // step() inside main(); step 2: calls at 110 and 190 us (70 us), the
  // second after step() returned, in main() alone.
  r.calls = {{0, 10'000, 1, launch}, {50'000, 60'000, 1, sync}, {110'000, 120'000, 1, launch},
             {190'000, 195'000, 1, launch}, {20'000, 30'000, 2, launch}};
  r.python = {{0, 200'000, 1, r.Intern("train.py(10): main")}, {0, 150'000, 1, r.Intern("train.py(88): step")},
              {40'000, 45'000, 1, r.Intern("train.py(90): log")}};
  r.kernels = {{5'000, 15'000, false, "", ""}, {12'000, 40'000, true, "0/allreduce/1", "allreduce"}};
  tool::RankFacts f = tool::SummarizeRank(r);
  REQUIRE(f.steps.size() == 2);
  CHECK(f.steps[0].gap_ns == 40'000);
  CHECK(f.names[f.steps[0].gap_call] == "cudaDeviceSynchronize");
  CHECK(f.names[f.steps[0].gap_site] == "train.py(88): step");
  CHECK(f.steps[0].syncs == 1);
  CHECK(f.steps[0].compute_ns == 10'000);
  CHECK(f.steps[0].comm_ns == 28'000);
  CHECK(f.steps[1].gap_ns == 70'000);
  CHECK(f.names[f.steps[1].gap_site] == "train.py(10): main");
  CHECK(f.steps[1].syncs == 0);
  REQUIRE(f.collectives.size() == 1);
  CHECK(f.keys[f.collectives[0].key] == "0/allreduce/1");
  CHECK(f.comm_overlap_percent == Approx(100.0 * 3 / 28));
}

TEST_CASE("a rank's facts name each step's longest GPU idle stretch by the call that launched the work after it",
          "[job]") {
  tool::RankEvents r;
  r.steps = {{1, 0, 100'000}, {2, 100'000, 200'000}};
  uint32_t launch = r.Intern("cudaLaunchKernel"), copy = r.Intern("cudaMemcpyAsync"), query = r.Intern("cudaEventQuery");
  // Thread 1 copies at 2 us and launches at 60 us from backward() (its
  // work: a copy 5-20 us, a kernel 70-90 us: idle 20-70 us, the longest of
  // step 1, and 0-5 us); thread 2 polls throughout, so its calls are the
  // most and no thread is idle longer than 20 us. Step 2: a kernel
  // 100-120 us, then nothing: the stretch ending the step has no call.
  r.calls = {{2'000, 3'000, 1, copy, 7}, {60'000, 61'000, 1, launch, 8}, {95'000, 96'000, 1, launch, 9}};
  for (int64_t t = 0; t < 200'000; t += 20'000) r.calls.push_back({t, t + 500, 2, query, 0});
  r.python = {{0, 100'000, 1, r.Intern("train.py(10): main")}, {50'000, 65'000, 1, r.Intern("train.py(40): backward")}};
  r.kernels = {{70'000, 90'000, false, "", "", 8}, {100'000, 120'000, false, "", "", 9}};
  r.transfers = {{5'000, 20'000, 7}};
  tool::RankFacts f = tool::SummarizeRank(r);
  REQUIRE(f.steps.size() == 2);
  CHECK(f.names[f.steps[0].gap_call] == "cudaEventQuery");  // the busiest thread's
  CHECK(f.steps[0].gap_ns < 20'000);
  CHECK(f.steps[0].idle_ns == 50'000);
  CHECK(f.steps[0].idle_call_ns == 60'000);
  CHECK(f.names[f.steps[0].idle_call] == "cudaLaunchKernel");
  CHECK(f.names[f.steps[0].idle_site] == "train.py(40): backward");
  CHECK(f.steps[1].idle_ns == 80'000);
  CHECK(f.steps[1].idle_call == 0);
  // The facts file carries them, and reads back the same.
  std::string path = (std::filesystem::temp_directory_path() /
                      ("job_test_" + std::to_string(::getpid()) + ".job.json")).string();
  {
    std::ofstream out(path);
    out << prof::RankFactsJson(f);
  }
  tool::RankFacts back;
  std::string error;
  REQUIRE(tool::ReadFactsFile(path, &back, &error));
  std::filesystem::remove(path);
  REQUIRE(back.steps.size() == 2);
  CHECK(back.steps[0].idle_ns == 50'000);
  CHECK(back.steps[0].idle_call_ns == 60'000);
  CHECK(back.names[back.steps[0].idle_call] == "cudaLaunchKernel");
  CHECK(back.names[back.steps[0].idle_site] == "train.py(40): backward");
  CHECK(back.steps[1].idle_ns == 80'000);
}

}  // namespace
}  // namespace prof
