// NVTX name and thread churn: what PyTorch's emit_nvtx does to a profiler
// (a new range name per operator and sequence number) from short-lived
// threads. Each step: the main thread pushes `step`, then --threads T fresh
// threads each push and pop --names N ranges whose names are all new
// (`s<step>_t<thread>_<i>`), open and end start/end ranges with new names,
// register new strings in a domain and push ranges with them; a memset on
// the main thread; join; pop `step`. Prints the peak RSS before the loop and
// at the end (VmHWM of /proc/self/status).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

long PeakRssKb() {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof line, f) != nullptr) {
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
  }
  fclose(f);
  return kb;
}

int ParseFlag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
  }
  return fallback;
}

void Churn(nvtxDomainHandle_t domain, int step, int thread, int names) {
  char name[64];
  for (int i = 0; i < names; ++i) {
    snprintf(name, sizeof name, "s%d_t%d_%d", step, thread, i);
    nvtxRangePushA(name);
    nvtxRangePop();
    if (i % 8 == 0) {  // start/end ranges, a new name each
      snprintf(name, sizeof name, "s%d_t%d_%d_se", step, thread, i);
      nvtxRangeEnd(nvtxRangeStartA(name));
    }
    if (i % 16 == 0) {  // a newly registered string per range
      snprintf(name, sizeof name, "s%d_t%d_%d_reg", step, thread, i);
      nvtxEventAttributes_t a{};
      a.version = NVTX_VERSION;
      a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
      a.message.registered = nvtxDomainRegisterStringA(domain, name);
      nvtxDomainRangePushEx(domain, &a);
      nvtxDomainRangePop(domain);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = ParseFlag(argc, argv, "--steps", 100);
  const int threads = ParseFlag(argc, argv, "--threads", 8);
  const int names = ParseFlag(argc, argv, "--names", 1000);
  if (steps <= 0 || threads <= 0 || names < 0) {
    fprintf(stderr, "usage: name_churn [--steps S] [--threads T] [--names N]\n");
    return 2;
  }
  void* scratch = nullptr;
  if (cudaMalloc(&scratch, 4096) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  nvtxDomainHandle_t domain = nvtxDomainCreateA("name_churn");
  printf("baseline_peak_rss_kb=%ld\n", PeakRssKb());
  for (int s = 0; s < steps; ++s) {
    nvtxRangePushA("step");
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(Churn, domain, s, t, names);
    cudaMemsetAsync(scratch, 0, 4096, 0);
    for (std::thread& t : pool) t.join();
    cudaStreamSynchronize(0);
    nvtxRangePop();
  }
  cudaFree(scratch);
  printf("peak_rss_kb=%ld\n", PeakRssKb());
  printf("done steps=%d threads=%d names=%d\n", steps, threads, names);
  return 0;
}
