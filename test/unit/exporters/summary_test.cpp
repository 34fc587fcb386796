#include "exporters/summary/summary.h"

#include <catch2/catch.hpp>
#include <regex>

#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using testing::WindowBuilder;

// Test data: each file builds the window its checks need (steps, launches).
// Step 0 [0, 1 ms): kernels a 10 µs, a 20 µs, b 100 µs, each launched 5 µs
// before it starts. Step 1 [1, 2 ms): kernel a 30 µs launched 50 µs before,
// two 1 MB HtoD copies of 100 µs and one 0.5 MB DtoH copy of 50 µs.
Window Measured() {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  b.Step(1, 1'000'000, 2'000'000);
  b.Launch("a", 100'000, 5'000, 105'000, 115'000, 1);
  b.Launch("a", 200'000, 5'000, 205'000, 225'000, 2);
  b.Launch("b", 300'000, 5'000, 305'000, 405'000, 3);
  b.Launch("a", 1'100'000, 5'000, 1'150'000, 1'180'000, 4);
  b.Call(ApiId::cudaMemcpy, 1'200'000, 1'210'000, 5).copy_kind = 1;
  b.Copy(testing::kCuptiHtoD, testing::kCuptiPinned, testing::kCuptiDevice, 1'000'000, 1'201'000, 1'301'000, 5);
  b.Call(ApiId::cudaMemcpy, 1'400'000, 1'410'000, 6).copy_kind = 1;
  b.Copy(testing::kCuptiHtoD, testing::kCuptiPinned, testing::kCuptiDevice, 1'000'000, 1'401'000, 1'501'000, 6);
  b.Call(ApiId::cudaMemcpy, 1'600'000, 1'660'000, 7).copy_kind = 2;
  b.Copy(testing::kCuptiDtoH, testing::kCuptiDevice, testing::kCuptiPinned, 500'000, 1'601'000, 1'651'000, 7);
  b.Alloc(10, 0x1000, 1'000'000, 1'000'000);
  b.Alloc(20, 0x2000, 2'000'000, 3'000'000);
  b.Alloc(30, 0x1000, -1'000'000, 2'000'000, 0, ApiId::cudaFree);
  b.window().live_at_end = {{0x3000, 500, 5, static_cast<uint16_t>(ApiId::cudaMalloc), 0, 0, {}},
                            {0x2000, 2'000'000, 20, static_cast<uint16_t>(ApiId::cudaMalloc), 0, 0, {}}};
  return b.Build();
}

const TimeRow* Row(const std::vector<TimeRow>& rows, const std::string& name) {
  for (const TimeRow& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST_CASE("the kernel table has nsys cuda_gpu_kern_sum's numbers", "[summary]") {
  Summary s = ComputeSummary(Measured());
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].name == "b");  // largest total first
  const TimeRow* a = Row(s.kernels, "a");
  REQUIRE(a);
  CHECK(a->count == 3);
  CHECK(a->total_ns == 60'000);
  CHECK(a->avg_ns == Approx(20'000));
  CHECK(a->median_ns == Approx(20'000));
  CHECK(a->min_ns == 10'000);
  CHECK(a->max_ns == 30'000);
  CHECK(a->stddev_ns == Approx(10'000));  // sample stddev of 10, 20, 30 µs
  CHECK(a->percent == Approx(100.0 * 60 / 160));
}

TEST_CASE("the API table counts every intercepted call by name", "[summary]") {
  Summary s = ComputeSummary(Measured());
  const TimeRow* launch = Row(s.api_calls, "cudaLaunchKernel");
  const TimeRow* copy = Row(s.api_calls, "cudaMemcpy");
  REQUIRE(launch);
  REQUIRE(copy);
  CHECK(launch->count == 4);
  CHECK(launch->total_ns == 20'000);
  CHECK(copy->count == 3);
  CHECK(copy->total_ns == 80'000);
  CHECK(copy->median_ns == Approx(10'000));
  CHECK(launch->percent == Approx(20.0));
}

TEST_CASE("a call and a CUPTI-only record of the same API share one row of the API table", "[summary]") {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  b.Call(ApiId::cudaLaunchKernel, 10'000, 11'000, 1);
  b.Call(ApiId::cudaLaunchKernel, 20'000, 23'000, 2);
  auto api_record = [&b](const char* name, uint64_t start_ns, uint64_t dur_ns, uint32_t correlation) {
    DeviceRecord& r = b.Record(DeviceKind::kRuntimeApi, start_ns, start_ns + dur_ns, correlation);
    r.name_id = b.Str(name);
  };
  api_record("cudaLaunchKernel", 30'000, 2'000, 3);  // no host event has correlation 3
  api_record("cudaLaunchKernel", 10'000, 1'000, 1);  // covered by the first call: not counted again
  api_record("cudaGetLastError", 40'000, 500, 4);
  Summary s = ComputeSummary(b.Build());
  REQUIRE(s.api_calls.size() == 2);
  const TimeRow* launch = Row(s.api_calls, "cudaLaunchKernel");
  REQUIRE(launch);
  CHECK(launch->count == 3);
  CHECK(launch->total_ns == 6'000);
  CHECK(launch->median_ns == Approx(2'000));
  CHECK(launch->min_ns == 1'000);
  CHECK(launch->max_ns == 3'000);
  const TimeRow* error = Row(s.api_calls, "cudaGetLastError");
  REQUIRE(error);
  CHECK(error->count == 1);
  CHECK(s.api_calls[0].name == "cudaLaunchKernel");  // by total time, descending
}

TEST_CASE("memory operations are summed by time and by size per operation", "[summary]") {
  Summary s = ComputeSummary(Measured());
  const TimeRow* h2d = Row(s.mem_time, "[CUDA memcpy Host-to-Device]");
  REQUIRE(h2d);
  CHECK(h2d->count == 2);
  CHECK(h2d->total_ns == 200'000);
  REQUIRE(s.mem_size.size() == 2);
  CHECK(s.mem_size[0].name == "[CUDA memcpy Host-to-Device]");
  CHECK(s.mem_size[0].total_bytes == 2'000'000);
  CHECK(s.mem_size[0].avg_bytes == Approx(1'000'000));
  CHECK(s.mem_size[1].name == "[CUDA memcpy Device-to-Host]");
  CHECK(s.mem_size[1].total_bytes == 500'000);
  CHECK_FALSE(s.mem_size_from_host);
}

TEST_CASE("memory shows allocs, frees, peak per device and live allocations largest first", "[summary]") {
  Summary s = ComputeSummary(Measured());
  REQUIRE(s.memory.size() == 1);
  CHECK(s.memory[0].device == 0);
  CHECK(s.memory[0].allocs == 2);
  CHECK(s.memory[0].frees == 1);
  CHECK(s.memory[0].bytes_allocated == 3'000'000);
  CHECK(s.memory[0].bytes_freed == 1'000'000);
  CHECK(s.memory[0].peak_bytes == 3'000'000);
  REQUIRE(s.live.size() == 2);
  CHECK(s.live[0].bytes == 2'000'000);
  CHECK(s.live[1].bytes == 500);
}

TEST_CASE("tensor memory: each step's peak, and what is live at the window's peak by Python line", "[summary]") {
  WindowBuilder b;
  b.Step(3, 1'000, 2'000);
  b.Step(4, 2'000, 3'000);
  // 10,000 bytes held from before; step 3 peaks at 16,000, step 4 at 12,000.
  b.TensorsHeld(10'000);
  b.Tensor(1'100, 0xa000, 4'000, "train.py:12 in forward");
  b.Tensor(1'200, 0xb000, 2'000);
  b.Tensor(1'300, 0xb000, -2'000);
  b.Tensor(1'400, 0xa000, -4'000);
  b.Tensor(2'500, 0xc000, 2'000, "train.py:12 in forward");
  // Module paths: aten::mm in blocks.0.attn around the first two blocks.
  b.window().nvtx_ranges.push_back({1'050, 1'350, b.Str("nn.Module: blocks.0.attn"), testing::kPid, 0});
  NvtxRange mm{1'080, 1'250, b.Str("aten::mm"), testing::kPid, 1};
  mm.op_id = 5;
  b.window().nvtx_ranges.push_back(mm);
  Window w = b.Build();
  Summary s = ComputeSummary(w);
  REQUIRE(s.tensor_memory.size() == 1);
  const TensorMemoryRow& r = s.tensor_memory[0];
  CHECK(r.start_allocated == 10'000);
  CHECK(r.peak_allocated == 16'000);
  CHECK(r.peak_step == 3);
  CHECK(r.peak_ns == 200);
  CHECK(r.step_peaks == std::vector<std::pair<uint64_t, uint64_t>>{{3, 16'000}, {4, 12'000}});
  CHECK(r.held_from_before == 10'000);
  REQUIRE(r.lines.size() == 2);
  CHECK(r.lines[0].site == "train.py:12 in forward");
  CHECK(r.lines[0].bytes == 4'000);
  CHECK(r.lines[1].site == "in aten::mm");  // no Python line: its operator
  REQUIRE(r.modules.size() == 1);
  CHECK(r.modules[0].site == "blocks.0.attn");
  CHECK(r.modules[0].bytes == 6'000);
  CHECK(r.modules[0].blocks == 2);
  CHECK(r.allocs == 3);
  CHECK(r.frees == 2);
  std::string text = RenderSummary(s);
  CHECK(text.find(" Peak allocated by step: 3: 16000; 4: 12000\n") != std::string::npos);
  CHECK(text.find("aten::mm (no Python line)") != std::string::npos);
  CHECK(text.find("Live at the peak, by module (allocated in the window)") != std::string::npos);
  // Without tensor memory there is no section, unless something kept it out.
  Summary plain = ComputeSummary(Measured());
  CHECK(RenderSummary(plain).find("Tensor memory") == std::string::npos);
  Window busy = Measured();
  busy.meta.tensor_memory = "not recorded: the program records the allocator's history itself";
  CHECK(RenderSummary(ComputeSummary(busy)).find("(not recorded: the program records") != std::string::npos);
}

TEST_CASE("the step table has wall time, GPU busy and counts per step", "[summary]") {
  Summary s = ComputeSummary(Measured());
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].wall_ns == 1'000'000);
  CHECK(s.steps[0].gpu_busy_ns == 130'000);
  CHECK(s.steps[0].gpu_busy_percent == Approx(13.0));
  CHECK(s.steps[0].kernels == 3);
  CHECK(s.steps[0].launches == 3);
  CHECK(s.steps[0].copies == 0);
  CHECK(s.steps[1].gpu_busy_ns == 30'000 + 100'000 + 100'000 + 50'000);
  CHECK(s.steps[1].kernels == 1);
  CHECK(s.steps[1].copies == 3);
  CHECK(s.gpu_busy_percent == Approx(100.0 * 410 / 2000));
}

TEST_CASE("launch latency is launch call to GPU start: median and p99", "[summary]") {
  Summary s = ComputeSummary(Measured());
  CHECK(s.launch_latency.count == 4);
  CHECK(s.launch_latency.median_ns == Approx(5'000));  // 5, 5, 5, 50 µs
  CHECK(s.launch_latency.p99_ns == Approx(50'000));
  CHECK(s.launch_latency.max_ns == 50'000);
}

// With CUDA_INJECTION64_PATH alone no wrapper binds, so every call is a
// CUPTI API record; the step table and launch latency must count them.
TEST_CASE("calls seen only by CUPTI count in the step table and launch latency", "[summary]") {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  auto api_record = [&b](const char* name, uint64_t start_ns, uint32_t correlation) {
    DeviceRecord& r = b.Record(DeviceKind::kRuntimeApi, start_ns, start_ns + 2'000, correlation);
    r.name_id = b.Str(name);
  };
  api_record("__cudaLaunchKernel", 100'000, 1);
  b.Kernel("k", 110'000, 120'000, 1);
  api_record("__cudaLaunchKernel", 200'000, 2);
  b.Kernel("k", 230'000, 240'000, 2);
  api_record("cudaMemcpyAsync", 300'000, 3);
  api_record("cudaStreamSynchronize", 400'000, 4);
  api_record("cudaStreamWaitEvent", 500'000, 5);
  Summary s = ComputeSummary(b.Build());
  REQUIRE(s.steps.size() == 1);
  CHECK(s.steps[0].launches == 2);
  CHECK(s.steps[0].copies == 1);
  CHECK(s.steps[0].syncs == 1);  // cudaStreamWaitEvent does not block the host
  CHECK(s.launch_latency.count == 2);
  CHECK(s.launch_latency.median_ns == Approx(20'000));  // 10 and 30 µs
}

TEST_CASE("the summary text uses nsys stats' column headers and numbers", "[summary]") {
  std::string text = RenderSummary(Measured());
  auto has_columns = [&text](const std::string& columns) {
    return std::regex_search(text, std::regex("\\n\\s*" + columns + "\\n"));
  };
  CHECK(has_columns(R"(Time \(%\)\s+Total Time \(ns\)\s+Instances\s+Avg \(ns\)\s+Med \(ns\)\s+Min \(ns\)\s+)"
                    R"(Max \(ns\)\s+StdDev \(ns\)\s+Name)"));
  CHECK(has_columns(R"(Time \(%\)\s+Total Time \(ns\)\s+Num Calls\s+Avg \(ns\)\s+Med \(ns\)\s+Min \(ns\)\s+)"
                    R"(Max \(ns\)\s+StdDev \(ns\)\s+Name)"));
  CHECK(has_columns(R"(Time \(%\)\s+Total Time \(ns\)\s+Count\s+Avg \(ns\)\s+Med \(ns\)\s+Min \(ns\)\s+)"
                    R"(Max \(ns\)\s+StdDev \(ns\)\s+Operation)"));
  CHECK(has_columns(R"(Total \(MB\)\s+Count\s+Avg \(MB\)\s+Med \(MB\)\s+Min \(MB\)\s+Max \(MB\)\s+)"
                    R"(StdDev \(MB\)\s+Operation)"));
  CHECK(text.find("60,000") != std::string::npos);  // kernel a's total
  CHECK(text.find("2.000") != std::string::npos);   // 2 MB of HtoD
  CHECK(text.find("== Findings ==") != std::string::npos);
  CHECK(text.find("== Steps ==") != std::string::npos);
}

TEST_CASE("without GPU copy records the size table comes from the host calls", "[summary]") {
  WindowBuilder b;
  b.window().meta.has_gpu_timings = false;
  b.Step(0, 0, 1'000'000);
  HostEvent& c = b.Call(ApiId::cudaMemcpyAsync, 10, 20);
  c.bytes = 4'000'000, c.copy_kind = 1;
  Summary s = ComputeSummary(b.Build());
  CHECK(s.mem_size_from_host);
  REQUIRE(s.mem_size.size() == 1);
  CHECK(s.mem_size[0].name == "[CUDA memcpy Host-to-Device]");
  CHECK(s.mem_size[0].total_bytes == 4'000'000);
}

}  // namespace
}  // namespace prof
