// Window end: how long the application thread stalls in the step marker that
// ends a window holding 1M host events, with the agent's real Session,
// EventBuffers, AllocTracker (10k live allocations, snapshotted at window
// end) and WriterThread. The device collector is a no-op stand-in (its
// Pause/BeginRecord are the CUPTI collector's business; the end-to-end run
// on the simulated stack includes them).
//
// Each round: the application thread appends 1M HostEvents to its buffer
// (the window), then calls Session::Step; the figure is Step's duration.
// The writer thread then seals the window (reported separately: it is off
// the application thread) and the next round waits for it to finish.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "agent/runtime/runtime.h"
#include "base/device_collector.h"
#include "agent/session/session.h"
#include "agent/session/writer.h"
#include "test/bench/harness.h"

namespace prof::bench {
namespace {

class NullCollector final : public DeviceCollector {
 public:
  void Attach(const Config&) override {}
  void BeginRecord(uint64_t) override {}
  void Pause() override {}
  void Finish() override {}
  void CollectWindow(uint64_t, uint64_t, uint64_t, Window* out) override { out->meta.cupti_mode = "none (bench)"; }
  void OnExit() override {}
  std::string Mode() const override { return "none (bench)"; }
};

int Main(int argc, char** argv) {
  Options opt = ParseOptions(argc, argv);
  const uint64_t events = opt.smoke ? 10'000 : 1'000'000;
  const int rounds = opt.rounds > 0 ? opt.rounds : (opt.smoke ? 2 : 15);
  const int live_allocations = opt.smoke ? 100 : 10'000;

  Config config;
  config.step_source = StepSource::kManual;
  config.wait = 0;
  config.warmup = 0;
  config.active = 1;  // every step is a window
  config.repeat = 0;
  config.flush_timeout_ns = 0;  // nothing to wait for: the collector is a stand-in

  auto* rt = new Runtime();  // leaked: as in the agent, it outlives everything
  rt->config = config;
  rt->buffers.Init(config.buffer_bytes);
  NullCollector collector;
  std::atomic<uint64_t> sealed_events{0};
  std::atomic<uint64_t> sealed_at_ns{0};
  WriterDeps deps;
  deps.buffers = &rt->buffers;
  deps.allocs = &rt->allocs;
  deps.collector = &collector;
  deps.nvtx = &rt->nvtx;
  deps.sink = [&](const Window& w, std::string*, std::vector<std::string>*) {
    sealed_events.store(w.host_events.size());
    sealed_at_ns.store(NowNs());
    return true;
  };
  WriterThread writer(std::move(deps));
  InstallRuntime(rt);
  for (int i = 0; i < live_allocations; ++i) {
    rt->allocs.OnAlloc(0x1000000ull * (i + 1), 1 << 20, 0, MemKind::kDevice, ApiId::cudaMalloc, 1, NowNs(), false);
  }
  WindowMeta meta;
  meta.name = "bench";
  Session session(config, &collector, &writer, &rt->allocs, meta, NowNs());

  std::vector<double> stall_ns, stall_cpu_ns, seal_ms;
  uint64_t missing = 0;
  long voluntary = 0, involuntary = 0;
  for (int r = -1; r < rounds; ++r) {
    HostEvent e{};
    e.api = static_cast<uint16_t>(ApiId::cudaLaunchKernel);
    e.tid = 1;
    for (uint64_t i = 0; i < events; ++i) {
      e.start_ns = NowNs();
      e.end_ns = e.start_ns + 1;
      e.correlation_id = static_cast<uint32_t>(i);
      rt->buffers.Append(e);
    }
    rusage u0{}, u1{};
    getrusage(RUSAGE_THREAD, &u0);
    uint64_t c0 = ThreadCpuNs();
    uint64_t t0 = NowNs();
    session.Step(NowNs());
    uint64_t t1 = NowNs();
    uint64_t c1 = ThreadCpuNs();
    getrusage(RUSAGE_THREAD, &u1);
    writer.Drain(60'000'000'000ull);
    if (r < 0) continue;  // the first window also starts the writer thread
    stall_ns.push_back(static_cast<double>(t1 - t0));
    stall_cpu_ns.push_back(static_cast<double>(c1 - c0));
    // Voluntary switches: the thread blocked (a lock); involuntary: it was
    // preempted (the woken writer or another process took the core).
    voluntary += u1.ru_nvcsw - u0.ru_nvcsw;
    involuntary += u1.ru_nivcsw - u0.ru_nivcsw;
    seal_ms.push_back(static_cast<double>(sealed_at_ns.load() - t1) / 1e6);
    if (sealed_events.load() != events) ++missing;
  }
  Stats stall = Summarize(stall_ns);
  std::string note = std::to_string(events) + " host events, " + std::to_string(live_allocations) +
                     " live allocations; worst " + std::to_string(stall.n ? *std::max_element(stall_ns.begin(), stall_ns.end()) / 1e3 : 0).substr(0, 6) +
                     " us; Session::max_window_end_stall_ns " + std::to_string(session.max_window_end_stall_ns() / 1000) + " us";
  Stats stall_ms = stall;
  stall_ms.median /= 1e6, stall_ms.p10 /= 1e6, stall_ms.p90 /= 1e6;
  EmitFigure("window_end_stall_ms", stall_ms, "ms", note);
  // Wall minus CPU is time the application thread was runnable but not
  // running (the writer thread, woken by the hand-off, or another process
  // took the core): on a machine with a free core it is not there.
  Stats cpu = Summarize(stall_cpu_ns);
  cpu.median /= 1e6, cpu.p10 /= 1e6, cpu.p90 /= 1e6;
  EmitFigure("window_end_stall_cpu_ms", cpu, "ms",
             "CPU time of the application thread in that step marker; over all rounds " + std::to_string(voluntary) +
                 " voluntary (blocked) and " + std::to_string(involuntary) + " involuntary (preempted) switches");
  EmitFigure("window_seal_ms", Summarize(seal_ms), "ms", "writer thread (not the application's): seal " + std::to_string(events) + " events");
  if (missing != 0) {
    std::fprintf(stderr, "bench_window_end: %llu windows did not hold every event\n",
                 static_cast<unsigned long long>(missing));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace prof::bench

int main(int argc, char** argv) { return prof::bench::Main(argc, argv); }
