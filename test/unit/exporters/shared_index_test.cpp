// The writer's per-window work done once and shared: one WindowIndex for the
// trace, the summary and its findings; kernel args formatted once per launch
// shape; GPU slices put in order without a full sort; thread and stream
// names collected without sorting one entry per event.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "exporters/trace/chrome_trace.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

// The window-builder tests' usual names, in each file that uses them.
using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

// Every summary part that reads the index: launches and their latency, a
// pageable device-to-host cudaMemcpyAsync (d2h-copy-in-step and
// pageable-copy look its GPU record up), and a launch only CUPTI saw.
Window IndexedWindow() {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  b.Step(1, 1'000'000, 2'000'000);
  b.Launch("_Z6kernelPf", 100'000, 5'000, 150'000, 160'000, 1);
  b.Launch("_Z6kernelPf", 1'100'000, 5'000, 1'130'000, 1'140'000, 2);
  b.Call(ApiId::cudaMemcpyAsync, 1'500'000, 1'505'000, 3).copy_kind = 2;
  b.Copy(testing::kCuptiDtoH, testing::kCuptiDevice, testing::kCuptiPageable, 64, 1'510'000, 1'511'000, 3);
  DeviceRecord& api = b.Record(DeviceKind::kRuntimeApi, 1'600'000, 1'602'000, 4);
  api.name_id = b.Str("cudaLaunchKernel");
  api.thread_id = kPid;
  b.Kernel("_Z6kernelPf", 1'610'000, 1'620'000, 4);
  return b.Build();
}

std::vector<std::string> FindingIds(const Summary& s) {
  std::vector<std::string> ids;
  for (const Finding& f : s.findings) ids.push_back(f.id + ": " + f.evidence);
  return ids;
}

TEST_CASE("one shared index gives the summary, findings and trace that separate indexes gave", "[shared-index]") {
  Window w = IndexedWindow();
  WindowIndex index(w);
  Summary own = ComputeSummary(w);
  Summary shared = ComputeSummary(w, index);

  // The index-dependent numbers, by hand: 3 launches (one CUPTI-only) with
  // 50, 30 and 10 µs from call to GPU start; one launch in step 0, two in 1.
  CHECK(shared.launch_latency.count == 3);
  CHECK(shared.launch_latency.median_ns == Approx(30'000));
  REQUIRE(shared.steps.size() == 2);
  CHECK(shared.steps[0].launches == 1);
  CHECK(shared.steps[1].launches == 2);
  std::vector<std::string> ids = FindingIds(shared);
  auto fired = [&ids](const std::string& id) {
    for (const std::string& s : ids) {
      if (s.rfind(id + ":", 0) == 0) return true;
    }
    return false;
  };
  CHECK(fired("d2h-copy-in-step"));
  CHECK(fired("pageable-copy"));

  CHECK(FindingIds(own) == ids);
  CHECK(RenderSummary(own) == RenderSummary(shared));
  CHECK(RenderSummary(w, index) == RenderSummary(w));
  CHECK(ComputeFindings(w, shared, index).size() == ComputeFindings(w, shared).size());

  std::string with_own, with_shared;
  StringSink own_sink(&with_own), shared_sink(&with_shared);
  REQUIRE(WriteChromeTrace(w, "t", own_sink));
  REQUIRE(WriteChromeTrace(w, index, "t", shared_sink));
  CHECK(with_own == with_shared);
}

TEST_CASE("kernels of different launch shapes each carry their own args and occupancy", "[shared-index]") {
  WindowBuilder b;
  b.Kernel("a", 1'000, 2'000, 1).grid[0] = 200;  // 2 blocks per SM on the builder's 100-SM device
  DeviceRecord& wide = b.Kernel("b", 3'000, 4'000, 2);
  wide.grid[0] = 400;                           // 4 per SM
  wide.registers_per_thread = 64;
  b.Kernel("a", 5'000, 6'000, 3).grid[0] = 200;  // the first shape again, after another
  DeviceRecord& unknown_device = b.Kernel("a", 7'000, 8'000, 4);
  unknown_device.grid[0] = 200;
  unknown_device.device_id = 5;  // no DeviceProps: no occupancy fields
  json t = TraceJson(b.Build());
  auto kernels = Events(t, "X", "kernel");
  REQUIRE(kernels.size() == 4);
  CHECK(kernels[0]["args"]["blocks per SM"].get<double>() == Approx(2.0));
  CHECK(kernels[0]["args"]["registers per thread"] == 32);
  CHECK(kernels[1]["args"]["blocks per SM"].get<double>() == Approx(4.0));
  CHECK(kernels[1]["args"]["registers per thread"] == 64);
  CHECK(kernels[1]["args"]["grid"] == json({400, 1, 1}));
  CHECK(kernels[2]["args"]["blocks per SM"].get<double>() == Approx(2.0));
  CHECK(kernels[2]["args"]["grid"] == json({200, 1, 1}));
  CHECK_FALSE(kernels[3]["args"].contains("blocks per SM"));
  CHECK_FALSE(kernels[3]["args"].contains("est. achieved occupancy %"));
  CHECK(kernels[3]["args"]["grid"] == json({200, 1, 1}));
  // Each event keeps its own per-event args.
  for (int i = 0; i < 4; ++i) CHECK(kernels[static_cast<size_t>(i)]["args"]["correlation"] == i + 1);
}

TEST_CASE("GPU slices that start together are written longest first whatever their record order", "[shared-index]") {
  WindowBuilder b;
  // In start order, as sealed, but the shorter of the two equal starts first.
  b.Kernel("inner", 10'000, 12'000, 1);
  b.Kernel("outer", 10'000, 20'000, 2);
  b.Kernel("later", 30'000, 31'000, 3);
  json t = TraceJson(b.Build());
  auto kernels = Events(t, "X", "kernel");
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[0]["name"] == "outer");
  CHECK(kernels[1]["name"] == "inner");
  CHECK(kernels[2]["name"] == "later");
  // The inner one nests inside the outer one, so it is not clipped.
  CHECK_FALSE(kernels[1]["args"].contains("unclipped dur"));
  CHECK(kernels[1]["dur"].get<double>() == Approx(2.0));
}

TEST_CASE("CUPTI-only API records interleave with steps, ranges and host calls in start order", "[shared-index]") {
  WindowBuilder b;
  b.Step(0, 0, 100'000);
  b.window().nvtx_ranges.push_back({10'000, 50'000, b.Str("range"), kPid, 0, 0});
  auto api_record = [&b](const char* name, uint64_t start_ns, uint32_t correlation) {
    DeviceRecord& r = b.Record(DeviceKind::kRuntimeApi, start_ns, start_ns + 1'000, correlation);
    r.name_id = b.Str(name);
    r.thread_id = kPid;
  };
  api_record("__cudaPushCallConfiguration", 5'000, 1);
  api_record("__cudaPopCallConfiguration", 20'000, 2);
  b.Call(ApiId::cudaLaunchKernel, 30'000, 32'000, 3);
  api_record("cudaGetLastError", 60'000, 4);
  json t = TraceJson(b.Build());
  std::vector<std::string> order;
  for (const json& e : Events(t, "X")) {
    if (e["pid"] == kPid && e["tid"] == kPid) order.push_back(e["name"]);
  }
  CHECK(order == std::vector<std::string>{"ProfilerStep#0", "__cudaPushCallConfiguration", "range",
                                          "__cudaPopCallConfiguration", "cudaLaunchKernel", "cudaGetLastError"});
  for (const json& e : Events(t, "X")) CHECK_FALSE(e["args"].contains("unclipped dur"));
}

TEST_CASE("threads and streams that alternate between events are each named once", "[shared-index]") {
  WindowBuilder b;
  for (uint32_t i = 0; i < 6; ++i) {
    uint32_t tid = i % 2 ? 111 : 222;
    b.Call(ApiId::cudaLaunchKernel, 1'000 * (i + 1), 1'000 * (i + 1) + 500, i + 1, tid);
    b.Kernel("k", 10'000 * (i + 1), 10'000 * (i + 1) + 100, i + 1, /*stream=*/i % 2 ? 7 : 9);
  }
  json t = TraceJson(b.Build());
  std::map<std::pair<int64_t, int64_t>, int> names;
  for (const json& e : Events(t, "M")) {
    if (e["name"] == "thread_name") ++names[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}];
  }
  std::map<std::pair<int64_t, int64_t>, int> expected{
      {{kPid, 111}, 1}, {{kPid, 222}, 1}, {{kPid, kPid}, 1}, {{0, 7}, 1}, {{0, 9}, 1}};
  CHECK(names == expected);
}

}  // namespace
}  // namespace prof
