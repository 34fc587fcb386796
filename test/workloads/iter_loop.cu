// Loops with a known iteration structure, for PROF_STEP=auto and capture
// ranges (see README.md). At the start of each iteration the program writes
// `{"type":"iteration","index":i,"pid":P}` to the simulated stack's truth log
// through simhub_truth_line (found with dlopen(RTLD_NOLOAD) in the loaded
// libcuda.so.1): not a CUDA call, so neither libprof's wrappers nor CUPTI
// see it, and the event stream is the same with and without it. On a real
// driver the symbol is absent and nothing is written.
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <string>

namespace {

__global__ void fwd_a(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
__global__ void fwd_b(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 0.5f; }
__global__ void bwd_a(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] -= 1.0f; }
__global__ void bwd_b(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
__global__ void optimizer_step(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 0.0f; }
__global__ void loss_reduce(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += x[0]; }
__global__ void dynamic_shape(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 3.0f; }
__global__ void rare_fixup(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = -x[i]; }
__global__ void side_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 0.25f; }
template <int K>
__global__ void autotune(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += K; }
template <int K>
__global__ void op(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += K; }

constexpr int kN = 1 << 16;
constexpr int kBlocks = kN / 256;

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t err_ = (call);                                                   \
    if (err_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorName(err_));         \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

void (*g_truth)(const char*) = nullptr;
bool g_truth_looked = false;

void MarkIteration(int i) {
  if (!g_truth_looked) {
    g_truth_looked = true;
    if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      g_truth = reinterpret_cast<void (*)(const char*)>(dlsym(h, "simhub_truth_line"));
    }
  }
  if (g_truth == nullptr) return;
  char line[128];
  snprintf(line, sizeof(line), "{\"type\":\"iteration\",\"index\":%d,\"pid\":%d}", i, static_cast<int>(getpid()));
  g_truth(line);
}

// Deterministic pseudo-random numbers (the same run every time): splitmix64,
// whose output does not repeat within any run (an LCG's low bits repeat
// every few thousand draws, a period PROF_STEP=auto rightly finds).
uint64_t g_rng = 12345;
uint32_t Rand() {
  uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

double Seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Bufs {
  float* dev = nullptr;
  float* side = nullptr;
  float* host = nullptr;
  cudaStream_t s = nullptr, side_stream = nullptr;
  cudaEvent_t ready = nullptr, done = nullptr;
};

void Forward(const Bufs& b) {
  fwd_a<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
  fwd_b<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
}
void Backward(const Bufs& b) {
  bwd_b<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
  bwd_a<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
}
void LoadBatch(const Bufs& b) { CHECK(cudaMemcpyAsync(b.dev, b.host, 4096, cudaMemcpyHostToDevice, b.s)); }
void ReadLoss(const Bufs& b) {
  loss_reduce<<<1, 256, 0, b.s>>>(b.dev, kN);
  CHECK(cudaMemcpyAsync(b.host, b.dev, 4, cudaMemcpyDeviceToHost, b.s));
  CHECK(cudaStreamSynchronize(b.s));
}

// One training iteration of the plain loop.
void TrainIteration(const Bufs& b) {
  LoadBatch(b);
  Forward(b);
  Backward(b);
  optimizer_step<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
  ReadLoss(b);
}

// Random kernels from a large set in random order, copies now and then: no period.
void NoLoopChunk(const Bufs& b) {
  using K = void (*)(float*, int);
  static const K kKernels[] = {op<0>,  op<1>,  op<2>,  op<3>,  op<4>,  op<5>,  op<6>,  op<7>,  op<8>,  op<9>,  op<10>,
                               op<11>, op<12>, op<13>, op<14>, op<15>, op<16>, op<17>, op<18>, op<19>, op<20>, op<21>,
                               op<22>, op<23>, op<24>, op<25>, op<26>, op<27>, op<28>, op<29>, op<30>, op<31>};
  for (int k = 0; k < 16; ++k) {
    kKernels[Rand() % 32]<<<1 + Rand() % 64, 64, 0, b.s>>>(b.dev, kN);
    if (Rand() % 7 == 0) CHECK(cudaMemcpyAsync(b.dev, b.host, 64 + Rand() % 512, cudaMemcpyHostToDevice, b.s));
    if (Rand() % 11 == 0) CHECK(cudaStreamSynchronize(b.s));
  }
}

int Usage() {
  fprintf(stderr,
          "usage: iter_loop [--mode simple|two-streams|accum4|eval10|extra10|varying|long-first|no-loop|nvtx|"
          "profiler-api] [--iters N] [--seconds S] [--range-every N] [--loader-us U] [--chunk-gap-us U]\n"
          "                 [--range-api runtime|driver] [--nvtx-style push|start-end|domain] [--nested] [--leave-open]\n");
  return 2;
}

// The marked regions of the nvtx and profiler-api modes.
struct Ranges {
  std::string api = "runtime";   // profiler-api: cudaProfilerStart/Stop or cuProfilerStart/Stop
  std::string style = "push";    // nvtx: push/pop, start/end, or push/pop in the domain "train"
  bool nested = false;           // a second begin of the same kind inside each region (iteration 6)
  bool leave_open = false;       // the last region is never ended
  nvtxDomainHandle_t domain = nullptr;
  nvtxRangeId_t id = 0, inner_id = 0;

  void Profiler(bool start) {
    if (api == "driver") {
      CUresult r = start ? cuProfilerStart() : cuProfilerStop();
      if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuProfiler%s failed: %d\n", start ? "Start" : "Stop", static_cast<int>(r));
        exit(1);
      }
    } else {
      CHECK(start ? cudaProfilerStart() : cudaProfilerStop());
    }
  }
  nvtxRangeId_t Begin(const char* name) {
    if (style == "start-end") return nvtxRangeStartA(name);
    if (style == "domain") {
      if (domain == nullptr) domain = nvtxDomainCreateA("train");
      nvtxEventAttributes_t a = {};
      a.version = NVTX_VERSION;
      a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
      a.messageType = NVTX_MESSAGE_TYPE_ASCII;
      a.message.ascii = name;
      nvtxDomainRangePushEx(domain, &a);
      return 0;
    }
    nvtxRangePushA(name);
    return 0;
  }
  void End(nvtxRangeId_t range) {
    if (style == "start-end") nvtxRangeEnd(range);
    else if (style == "domain") nvtxDomainRangePop(domain);
    else nvtxRangePop();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "simple";
  int iters = 120;
  double seconds = 0;
  int range_every = 20;
  int loader_us = 300;
  int chunk_gap_us = 0;  // no-loop: host time between chunks (0: back to back)
  Ranges marks;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) mode = argv[++i];
    else if (a == "--iters" && i + 1 < argc) iters = atoi(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = atof(argv[++i]);
    else if (a == "--range-every" && i + 1 < argc) range_every = atoi(argv[++i]);
    else if (a == "--loader-us" && i + 1 < argc) loader_us = atoi(argv[++i]);
    else if (a == "--chunk-gap-us" && i + 1 < argc) chunk_gap_us = atoi(argv[++i]);
    else if (a == "--range-api" && i + 1 < argc) marks.api = argv[++i];
    else if (a == "--nvtx-style" && i + 1 < argc) marks.style = argv[++i];
    else if (a == "--nested") marks.nested = true;
    else if (a == "--leave-open") marks.leave_open = true;
    else return Usage();
  }
  static const char* const kModes[] = {"simple", "two-streams", "accum4", "eval10", "extra10", "varying",
                                       "long-first", "no-loop", "nvtx", "profiler-api"};
  bool known = false;
  for (const char* m : kModes) known |= mode == m;
  if (!known || iters <= 0 || range_every <= 0) return Usage();
  if ((marks.api != "runtime" && marks.api != "driver") ||
      (marks.style != "push" && marks.style != "start-end" && marks.style != "domain")) {
    return Usage();
  }

  Bufs b;
  CHECK(cudaMalloc(&b.dev, kN * sizeof(float)));
  CHECK(cudaMalloc(&b.side, kN * sizeof(float)));
  CHECK(cudaMallocHost(&b.host, 4096));
  memset(b.host, 0, 4096);
  CHECK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b.side_stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&b.ready, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming));

  double start = Seconds();
  int ranges = 0;
  for (int i = 0; mode == "no-loop" ? (Seconds() - start < seconds || i < iters) : i < iters; ++i) {
    MarkIteration(i);
    if (loader_us > 0 && mode != "no-loop") usleep(loader_us);  // the data loader's wait
    if (mode == "simple") {
      TrainIteration(b);
    } else if (mode == "two-streams") {
      LoadBatch(b);
      CHECK(cudaEventRecord(b.ready, b.s));
      CHECK(cudaStreamWaitEvent(b.side_stream, b.ready, 0));
      Forward(b);
      side_kernel<<<kBlocks, 256, 0, b.side_stream>>>(b.side, kN);
      Backward(b);
      side_kernel<<<kBlocks, 256, 0, b.side_stream>>>(b.side, kN);
      CHECK(cudaEventRecord(b.done, b.side_stream));
      CHECK(cudaStreamWaitEvent(b.s, b.done, 0));
      optimizer_step<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
      ReadLoss(b);
    } else if (mode == "accum4") {
      for (int micro = 0; micro < 4; ++micro) {
        LoadBatch(b);
        Forward(b);
        Backward(b);
      }
      optimizer_step<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
      ReadLoss(b);
    } else if (mode == "eval10") {
      TrainIteration(b);
      if (i % 10 == 9) {  // evaluation on resident validation data
        Forward(b);
        Forward(b);
        CHECK(cudaMemcpyAsync(b.host, b.side, 64, cudaMemcpyDeviceToHost, b.s));
        CHECK(cudaStreamSynchronize(b.s));
      }
    } else if (mode == "extra10") {
      LoadBatch(b);
      Forward(b);
      if (Rand() % 10 == 0) rare_fixup<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
      Backward(b);
      optimizer_step<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
      ReadLoss(b);
    } else if (mode == "varying") {
      LoadBatch(b);
      Forward(b);
      int r = 3 + static_cast<int>(Rand() % 5);
      for (int k = 0; k < r; ++k) dynamic_shape<<<1 + Rand() % kBlocks, 256, 0, b.s>>>(b.dev, kN);
      Backward(b);
      optimizer_step<<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
      ReadLoss(b);
    } else if (mode == "long-first") {
      if (i < 3) {
        // Warm-up: autotuning candidates, allocator growth, a slow first iteration.
        if (i == 0) usleep(200000);
        autotune<1><<<kBlocks, 256, 0, b.s>>>(b.dev, kN);
        autotune<2><<<kBlocks, 128, 0, b.s>>>(b.dev, kN);
        autotune<3><<<kBlocks, 64, 0, b.s>>>(b.dev, kN);
        CHECK(cudaDeviceSynchronize());
      }
      TrainIteration(b);
    } else if (mode == "no-loop") {
      NoLoopChunk(b);
      if (chunk_gap_us > 0) usleep(chunk_gap_us);
    } else if (mode == "nvtx" || mode == "profiler-api") {
      // A marked region every range_every iterations: iterations k*N+5 .. k*N+7
      // (--leave-open: the last region is never ended; --nested: a second
      // begin of the same name/kind inside it, around iteration 6).
      int in = i % range_every;
      bool last_region = i / range_every == (iters - 1) / range_every;
      bool nvtx = mode == "nvtx";
      if (in == 5) {
        if (nvtx) marks.id = marks.Begin("profile_region");
        else marks.Profiler(/*start=*/true);
        ++ranges;
      }
      if (in == 6 && marks.nested) {
        if (nvtx) marks.inner_id = marks.Begin("profile_region");
        else marks.Profiler(/*start=*/true);  // CUDA: a start while started changes nothing
      }
      TrainIteration(b);
      if (in == 6 && marks.nested && nvtx) marks.End(marks.inner_id);
      if (in == 7 && !(marks.leave_open && last_region)) {
        if (nvtx) marks.End(marks.id);
        else marks.Profiler(/*start=*/false);
      }
    }
  }
  CHECK(cudaDeviceSynchronize());
  printf("done mode=%s iterations=%d ranges=%d\n", mode.c_str(), iters, ranges);
  return 0;
}
