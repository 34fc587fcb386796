#include "exporters/trace/chrome_trace.h"

#include <catch2/catch.hpp>

#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

// The window-builder tests' usual names, in each file that uses them.
using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

// Two steps: a launch whose kernel starts 5 µs later, a pageable H2D copy,
// a memset, an allocation, an NVTX range around the launch.
WindowBuilder Rich() {
  WindowBuilder b;
  b.Step(10, 1'000'000, 2'000'000);
  b.Step(11, 2'000'000, 3'000'000);
  b.window().nvtx_ranges.push_back({1'050'000, 1'200'000, b.Str("forward"), kPid, 0, 0});
  b.Launch("_Z6kernelPf", 1'100'000, 10'000, 1'105'000, 1'305'000, /*correlation=*/7);
  b.Call(ApiId::cudaMemcpyAsync, 2'100'000, 2'110'000, 8).bytes = 4096;
  b.Copy(testing::kCuptiHtoD, testing::kCuptiPageable, testing::kCuptiDevice, 4096, 2'120'000, 2'124'096, 8);
  b.Call(ApiId::cudaMemsetAsync, 2'200'000, 2'201'000, 9);
  DeviceRecord& set = b.Record(DeviceKind::kMemset, 2'210'000, 2'211'000, 9);
  set.bytes = 1000, set.dst_kind = testing::kCuptiDevice;
  b.Call(ApiId::cudaMalloc, 2'300'000, 2'310'000);
  b.Alloc(2'309'000, 0xabc000, 1 << 20, 3 << 20);
  b.window().meta.config = {{"PROF_ACTIVE", "2"}, {"PROF_STEP", "sync"}};
  b.window().meta.losses.host_events_dropped = 3;
  b.window().meta.losses.device_records_missing = 1;
  return b;
}

// The first event named `name`, or null (a copy: Events() returns temporaries).
json FindOne(const std::vector<json>& events, const std::string& name) {
  for (const json& e : events) {
    if (e.value("name", "") == name) return e;
  }
  return nullptr;
}

TEST_CASE("the trace carries Kineto's top-level keys and libprof's metadata", "[chrome]") {
  json t = TraceJson(Rich().Build());
  CHECK(t["schemaVersion"] == 1);
  CHECK(t["displayTimeUnit"] == "ms");
  CHECK(t["traceName"] == "test.pt.trace.json");
  CHECK(t["distributedInfo"]["rank"] == 0);
  CHECK(t["distributedInfo"]["world_size"] == 1);
  const json& d = t["deviceProperties"][0];
  for (const char* key : {"id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
                          "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize",
                          "sharedMemPerBlock", "sharedMemPerMultiprocessor", "numSms"}) {
    CHECK(d.contains(key));
  }
  CHECK(d["numSms"] == 100);
  const json& l = t["libprof"];
  CHECK(l["version"] == "0.1.0");
  CHECK(l["config"]["PROF_ACTIVE"] == "2");
  CHECK(l["window"]["first_step"] == 10);
  CHECK(l["window"]["last_step"] == 11);
  CHECK(l["window"]["partial"] == false);
  CHECK(l["losses"]["host_events_dropped"] == 3);
  CHECK(l["losses"]["device_records_missing"] == 1);
  CHECK(l["cupti_mode"] == "activity");
  CHECK(l["gpu_timings"] == true);
}

TEST_CASE("timestamps are µs from baseTimeNanoseconds with three decimals, never negative", "[chrome]") {
  WindowBuilder b = Rich();
  // A record that started before the window's first step sets the base.
  b.Kernel("early", 999'000, 999'500, 0, /*stream=*/9);
  std::string text;
  json t = TraceJson(b.Build(), &text);
  CHECK(t["baseTimeNanoseconds"] == testing::kEpochOffsetNs + 999'000);
  json launch = FindOne(Events(t, "X", "cuda_runtime"), "cudaLaunchKernel");
  REQUIRE_FALSE(launch.is_null());
  CHECK(launch.at("ts").get<double>() == Approx(101.0));  // (1'100'000 - 999'000) ns
  CHECK(text.find("\"ts\":101.000,\"dur\":10.000") != std::string::npos);
  for (const json& e : t["traceEvents"]) CHECK(e["ts"].get<double>() >= 0);
}

TEST_CASE("kernels carry Kineto's args, demangled names and occupancy from DeviceProps", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto kernels = Events(t, "X", "kernel");
  REQUIRE(kernels.size() == 1);
  const json& k = kernels[0];
  CHECK(k["name"] == "kernel(float*)");
  CHECK(k["pid"] == 0);   // GPU pid = device
  CHECK(k["tid"] == 7);   // tid = stream
  const json& a = k["args"];
  CHECK(a["correlation"] == 7);
  CHECK(a["device"] == 0);
  CHECK(a["stream"] == 7);
  CHECK(a["grid"] == json({200, 1, 1}));
  CHECK(a["block"] == json({256, 1, 1}));
  CHECK(a["registers per thread"] == 32);
  CHECK(a["shared memory"] == 0);
  CHECK(a["blocks per SM"].get<double>() == Approx(2.0));   // 200 blocks / 100 SMs
  CHECK(a["warps per SM"].get<double>() == Approx(16.0));   // 2 blocks x 8 warps
  // 16 warps resident of 2048/32 = 64 possible: 25%.
  CHECK(a["est. achieved occupancy %"] == 25);
}

TEST_CASE("each launch has an ac2g flow from the call to its GPU work", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto starts = Events(t, "s", "ac2g");
  auto finishes = Events(t, "f", "ac2g");
  REQUIRE(starts.size() == 3);  // launch, memcpy, memset
  REQUIRE(finishes.size() == 3);
  const json* s = nullptr;
  for (const json& e : starts) {
    if (e["id"] == 7) s = &e;
  }
  REQUIRE(s);
  CHECK(s->at("pid") == kPid);
  CHECK(s->at("tid") == kPid);
  json launch = FindOne(Events(t, "X", "cuda_runtime"), "cudaLaunchKernel");
  CHECK(s->at("ts") == launch.at("ts"));
  const json* f = nullptr;
  for (const json& e : finishes) {
    if (e["id"] == 7) f = &e;
  }
  REQUIRE(f);
  CHECK(f->at("pid") == 0);
  CHECK(f->at("tid") == 7);
  CHECK(f->at("bp") == "e");
  CHECK(f->at("ts") == Events(t, "X", "kernel")[0]["ts"]);
}

TEST_CASE("copies and memsets are named as Kineto names them, with bytes and bandwidth", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto copies = Events(t, "X", "gpu_memcpy");
  REQUIRE(copies.size() == 1);
  CHECK(copies[0]["name"] == "Memcpy HtoD (Pageable -> Device)");
  CHECK(copies[0]["args"]["bytes"] == 4096);
  CHECK(copies[0]["args"]["memory bandwidth (GB/s)"].get<double>() == Approx(1.0));  // 4096 B in 4096 ns
  auto sets = Events(t, "X", "gpu_memset");
  REQUIRE(sets.size() == 1);
  CHECK(sets[0]["name"] == "Memset (Device)");
}

TEST_CASE("steps are ProfilerStep#N user annotations on the main thread", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto steps = Events(t, "X", "user_annotation");
  json s10 = FindOne(steps, "ProfilerStep#10");
  REQUIRE_FALSE(s10.is_null());
  CHECK(s10.at("tid") == kPid);
  CHECK(s10.at("dur").get<double>() == Approx(1000.0));
  CHECK_FALSE(FindOne(steps, "ProfilerStep#11").is_null());
  CHECK_FALSE(FindOne(steps, "forward").is_null());  // the NVTX range, on its thread
}

TEST_CASE("an NVTX range projects onto the stream as gpu_user_annotation over its kernels", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto gpu = Events(t, "X", "gpu_user_annotation");
  REQUIRE(gpu.size() == 1);
  CHECK(gpu[0]["name"] == "forward");
  CHECK(gpu[0]["tid"] == 7);
  CHECK(gpu[0]["ts"] == Events(t, "X", "kernel")[0]["ts"]);
  CHECK(gpu[0]["dur"].get<double>() == Approx(200.0));
}

TEST_CASE("allocations are [memory] instants plus a counter of live bytes per device", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto mem = Events(t, "i");
  REQUIRE(mem.size() == 1);
  CHECK(mem[0]["name"] == "[memory]");
  CHECK(mem[0]["args"]["Addr"] == 0xabc000);
  CHECK(mem[0]["args"]["Bytes"] == 1 << 20);
  CHECK(mem[0]["args"]["Total Allocated"] == 3 << 20);
  CHECK(mem[0]["args"]["Device Id"] == 0);
  auto counters = Events(t, "C");
  REQUIRE(counters.size() == 1);
  CHECK(counters[0]["pid"] == 0);
  CHECK(counters[0]["args"]["bytes"] == 3 << 20);
}

TEST_CASE("processes and threads are named and sorted as Kineto does", "[chrome]") {
  json t = TraceJson(Rich().Build());
  bool gpu_label = false, gpu_sort = false, stream_name = false, host_label = false;
  for (const json& e : Events(t, "M")) {
    const std::string name = e["name"];
    if (name == "process_labels" && e["pid"] == 0) gpu_label = e["args"]["labels"] == "GPU 0";
    if (name == "process_labels" && e["pid"] == kPid) host_label = e["args"]["labels"] == "CPU";
    if (name == "process_sort_index" && e["pid"] == 0) gpu_sort = e["args"]["sort_index"] == 16777216;
    if (name == "thread_name" && e["pid"] == 0 && e["tid"] == 7) stream_name = e["args"]["name"] == "stream 7";
  }
  CHECK(gpu_label);
  CHECK(host_label);
  CHECK(gpu_sort);
  CHECK(stream_name);
}

TEST_CASE("CUPTI API records show only for calls no host event covers", "[chrome]") {
  WindowBuilder b = Rich();
  DeviceRecord& covered = b.Record(DeviceKind::kRuntimeApi, 1'100'000, 1'110'000, 7);
  covered.name_id = b.Str("cudaLaunchKernel");
  covered.thread_id = kPid;
  DeviceRecord& foreign = b.Record(DeviceKind::kRuntimeApi, 2'500'000, 2'510'000, 50);
  foreign.name_id = b.Str("cudaLaunchKernel");
  foreign.thread_id = kPid;
  b.Kernel("static_cudart_kernel", 2'520'000, 2'530'000, 50);
  json t = TraceJson(b.Build());
  auto calls = Events(t, "X", "cuda_runtime");
  int launches = 0;
  for (const json& e : calls) launches += e["name"] == "cudaLaunchKernel";
  CHECK(launches == 2);  // the interposed one and the uncovered record, not the duplicate
  bool flow = false;
  for (const json& e : Events(t, "s", "ac2g")) flow |= e["id"] == 50;
  CHECK(flow);
}

TEST_CASE("a slice crossing its parent's end is clipped and keeps its true duration", "[chrome]") {
  WindowBuilder b;
  b.Step(1, 1'000, 2'000);
  b.Call(ApiId::cudaDeviceSynchronize, 1'500, 2'500);  // crosses the step end on the main thread
  b.window().nvtx_ranges.push_back({1'100, 1'600, b.Str("outer"), kPid, 0, 0});
  json t = TraceJson(b.Build());
  auto r = tool::ValidateTrace(t);
  INFO((r.errors.empty() ? "" : r.errors[0]));
  CHECK(r.ok());
  // The step is extended around the sync rather than cutting through it.
  json step = FindOne(Events(t, "X", "user_annotation"), "ProfilerStep#1");
  REQUIRE_FALSE(step.is_null());
  CHECK(step.at("dur").get<double>() == Approx(1.5));
  // The NVTX range [1.1, 1.6] µs holds the sync's start but not its end: the
  // sync is clipped to 0.1 µs and its true 1.0 µs is kept in args.
  json sync = FindOne(Events(t, "X", "cuda_runtime"), "cudaDeviceSynchronize");
  REQUIRE_FALSE(sync.is_null());
  CHECK(sync.at("dur").get<double>() == Approx(0.1));
  bool clipped = sync.at("args").contains("unclipped dur") &&
                 sync.at("args")["unclipped dur"].get<double>() == Approx(1.0);
  CHECK(clipped);
}

TEST_CASE("a stream op that starts inside the one before it starts where that one ends, its truth in args",
          "[chrome]") {
  // The second kernel's start converts to 3 ns before the first one's end;
  // clipped inside it, the 1 ms kernel would be drawn 3 ns long.
  WindowBuilder b;
  b.Step(1, 1'000, 3'000'000);
  b.Kernel("first", 10'000, 1'010'000, 1, /*stream=*/7);
  b.Kernel("second", 1'009'997, 2'009'997, 2, /*stream=*/7);
  b.Kernel("elsewhere", 1'000'000, 1'500'000, 3, /*stream=*/8);
  json t = TraceJson(b.Build());
  auto r = tool::ValidateTrace(t);
  INFO((r.errors.empty() ? "" : r.errors[0]));
  CHECK(r.ok());
  auto kernels = Events(t, "X", "kernel");
  json first = FindOne(kernels, "first"), second = FindOne(kernels, "second"), other = FindOne(kernels, "elsewhere");
  REQUIRE_FALSE(second.is_null());
  CHECK(second["ts"].get<double>() == Approx(first["ts"].get<double>() + 1000.0));
  CHECK(second["dur"].get<double>() == Approx(999.997));
  CHECK(second["args"]["clipped start"].get<double>() == Approx(0.003));
  CHECK(second["args"]["unclipped dur"].get<double>() == Approx(1000.0));
  for (const json& e : {first, other}) {
    CHECK_FALSE(e["args"].contains("clipped start"));
    CHECK_FALSE(e["args"].contains("unclipped dur"));
  }
}

TEST_CASE("every trace of a rich window passes the validator's strict rules", "[chrome]") {
  json t = TraceJson(Rich().Build());
  auto r = tool::ValidateTrace(t);
  CHECK(r.strict);
  for (const auto& e : r.errors) INFO(e);
  CHECK(r.ok());
}

TEST_CASE("an interception-only window has host calls and no GPU events", "[chrome]") {
  WindowBuilder b;
  b.window().meta.has_gpu_timings = false;
  b.window().meta.cupti_mode = "interception-only (CUPTI_ERROR_UNKNOWN)";
  b.Step(0, 0, 1'000'000);
  b.Call(ApiId::cudaLaunchKernel, 100, 200, 1);
  json t = TraceJson(b.Build());
  CHECK(Events(t, "X", "kernel").empty());
  CHECK(Events(t, "s").empty());  // no flow without GPU work to point at
  CHECK(Events(t, "X", "cuda_runtime").size() == 1);
  CHECK(t["libprof"]["gpu_timings"] == false);
  CHECK(tool::ValidateTrace(t).ok());
}

}  // namespace
}  // namespace prof
