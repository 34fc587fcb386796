// `prof summary` reads a trace back into a Window and runs the same summary
// exporter: for libprof's traces the numbers must equal the agent's.
#include <catch2/catch.hpp>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/json/trace_file.h"
#include "tools/prof/merge/merge.h"
#include "tools/prof/trace/trace_to_window.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

using nlohmann::json;
using testing::kPid;
using testing::WindowBuilder;

Window Busy() {
  WindowBuilder b;
  b.window().meta.config = {{"PROF_STEP", "sync"}};
  b.window().meta.losses.device_records_missing = 2;
  b.window().meta.losses.missing_kinds.kernels = 1;
  b.window().meta.losses.missing_kinds.copies = 1;
  b.window().meta.losses.nvtx_names_dropped = 5;
  b.window().meta.losses.api_records_missing = 3;
  b.window().meta.rank_known = true;
  b.window().meta.rank = 2;
  b.window().meta.world_size = 4;
  uint32_t corr = 1;
  for (uint64_t s = 0; s < 3; ++s) {
    uint64_t t0 = 1'000'000 + s * 1'000'000;
    b.Step(5 + s, t0, t0 + 1'000'000);
    for (int k = 0; k < 4; ++k) {
      uint64_t call = t0 + 10'000 + k * 20'000;
      b.Launch(k % 2 ? "_Z4gemmv" : "relu", call, 3'000, call + 7'000, call + 7'000 + 11'000 * (k + 1), corr++);
    }
    HostEvent& c = b.Call(ApiId::cudaMemcpy, t0 + 200'000, t0 + 260'000, corr);
    c.copy_kind = 2, c.bytes = 512;
    b.Copy(testing::kCuptiDtoH, testing::kCuptiDevice, testing::kCuptiPageable, 512, t0 + 201'000, t0 + 202'000, corr++);
    b.Call(ApiId::cudaMalloc, t0 + 300'000, t0 + 301'000);
    b.Alloc(t0 + 300'500, 0x100 + s, 4096, 4096 * (s + 1));
    b.Call(ApiId::cudaDeviceSynchronize, t0 + 900'000, t0 + 999'000);
  }
  // A sync crossing an NVTX range's end: clipped in the trace.
  b.window().nvtx_ranges.push_back({1'850'000, 1'950'000, b.Str("tail"), kPid, 0, 0});
  b.Call(ApiId::cudaStreamSynchronize, 1'900'000, 1'960'000);
  b.window().live_at_end = {{0x100, 4096, 1'300'500, static_cast<uint16_t>(ApiId::cudaMalloc), 0, 0, {}}};
  return b.Build();
}

void CheckSameTimes(const std::vector<TimeRow>& a, const std::vector<TimeRow>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].count == b[i].count);
    CHECK(a[i].total_ns == b[i].total_ns);
    CHECK(a[i].median_ns == b[i].median_ns);
    CHECK(a[i].min_ns == b[i].min_ns);
    CHECK(a[i].max_ns == b[i].max_ns);
  }
}

void CheckSameSummary(const Summary& a, const Summary& b) {
  CheckSameTimes(a.kernels, b.kernels);
  CheckSameTimes(a.api_calls, b.api_calls);
  CheckSameTimes(a.mem_time, b.mem_time);
  REQUIRE(a.mem_size.size() == b.mem_size.size());
  for (size_t i = 0; i < a.mem_size.size(); ++i) CHECK(a.mem_size[i].total_bytes == b.mem_size[i].total_bytes);
  REQUIRE(a.steps.size() == b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    CHECK(a.steps[i].step == b.steps[i].step);
    CHECK(a.steps[i].wall_ns == b.steps[i].wall_ns);
    CHECK(a.steps[i].gpu_busy_ns == b.steps[i].gpu_busy_ns);
    CHECK(a.steps[i].kernels == b.steps[i].kernels);
    CHECK(a.steps[i].launches == b.steps[i].launches);
    CHECK(a.steps[i].syncs == b.steps[i].syncs);
    CHECK(a.steps[i].copies == b.steps[i].copies);
  }
  REQUIRE(a.memory.size() == b.memory.size());
  CHECK(a.memory[0].peak_bytes == b.memory[0].peak_bytes);
  CHECK(a.memory[0].allocs == b.memory[0].allocs);
  REQUIRE(a.live.size() == b.live.size());
  CHECK(a.live[0].bytes == b.live[0].bytes);
  CHECK(a.launch_latency.count == b.launch_latency.count);
  CHECK(a.launch_latency.median_ns == b.launch_latency.median_ns);
  CHECK(a.launch_latency.p99_ns == b.launch_latency.p99_ns);
  CHECK(a.gpu_busy_ns == b.gpu_busy_ns);
  std::vector<std::string> fa, fb;
  for (const Finding& f : a.findings) fa.push_back(f.id + ": " + f.evidence);
  for (const Finding& f : b.findings) fb.push_back(f.id + ": " + f.evidence);
  CHECK(fa == fb);
  CHECK(a.meta.rank == b.meta.rank);
  CHECK(a.meta.first_step == b.meta.first_step);
  CHECK(a.meta.losses.device_records_missing == b.meta.losses.device_records_missing);
  CHECK(b.meta.losses.missing_kinds.kernels == 1);  // by kind too
  CHECK(b.meta.losses.missing_kinds.copies == 1);
  CHECK(b.meta.losses.missing_kinds.memsets == 0);
  CHECK(b.meta.losses.nvtx_names_dropped == 5);
  CHECK(a.meta.losses.nvtx_names_dropped == b.meta.losses.nvtx_names_dropped);
  CHECK(b.meta.losses.api_records_missing == 3);
}

TEST_CASE("a libprof trace read back gives the agent's summary, number for number", "[roundtrip]") {
  Window original = Busy();
  json trace = testing::TraceJson(original);
  REQUIRE(tool::ValidateTrace(trace).ok());
  Window back;
  std::string error;
  REQUIRE(tool::TraceToWindow(trace, &back, &error));
  Summary expected = ComputeSummary(original);
  CHECK_FALSE(expected.findings.empty());
  CheckSameSummary(expected, ComputeSummary(back));
  CHECK(RenderSummary(expected) == RenderSummary(ComputeSummary(back)));
}

TEST_CASE("merging four ranks keeps every event, validates, and splits back per rank", "[merge]") {
  std::vector<tool::MergeInput> inputs;
  size_t total = 0;
  std::vector<Summary> expected;
  for (int rank = 0; rank < 4; ++rank) {
    Window w = Busy();
    w.meta.rank = rank;
    w.meta.epoch_offset_ns += rank * 1'000'000;  // ranks start 1 ms apart
    expected.push_back(ComputeSummary(w));
    json t = testing::TraceJson(w);
    total += t["traceEvents"].size();
    inputs.push_back({"rank" + std::to_string(rank), std::move(t)});
  }
  json merged;
  std::string error;
  REQUIRE(tool::MergeTraces(&inputs, &merged, &error));
  // Every input event is kept; one "rank R" label per process is added.
  size_t labels = 0;
  for (const json& e : merged["traceEvents"]) labels += e.value("name", "") == "process_labels" &&
                                                         e["args"]["labels"].get<std::string>().rfind("rank ", 0) == 0;
  CHECK(merged["traceEvents"].size() == total + labels);
  CHECK(labels == 4 * 2);  // a host process and GPU 0 per rank
  tool::ValidateResult r = tool::ValidateTrace(merged);
  INFO(json(r.errors).dump());
  CHECK(r.ok());
  CHECK(r.strict);
  // Rank 3's kernels sit 3 ms later on the shared timeline than rank 0's.
  double first_kernel[4] = {-1, -1, -1, -1};
  for (const json& e : merged["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    int slot = static_cast<int>(e["pid"].get<int64_t>() / tool::kMergePidBlock) - 1;
    if (first_kernel[slot] < 0) first_kernel[slot] = e["ts"].get<double>();
  }
  CHECK(first_kernel[3] - first_kernel[0] == Approx(3000.0));

  std::vector<json> parts;
  REQUIRE(tool::SplitMerged(merged, &parts));
  REQUIRE(parts.size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    Window back;
    REQUIRE(tool::TraceToWindow(parts[static_cast<size_t>(rank)], &back, &error));
    INFO("rank " << rank);
    CheckSameSummary(expected[static_cast<size_t>(rank)], ComputeSummary(back));
  }
}

TEST_CASE("a real Kineto trace reads into a window with kernels, calls and copies", "[roundtrip]") {
  json t;
  std::string error;
  REQUIRE(tool::LoadTrace(std::string(LIBPROF_KINETO_TRACES) + "/simple_add.pt.trace.json.gz", &t, &error));
  Window w;
  REQUIRE(tool::TraceToWindow(t, &w, &error));
  Summary s = ComputeSummary(w);
  uint64_t kernels = 0;
  for (const TimeRow& r : s.kernels) kernels += r.count;
  CHECK(kernels == 79);  // the trace's kernel events
  CHECK_FALSE(s.api_calls.empty());
  CHECK_FALSE(s.mem_time.empty());
  CHECK(s.launch_latency.count > 0);
}

}  // namespace
}  // namespace prof
