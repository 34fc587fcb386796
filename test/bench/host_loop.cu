// The host-limited loop of docs/performance.md (`host_*`, `cg_*`): per step
// an NVTX range around 4 launches of ~100 ns kernels on two streams, a
// device-to-host copy and a stream synchronize; every 4th step a cudaMalloc
// and cudaFree. Built with nvcc -cudart shared, run on the simulated
// libcudart.so.13 with SIM_KERNEL_NS=host_k=100, so the host (the
// application's calls and whatever a profiler adds to them) sets the pace.
//
//   host_loop [--steps N] [--warmup-steps N]
//
// Prints one JSON line about the stepping loop only (start-up, the warm-up
// steps and exit are outside it): wall time, the main thread's CPU time and
// the CPU time of every thread of the process (the profiler's own threads
// included). Under valgrind --tool=callgrind the loop is bracketed by client
// requests (statistics zeroed before it, dumped as part "loop" after it), so
// callgrind.out.<pid>.1 holds the instructions of every thread inside the
// loop and nothing else.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define LOOP_BEGIN() CALLGRIND_ZERO_STATS
#define LOOP_END() CALLGRIND_DUMP_STATS_AT("loop")
#else
#define LOOP_BEGIN() ((void)0)
#define LOOP_END() ((void)0)
#endif

// Four distinct kernels so PROF_STEP=kernel:<regex> can pick the first of a
// step (host_k0) and the summary shows four rows.
__global__ void host_k0(int* p) { if (threadIdx.x == 0) p[0] += 1; }
__global__ void host_k1(int* p) { if (threadIdx.x == 0) p[1] += 1; }
__global__ void host_k2(int* p) { if (threadIdx.x == 0) p[2] += 1; }
__global__ void host_k3(int* p) { if (threadIdx.x == 0) p[3] += 1; }

static long long ClockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int errors = 0;
static void Check(cudaError_t e) { errors += e != cudaSuccess; }

static void Step(int s, int* dev, int* host, cudaStream_t a, cudaStream_t b) {
  nvtxRangePushA("host_step");
  host_k0<<<1, 32, 0, a>>>(dev);
  host_k1<<<1, 32, 0, b>>>(dev);
  host_k2<<<1, 32, 0, a>>>(dev);
  host_k3<<<1, 32, 0, b>>>(dev);
  Check(cudaMemcpyAsync(host, dev, 4 * sizeof(int), cudaMemcpyDeviceToHost, a));
  if (s % 4 == 3) {
    void* scratch = nullptr;
    Check(cudaMalloc(&scratch, 1 << 20));
    Check(cudaFree(scratch));
  }
  Check(cudaStreamSynchronize(a));
  nvtxRangePop();
}

int main(int argc, char** argv) {
  int steps = 100000;
  int warmup = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--warmup-steps") == 0) warmup = std::atoi(argv[i + 1]);
  }
  int* dev = nullptr;
  int* host = nullptr;
  cudaStream_t a = nullptr, b = nullptr;
  if (cudaMalloc(&dev, 64 * sizeof(int)) != cudaSuccess || cudaMallocHost(&host, 64 * sizeof(int)) != cudaSuccess ||
      cudaStreamCreate(&a) != cudaSuccess || cudaStreamCreate(&b) != cudaSuccess) {
    std::fprintf(stderr, "host_loop: setup failed\n");
    return 1;
  }
  // First-call costs (module load, the profiler's lazy lookups) stay out of
  // the loop.
  for (int s = 0; s < warmup; ++s) Step(s, dev, host, a, b);
  Check(cudaDeviceSynchronize());

  LOOP_BEGIN();
  long long t0 = ClockNs(CLOCK_MONOTONIC);
  long long thread0 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  long long proc0 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  for (int s = 0; s < steps; ++s) Step(warmup + s, dev, host, a, b);
  long long proc1 = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  long long thread1 = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  long long t1 = ClockNs(CLOCK_MONOTONIC);
  LOOP_END();

  Check(cudaDeviceSynchronize());
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  cudaFreeHost(host);
  cudaFree(dev);
  std::printf("{\"loop_ns\":%lld,\"loop_cpu_ns\":%lld,\"loop_all_cpu_ns\":%lld,\"steps\":%d,\"launches\":%lld,"
              "\"errors\":%d}\n",
              t1 - t0, thread1 - thread0, proc1 - proc0, steps, 4ll * steps, errors);
  return errors == 0 ? 0 : 1;
}
