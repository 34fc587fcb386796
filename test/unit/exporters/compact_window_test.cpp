// `prof summary` holds a trace's calls and GPU records compact
// (exporters/common/compact_window.h) and runs the summary on them: the same text,
// byte for byte, as on the agent's records, and the same records in the same
// order when read back from a trace in any event order.
#include "exporters/common/compact_window.h"

#include <catch2/catch.hpp>
#include <random>
#include <set>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/trace_to_window.h"

namespace prof {
namespace {

using nlohmann::json;
using testing::kCuptiDevice;
using testing::kCuptiDtoH;
using testing::kCuptiHtoD;
using testing::kCuptiPageable;
using testing::kCuptiPinned;
using testing::WindowBuilder;

// A window with some of everything the summary and findings read, drawn
// from `seed`: launches on two devices and streams (some from graphs),
// CUPTI-only API calls and their kernels, copies (pageable and pinned,
// blocking and not), memsets, synchronizations with their records, records
// without correlation, allocations, Python stacks on two threads, idle
// stretches, steps ended by a synchronize, and start times that tie.
Window RandomWindow(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  WindowBuilder b;
  if (seed % 2) b.window().meta.config = {{"PROF_STEP", "sync"}};
  Window& w = b.window();
  w.python.status = "on (CPython 3.11.2)";
  w.python.frames.resize(1);
  w.python.stacks.resize(2);
  const char* files[] = {"/job/train.py", "/job/model.py", "/venv/lib/python3.11/site-packages/torch/nn/module.py"};
  for (int i = 0; i < 6; ++i) {
    w.python.frames.push_back({b.Str(files[i % 3]), b.Str("fn" + std::to_string(i)), 10 + i, 0});
  }
  for (int i = 0; i < 5; ++i) w.python.stacks.push_back({static_cast<uint32_t>(1 + pick(6)), 1});
  const char* kernels[] = {"_Z4gemmv", "relu", "_ZN2at6native18elementwise_kernelEv"};
  uint32_t corr = 1;
  uint64_t live = 0;
  uint64_t t = 1'000'000;
  for (uint64_t step = 0; step < 3 + pick(4); ++step) {
    uint64_t step_start = t;
    uint64_t gpu = t;
    for (uint64_t i = 0, n = 5 + pick(20); i < n; ++i) {
      uint64_t call = t + pick(2) * 1'000;  // every other call ties with the previous one's time
      uint32_t tid = pick(5) ? testing::kPid : testing::kPid + 1;
      uint64_t dur = 1'000 + pick(8'000);
      gpu = std::max(gpu, call + 2'000) + pick(3) * 400'000;  // sometimes an idle stretch
      switch (pick(9)) {
        case 0:
        case 1: {
          b.Call(ApiId::cudaLaunchKernel, call, call + dur, corr, tid).stack_id = static_cast<uint32_t>(pick(7));
          DeviceRecord& k = b.Kernel(kernels[pick(3)], gpu, gpu + 3'000 + pick(30'000), corr++, 7 + pick(2) * 6);
          k.device_id = static_cast<uint32_t>(pick(2));
          if (pick(3) == 0) k.graph_id = 5;
          gpu = k.end_ns;
          break;
        }
        case 2: {  // a launch only CUPTI saw
          DeviceRecord& a = b.Record(DeviceKind::kRuntimeApi, call, call + dur, corr);
          a.name_id = b.Str("cudaLaunchKernel");
          gpu = b.Kernel(kernels[pick(3)], gpu, gpu + 5'000, corr++).end_ns;
          break;
        }
        case 3: {
          bool blocking = pick(2);
          HostEvent& c = b.Call(blocking ? ApiId::cudaMemcpy : ApiId::cudaMemcpyAsync, call, call + dur, corr, tid);
          c.copy_kind = pick(2) ? 2 : 1;
          c.bytes = 4096 << pick(8);
          c.stack_id = static_cast<uint32_t>(pick(7));
          bool d2h = c.copy_kind == 2;
          gpu = b.Copy(d2h ? kCuptiDtoH : kCuptiHtoD, d2h ? kCuptiDevice : (pick(2) ? kCuptiPageable : kCuptiPinned),
                       d2h ? (pick(2) ? kCuptiPageable : kCuptiPinned) : kCuptiDevice, c.bytes, gpu, gpu + 2'000, corr++)
                    .end_ns;
          break;
        }
        case 4: {
          b.Call(ApiId::cudaMemsetAsync, call, call + dur, corr, tid).bytes = 512;
          DeviceRecord& m = b.Record(DeviceKind::kMemset, gpu, gpu + 1'000, corr++);
          m.bytes = 512;
          gpu = m.end_ns;
          break;
        }
        case 5: {
          uint64_t end = std::max(call + dur, gpu);
          b.Call(pick(2) ? ApiId::cudaDeviceSynchronize : ApiId::cudaStreamSynchronize, call, end, corr, tid).stack_id =
              static_cast<uint32_t>(pick(7));
          b.Record(DeviceKind::kSync, call + 500, end, corr++).cbid = static_cast<uint32_t>(pick(5));
          dur = end - call;
          break;
        }
        case 6: {
          bool alloc = live == 0 || pick(2);
          b.Call(alloc ? ApiId::cudaMalloc : ApiId::cudaFree, call, call + dur, 0, tid).stack_id =
              static_cast<uint32_t>(pick(7));
          live = alloc ? live + 1024 : live - 1024;
          b.Alloc(call + dur / 2, 0x1000 + i, alloc ? 1024 : -1024, live);
          break;
        }
        case 7:  // a record without a correlation id
          b.Record(DeviceKind::kDriverApi, call, call + dur, 0).name_id = b.Str("cuCtxSynchronize");
          break;
        default:
          b.Call(ApiId::cudaStreamWaitEvent, call, call + dur, corr++, tid);
          break;
      }
      t = call + dur + pick(3) * 2'000;
    }
    t = std::max(t, gpu) + pick(2) * 1'500'000;
    b.Step(10 + step, step_start, t);
  }
  return b.Build();
}

TEST_CASE("the summary of a compact window is the summary of the window, byte for byte", "[compact]") {
  std::set<std::string> findings;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Window w = RandomWindow(seed);
    Summary full = ComputeSummary(w);
    Summary compact = ComputeSummary(CompactWindow::From(w));
    INFO("seed " << seed);
    CHECK(RenderSummary(compact) == RenderSummary(full));
    for (const Finding& f : full.findings) findings.insert(f.id);
    CHECK_FALSE(full.call_sites.empty());
  }
  // The windows reach the findings that read the records.
  for (const char* id : {"sync-in-step", "d2h-copy-in-step", "pageable-copy", "allocator-churn", "idle-gaps"}) {
    INFO(id);
    CHECK(findings.count(id) == 1);
  }
}

template <typename A, typename B>
void CheckSameHost(const A& a, const B& b) {
  CHECK(a.start_ns == b.start_ns);
  CHECK(a.end_ns == b.end_ns);
  CHECK(a.bytes == b.bytes);
  CHECK(a.correlation_id == b.correlation_id);
  CHECK(a.tid == b.tid);
  CHECK(a.stack_id == b.stack_id);
  CHECK(a.api == b.api);
  CHECK(a.copy_kind == b.copy_kind);
}

// CheckSameHost's shape for device records: the fields differ.
template <typename A, typename B>
void CheckSameDevice(const A& a, const B& b) {
  CHECK(a.start_ns == b.start_ns);
  CHECK(a.end_ns == b.end_ns);
  CHECK(a.bytes == b.bytes);
  CHECK(a.correlation_id == b.correlation_id);
  CHECK(a.name_id == b.name_id);
  CHECK(a.stream_id == b.stream_id);
  CHECK(a.device_id == b.device_id);
  CHECK(a.graph_id == b.graph_id);
  CHECK(a.kind == b.kind);
  CHECK(a.copy_kind == b.copy_kind);
  CHECK(a.src_kind == b.src_kind);
  CHECK(a.dst_kind == b.dst_kind);
}

TEST_CASE("a trace read compact holds the records read in full, in the same order, whatever the event order",
          "[compact]") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    json trace = testing::TraceJson(RandomWindow(seed));
    // Events in a random order, with some start times tied: the readers
    // sort by start, ties in file order.
    std::vector<json> events(trace["traceEvents"].begin(), trace["traceEvents"].end());
    std::shuffle(events.begin(), events.end(), std::mt19937_64(seed));
    trace["traceEvents"] = events;
    std::string text = trace.dump();
    std::vector<Window> full;
    std::vector<CompactWindow> compact;
    std::string error;
    REQUIRE(tool::ReadWindowsFromBytes(text, &full, &error));
    REQUIRE(tool::ReadWindowsFromBytes(text, &compact, &error));
    REQUIRE(full.size() == 1);
    REQUIRE(compact.size() == 1);
    const Window& f = full[0];
    const CompactWindow& c = compact[0];
    INFO("seed " << seed);
    REQUIRE(c.host_events.size() == f.host_events.size());
    REQUIRE(c.device_records.size() == f.device_records.size());
    CHECK(f.device_records.size() > 20);
    for (size_t i = 0; i < f.host_events.size(); ++i) CheckSameHost(c.host_events[i], f.host_events[i]);
    for (size_t i = 0; i < f.device_records.size(); ++i) CheckSameDevice(c.device_records[i], f.device_records[i]);
    CHECK(c.strings == f.strings);
    CHECK(RenderSummary(ComputeSummary(c)) == RenderSummary(ComputeSummary(f)));
  }
}

TEST_CASE("chunked storage keeps every element across chunk boundaries", "[compact]") {
  ChunkedVector<uint64_t> v;
  CHECK(v.empty());
  const size_t n = 3 * ChunkedVector<uint64_t>::kChunkSize + 17;
  for (size_t i = 0; i < n; ++i) v.push_back(i * 7);
  REQUIRE(v.size() == n);
  for (size_t i = 0; i < n; ++i) REQUIRE(v[i] == i * 7);
  size_t i = 0;
  for (uint64_t x : v) REQUIRE(x == 7 * i++);
  CHECK(i == n);
  CHECK(v.back() == (n - 1) * 7);
  v.clear();
  CHECK(v.size() == 0);
}

}  // namespace
}  // namespace prof
