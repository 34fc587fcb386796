// The interposed wrappers' own cost, in process: the wrapper objects of
// collectors/interpose are linked into this binary, and each wrapper's "real"
// function is replaced (SetRealFunctionForTest) by a do-nothing function in
// a shared library of its own (null_cudart.cpp). Every variant calls through
// a function pointer, as a program calls libcudart through its PLT, so
//
//   bare      = pointer -> do-nothing function
//   agent     = pointer -> wrapper -> pointer -> do-nothing function
//
// and the difference is what the agent adds per call. Variants interleave
// round by round (harness.h); figures are medians of per-round differences.
//
//   wrapper_idle_ns     cudaLaunchKernel, no window recording (hot bits 0)
//   wrapper_record_ns   cudaLaunchKernel while a window records: clock
//                       reads, kernel-name lookup, one HostEvent appended
//   alloc_pair_ns       cudaMalloc + cudaFree with allocator tracking on
//                       (always on while the agent runs), not recording
//   alloc_pair_record_ns  the same while a window records (samples + events)
#include <cuda_runtime_api.h>
#include <x86intrin.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "model/api_ids.h"
#include "base/clock.h"
#include "base/hot_state.h"
#include "base/kernel_registry.h"
#include "agent/runtime/runtime.h"
#include "agent/steps/auto_step.h"
#include "collectors/interpose/real_functions.h"
#include "test/bench/harness.h"
#include "test/bench/null_cudart.h"

namespace prof::bench {
namespace {

using LaunchFn = cudaError_t (*)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
using MallocFn = cudaError_t (*)(void**, size_t);
using FreeFn = cudaError_t (*)(void*);

// volatile: the compiler must load the pointer and make an indirect call in
// every variant alike, and cannot inline either side.
LaunchFn volatile g_bare_launch = &bench_null_launch;
LaunchFn volatile g_wrapped_launch = &cudaLaunchKernel;
MallocFn volatile g_bare_malloc = &bench_null_malloc;
FreeFn volatile g_bare_free = &bench_null_free;
MallocFn volatile g_wrapped_malloc = &cudaMalloc;
FreeFn volatile g_wrapped_free = &cudaFree;

void KernelStub() {}

// The floor, for reference: what DESIGN.md allows a wrapper while nothing
// records (load the real pointer, one relaxed load of the hot bits, a
// branch, a tail call), written by hand. Not the agent's code.
std::atomic<LaunchFn> g_floor_real{&bench_null_launch};
__attribute__((noinline)) cudaError_t FloorSlow(const void*, dim3, dim3, void**, size_t, cudaStream_t) {
  return cudaErrorUnknown;
}
__attribute__((noinline)) cudaError_t FloorLaunch(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t st) {
  LaunchFn real = g_floor_real.load(std::memory_order_relaxed);
  if (__builtin_expect((LoadHotBits() & kHotRecording) == 0, 1)) return real(f, g, b, a, sh, st);
  return FloorSlow(f, g, b, a, sh, st);
}
LaunchFn volatile g_floor_launch = &FloorLaunch;

void Launches(LaunchFn volatile& fn, uint64_t n) {
  const void* stub = reinterpret_cast<const void*>(&KernelStub);
  auto stream = reinterpret_cast<cudaStream_t>(0x10);
  for (uint64_t i = 0; i < n; ++i) {
    cudaError_t r = fn(stub, dim3(128), dim3(256), nullptr, 0, stream);
    DoNotOptimize(r);
  }
}

void AllocPairs(MallocFn volatile& m, FreeFn volatile& f, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    void* p = nullptr;
    cudaError_t r = m(&p, 4096);
    DoNotOptimize(r);
    r = f(p);
    DoNotOptimize(r);
  }
}

// A runtime like the agent's, without a session: hooks find it, so
// recording appends to real per-thread buffers and allocations reach the
// real live table. Leaked on purpose (wrappers may run until exit).
Runtime* InstallBenchRuntime() {
  auto* rt = new Runtime();
  rt->buffers.Init(rt->config.buffer_bytes);  // default PROF_BUFFER_MB
  InstallRuntime(rt);
  return rt;
}

void SetBits(uint32_t bits) {
  ClearHotBits(~0u);
  SetHotBits(bits);
}

int Main(int argc, char** argv) {
  Options opt = ParseOptions(argc, argv);
  int cpu = PinToOneCpu(opt.pin);
  const int rounds = opt.rounds > 0 ? opt.rounds : (opt.smoke ? 2 : 301);
  const uint64_t launches = opt.smoke ? 2'000 : 20'000;
  const uint64_t pairs = opt.smoke ? 1'000 : 5'000;

  interpose::SetRealFunctionForTest(ApiId::cudaLaunchKernel, reinterpret_cast<void*>(&bench_null_launch));
  interpose::SetRealFunctionForTest(ApiId::cudaMalloc, reinterpret_cast<void*>(&bench_null_malloc));
  interpose::SetRealFunctionForTest(ApiId::cudaFree, reinterpret_cast<void*>(&bench_null_free));
  // Stored at run time (from a volatile) so the compiler cannot fold it.
  g_floor_real.store(g_bare_launch, std::memory_order_relaxed);
  Runtime* rt = InstallBenchRuntime();
  Kernels().Insert(reinterpret_cast<const void*>(&KernelStub), 1);
  // Buffers hold every recorded event until a window is collected: empty
  // them before each run so no run ever meets a full pool and drops.
  auto drain = [rt] { rt->buffers.Discard(~uint64_t{0}); };

  std::vector<Variant> launch = {
      {"bare", [](uint64_t n) { Launches(g_bare_launch, n); }, [] { SetBits(0); }},
      {"idle", [](uint64_t n) { Launches(g_wrapped_launch, n); }, [] { SetBits(0); }},
      {"record", [](uint64_t n) { Launches(g_wrapped_launch, n); }, [drain] { drain(); SetBits(kHotRecording); }},
      {"floor", [](uint64_t n) { Launches(g_floor_launch, n); }, [] { SetBits(0); }},
  };
  // PROF_STEP=auto while it is still looking: each launch leaves the fast
  // path and appends one token to a fresh tape (nothing decides here: the
  // analysis runs on the agent thread, which a benchmark has none of).
  auto detect = [rt, launches] {
    rt->config.step_source = StepSource::kAuto;
    rt->auto_step = std::make_unique<AutoStep>(launches + 1024, nullptr, nullptr);
    SetBits(kHotLaunchMarker | kHotSyncMarker | kHotCopyMarker);
  };
  launch.push_back({"auto_detect", [](uint64_t n) { Launches(g_wrapped_launch, n); }, detect});
  Samples s = Interleave(launch, rounds, launches);
  SetBits(0);
  rt->config.step_source = StepSource::kTime;
  std::string where = cpu >= 0 ? "pinned to cpu " + std::to_string(cpu) : "not pinned";
  Stats bare = Summarize(s[0]);
  EmitFigure("wrapper_idle_ns", Difference(s, 0, 1), "ns/call",
             "cudaLaunchKernel; bare call " + std::to_string(bare.median).substr(0, 4) + " ns; " + where);
  EmitFigure("wrapper_record_ns", Difference(s, 0, 2), "ns/call", "cudaLaunchKernel, one HostEvent per call");
  EmitFigure("auto_detect_ns", Difference(s, 0, 4), "ns/event",
             "PROF_STEP=auto looking for the loop: cudaLaunchKernel with its token appended to the tape (vs bare)");
  EmitFigure("auto_detect_over_idle_ns", Difference(s, 1, 4), "ns/event", "the same, over the idle wrapper");
  EmitFigure("wrapper_floor_ns", Difference(s, 0, 3), "ns/call",
             "hand-written minimal wrapper (load, test, tail call): the floor on this machine");

  std::vector<Variant> alloc = {
      {"bare", [](uint64_t n) { AllocPairs(g_bare_malloc, g_bare_free, n); }, [] { SetBits(0); }},
      {"tracked", [](uint64_t n) { AllocPairs(g_wrapped_malloc, g_wrapped_free, n); },
       [] { SetBits(kHotAllocTracking); }},
      {"recorded", [](uint64_t n) { AllocPairs(g_wrapped_malloc, g_wrapped_free, n); },
       [rt, drain] {
         drain();
         uint64_t dropped = 0;
         rt->allocs.TakeSamples(0, ~uint64_t{0}, &dropped);  // keep the sample log from filling
         SetBits(kHotAllocTracking | kHotRecording);
       }},
  };
  s = Interleave(alloc, rounds, pairs);
  SetBits(0);
  EmitFigure("alloc_pair_ns", Difference(s, 0, 1), "ns/pair", "cudaMalloc+cudaFree, live table kept, not recording");
  EmitFigure("alloc_pair_record_ns", Difference(s, 0, 2), "ns/pair", "the same while a window records");

  // For the breakdown: what the two clock reads of a recorded call cost.
  std::vector<Variant> clock = {
      {"empty", [](uint64_t n) { for (uint64_t i = 0; i < n; ++i) DoNotOptimize(i); }, nullptr},
      {"now", [](uint64_t n) { for (uint64_t i = 0; i < n; ++i) DoNotOptimize(NowNs()); }, nullptr},
  };
  s = Interleave(clock, rounds, launches);
  EmitFigure("clock_read_ns", Difference(s, 0, 1), "ns/read", "NowNs() (clock_gettime, vDSO)");
  // What a raw TSC read would cost instead (the cheaper clock a fix could use).
  std::vector<Variant> tsc = {
      {"empty", [](uint64_t n) { for (uint64_t i = 0; i < n; ++i) DoNotOptimize(i); }, nullptr},
      {"rdtsc", [](uint64_t n) { for (uint64_t i = 0; i < n; ++i) DoNotOptimize(__rdtsc()); }, nullptr},
  };
  s = Interleave(tsc, rounds, launches);
  EmitFigure("tsc_read_ns", Difference(s, 0, 1), "ns/read", "__rdtsc(), for comparison");
  return 0;
}

}  // namespace
}  // namespace prof::bench

int main(int argc, char** argv) { return prof::bench::Main(argc, argv); }
