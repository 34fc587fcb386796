// A launch-bound "training loop" for the end-to-end benchmark: --steps steps
// of --launches tiny kernel launches each, every step ended by
// cudaDeviceSynchronize (the step marker under PROF_STEP=sync). Built with
// nvcc -cudart shared, so it runs on the simulated libcudart.so.13.
//
// Prints one JSON line: the loop's wall time and the main thread's CPU time
// in it (so the agent's cost on the application thread can be told apart
// from its writer thread's), and the duration of every
// step-ending synchronize summarised (median, max): under the agent the
// synchronize that ends a window also carries the window-end stall; the
// last one (wall and CPU) is reported on its own, for a window that ends
// with the loop.
#include <cuda_runtime.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void tiny(int* out) {
  if (threadIdx.x == 0) out[blockIdx.x] += 1;
}

static long long ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static long long NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Each bench program is one .cu nvcc builds alone: its own argument loop.
int main(int argc, char** argv) {
  int steps = 200;
  int launches = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--launches") == 0) launches = std::atoi(argv[i + 1]);
  }
  int* buf = nullptr;
  if (cudaMalloc(&buf, 1024 * sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "launch_storm: cudaMalloc failed\n");
    return 1;
  }
  cudaDeviceSynchronize();  // not timed: start-up and first-call costs

  std::vector<long long> sync_ns;
  sync_ns.reserve(steps);
  int errors = 0;
  long long last_sync_cpu_ns = 0;
  long last_sync_blocked = 0, last_sync_preempted = 0;
  long long t0 = NowNs();
  long long cpu0 = ThreadCpuNs();
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < launches; ++i) {
      tiny<<<1, 32>>>(buf);
    }
    errors += cudaGetLastError() != cudaSuccess;
    rusage u0{}, u1{};
    getrusage(RUSAGE_THREAD, &u0);
    long long before = NowNs();
    long long before_cpu = ThreadCpuNs();
    errors += cudaDeviceSynchronize() != cudaSuccess;
    last_sync_cpu_ns = ThreadCpuNs() - before_cpu;
    getrusage(RUSAGE_THREAD, &u1);
    // Voluntary: the thread blocked (a lock, a sleep); involuntary: preempted.
    last_sync_blocked = u1.ru_nvcsw - u0.ru_nvcsw;
    last_sync_preempted = u1.ru_nivcsw - u0.ru_nivcsw;
    sync_ns.push_back(NowNs() - before);
  }
  long long loop_ns = NowNs() - t0;
  long long loop_cpu_ns = ThreadCpuNs() - cpu0;
  cudaFree(buf);

  std::vector<long long> sorted = sync_ns;
  std::sort(sorted.begin(), sorted.end());
  long long median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  long long max = sorted.empty() ? 0 : sorted.back();
  long long last = sync_ns.empty() ? 0 : sync_ns.back();
  std::printf("{\"loop_ns\":%lld,\"loop_cpu_ns\":%lld,\"launches\":%lld,\"steps\":%d,\"sync_median_ns\":%lld,\"sync_max_ns\":%lld,\"sync_last_ns\":%lld,\"sync_last_cpu_ns\":%lld,\"sync_last_blocked\":%ld,\"sync_last_preempted\":%ld,\"errors\":%d}\n",
              loop_ns, loop_cpu_ns, static_cast<long long>(steps) * launches, steps, median, max, last, last_sync_cpu_ns, last_sync_blocked, last_sync_preempted, errors);
  return errors == 0 ? 0 : 1;
}
