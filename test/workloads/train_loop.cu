// A training-like loop for profiler tests: per step an NVTX range, an H2D
// copy, several kernels on two streams (one templated, one in a namespace,
// so demangling matters), a D2D and a D2H copy, and a stream synchronize.
// Stdout is deterministic (a checksum of the data copied back each step), so
// tests can compare runs with and without the profiler. Flags: README.md.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace model {
// Kernels write only their own scratch buffer, so the data copied back does
// not depend on whether kernels really run (simulator) or not.
__global__ void gemm_tile(float* scratch, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] = in[i] * 2.0f + 1.0f;
}
}  // namespace model

template <typename T>
__global__ void scale_inplace(T* scratch, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] *= factor;
}

__global__ void relu_forward(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && scratch[i] < 0.0f) scratch[i] = 0.0f;
}

__global__ void optimizer_step(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] -= 0.01f * scratch[i];
}

__global__ void tiny_kernel(float* scratch) {
  if (threadIdx.x == 0) scratch[0] += 1.0f;
}

namespace {

struct Options {
  int steps = 10;
  int kernels_per_step = 6;
  bool kernels_given = false;
  bool alloc_in_loop = false;
  bool d2h_mid_step = false;
  bool pageable = false;
  bool tiny = false;
  bool zero_bytes = false;
  bool sync_memset = false;
  int host_sleep_us = 0;
  bool manual_steps = false;
  int exit_at = -1;
  int raise_at = -1;
  int raise_signal = SIGTERM;
  int fork_at = -1;
  int exit_code = 0;
};

void Usage() {
  fprintf(stderr,
          "usage: train_loop [--steps N] [--kernels-per-step K] [--alloc-in-loop] [--d2h-mid-step] [--pageable]\n"
          "                  [--zero-bytes] [--sync-memset]\n"
          "                  [--tiny] [--host-sleep-us U] [--manual-steps] [--exit-at STEP]\n"
          "                  [--raise-at STEP:TERM|INT|<number>] [--fork-at STEP] [--exit-code C]\n");
  exit(2);
}

int ParseInt(const char* text) {
  char* end = nullptr;
  long v = strtol(text, &end, 10);
  if (!end || *end || v < -1000000000L || v > 1000000000L) Usage();
  return static_cast<int>(v);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--steps") o.steps = ParseInt(value());
    else if (a == "--kernels-per-step") { o.kernels_per_step = ParseInt(value()); o.kernels_given = true; }
    else if (a == "--alloc-in-loop") o.alloc_in_loop = true;
    else if (a == "--d2h-mid-step") o.d2h_mid_step = true;
    else if (a == "--pageable") o.pageable = true;
    else if (a == "--tiny") o.tiny = true;
    else if (a == "--zero-bytes") o.zero_bytes = true;
    else if (a == "--sync-memset") o.sync_memset = true;
    else if (a == "--host-sleep-us") o.host_sleep_us = ParseInt(value());
    else if (a == "--manual-steps") o.manual_steps = true;
    else if (a == "--exit-at") o.exit_at = ParseInt(value());
    else if (a == "--fork-at") o.fork_at = ParseInt(value());
    else if (a == "--exit-code") o.exit_code = ParseInt(value());
    else if (a == "--raise-at") {
      std::string spec = value();
      size_t colon = spec.find(':');
      if (colon == std::string::npos) Usage();
      o.raise_at = ParseInt(spec.substr(0, colon).c_str());
      std::string sig = spec.substr(colon + 1);
      o.raise_signal = sig == "TERM" || sig == "SIGTERM" ? SIGTERM
                       : sig == "INT" || sig == "SIGINT" ? SIGINT
                                                         : ParseInt(sig.c_str());
    } else {
      Usage();
    }
  }
  if (o.tiny && !o.kernels_given) o.kernels_per_step = 200;
  if (o.steps < 0 || o.kernels_per_step < 0) Usage();
  return o;
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      fprintf(stderr, "train_loop: %s failed: %s (%d)\n", #call, cudaGetErrorString(err_), \
              static_cast<int>(err_));                                                     \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

constexpr int kElements = 1 << 18;  // 1 MiB of floats per buffer
constexpr int kThreads = 256;

struct Buffers {
  float* host_in;
  float* host_out;
  float* dev_in;
  float* dev_out;
  float* scratch_a;
  float* scratch_b;
  cudaStream_t compute;
  cudaStream_t side;
  cudaEvent_t inputs_ready;
  cudaEvent_t side_done;
};

uint64_t Checksum(const float* data, int n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < static_cast<size_t>(n) * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

void LaunchKernels(const Options& o, Buffers& b) {
  const int blocks = o.tiny ? 1 : kElements / kThreads;
  const int threads = o.tiny ? 32 : kThreads;
  for (int k = 0; k < o.kernels_per_step; ++k) {
    // Even kernels on the compute stream, odd ones on the side stream.
    cudaStream_t s = (k % 2 == 0) ? b.compute : b.side;
    float* scratch = (k % 2 == 0) ? b.scratch_a : b.scratch_b;
    if (o.tiny) {
      tiny_kernel<<<1, threads, 0, s>>>(scratch);
      continue;
    }
    switch (k % 4) {
      case 0: model::gemm_tile<<<blocks, threads, 0, s>>>(scratch, b.dev_in, kElements); break;
      case 1: scale_inplace<float><<<blocks, threads, 0, s>>>(scratch, 0.5f, kElements); break;
      case 2: relu_forward<<<blocks, threads, 0, s>>>(scratch, kElements); break;
      default: optimizer_step<<<blocks, threads, 0, s>>>(scratch, kElements); break;
    }
  }
  CHECK(cudaGetLastError());
}

void RunStep(const Options& o, Buffers& b, int step, const char* who) {
  nvtxRangePushA("train_step");
  for (int i = 0; i < kElements; ++i) b.host_in[i] = static_cast<float>((i * 7 + step * 13) % 1000) * 0.001f;
  float* temp = nullptr;
  if (o.alloc_in_loop) CHECK(cudaMalloc(&temp, 4 << 20));
  CHECK(cudaMemsetAsync(b.scratch_a, 0, kElements * sizeof(float), b.compute));  // "zero the gradients"
  CHECK(cudaMemcpyAsync(b.dev_in, b.host_in, kElements * sizeof(float), cudaMemcpyHostToDevice, b.compute));
  CHECK(cudaEventRecord(b.inputs_ready, b.compute));
  CHECK(cudaStreamWaitEvent(b.side, b.inputs_ready, 0));
  LaunchKernels(o, b);
  if (o.d2h_mid_step) {
    float probe = 0.0f;
    CHECK(cudaMemcpy(&probe, b.dev_in, sizeof probe, cudaMemcpyDeviceToHost));  // a hidden sync inside the step
  }
  if (o.sync_memset) CHECK(cudaMemset(b.scratch_b, 0, kElements * sizeof(float)));  // legacy stream, not Async
  if (o.zero_bytes) {
    // Calls that move nothing: CUDA enqueues no device operation for them.
    CHECK(cudaMemcpy(b.dev_out, b.dev_in, 0, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(b.host_out, b.dev_out, 0, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyAsync(b.dev_in, b.host_in, 0, cudaMemcpyHostToDevice, b.compute));
    CHECK(cudaMemset(b.scratch_a, 0, 0));
    CHECK(cudaMemsetAsync(b.scratch_a, 0, 0, b.compute));
    // 2D and 3D boxes with a zero extent: no byte, no device work.
    CHECK(cudaMemcpy2D(b.dev_out, 256, b.dev_in, 256, 0, 4, cudaMemcpyDeviceToDevice));       // no byte per row
    CHECK(cudaMemcpy2DAsync(b.host_out, 256, b.dev_out, 256, 256, 0, cudaMemcpyDeviceToHost,  // no row
                            b.compute));
    CHECK(cudaMemset2D(b.scratch_a, 256, 0, 256, 0));
    cudaMemcpy3DParms box = {};
    box.srcPtr = make_cudaPitchedPtr(b.dev_in, 256, 64, 4);
    box.dstPtr = make_cudaPitchedPtr(b.dev_out, 256, 64, 4);
    box.extent = make_cudaExtent(64, 4, 0);  // no slice
    box.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaMemcpy3D(&box));
  }
  CHECK(cudaEventRecord(b.side_done, b.side));
  CHECK(cudaStreamWaitEvent(b.compute, b.side_done, 0));
  CHECK(cudaMemcpyAsync(b.dev_out, b.dev_in, kElements * sizeof(float), cudaMemcpyDeviceToDevice, b.compute));
  CHECK(cudaMemcpyAsync(b.host_out, b.dev_out, kElements * sizeof(float), cudaMemcpyDeviceToHost, b.compute));
  CHECK(cudaStreamSynchronize(b.compute));
  if (temp) CHECK(cudaFree(temp));
  if (o.host_sleep_us > 0) usleep(static_cast<useconds_t>(o.host_sleep_us));
  printf("%s step %d checksum %016llx\n", who, step, static_cast<unsigned long long>(Checksum(b.host_out, kElements)));
  nvtxRangePop();
  if (o.manual_steps) {
    // The profiler's manual step marker, if one is loaded: in the global
    // scope (LD_PRELOAD), else in the library CUDA's driver injected
    // (CUDA_INJECTION64_PATH: loaded locally, so only its own handle finds it).
    using StepFn = void (*)();
    auto fn = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "prof_step"));
    const char* injected = getenv("CUDA_INJECTION64_PATH");
    if (fn == nullptr && injected != nullptr) {
      if (void* lib = dlopen(injected, RTLD_LAZY | RTLD_NOLOAD)) fn = reinterpret_cast<StepFn>(dlsym(lib, "prof_step"));
    }
    if (fn != nullptr) fn();
  }
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options o = Parse(argc, argv);
  Buffers b{};
  const size_t bytes = kElements * sizeof(float);
  if (o.pageable) {
    b.host_in = static_cast<float*>(malloc(bytes));
    b.host_out = static_cast<float*>(malloc(bytes));
  } else {
    CHECK(cudaMallocHost(&b.host_in, bytes));
    CHECK(cudaMallocHost(&b.host_out, bytes));
  }
  CHECK(cudaMalloc(&b.dev_in, bytes));
  CHECK(cudaMalloc(&b.dev_out, bytes));
  CHECK(cudaMalloc(&b.scratch_a, bytes));
  CHECK(cudaMalloc(&b.scratch_b, bytes));
  CHECK(cudaStreamCreateWithFlags(&b.compute, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b.side, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&b.inputs_ready, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&b.side_done, cudaEventDisableTiming));

  for (int step = 0; step < o.steps; ++step) {
    if (step == o.exit_at) {
      printf("exit(3) at step %d\n", step);
      exit(3);
    }
    if (step == o.raise_at) {
      printf("raise(%d) at step %d\n", o.raise_signal, step);
      raise(o.raise_signal);
    }
    if (step == o.fork_at) {
      fflush(stdout);
      pid_t child = fork();
      if (child == 0) {
        // CUDA does not survive fork (NVIDIA: undefined until exec; in practice
        // every call fails with an initialization error): the child's steps
        // report what their first CUDA call returned instead of stopping.
        for (int c = 0; c < 3; ++c) {
          nvtxRangePushA("train_step");
          const cudaError_t e = cudaMemcpyAsync(b.dev_in, b.host_in, sizeof(float), cudaMemcpyHostToDevice, b.compute);
          printf("child step %d: %s\n", c, cudaGetErrorName(e));
          nvtxRangePop();
        }
        fflush(stdout);
        _exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    RunStep(o, b, step, "train");
  }

  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventDestroy(b.inputs_ready));
  CHECK(cudaEventDestroy(b.side_done));
  CHECK(cudaStreamDestroy(b.compute));
  CHECK(cudaStreamDestroy(b.side));
  CHECK(cudaFree(b.dev_in));
  CHECK(cudaFree(b.dev_out));
  CHECK(cudaFree(b.scratch_a));
  CHECK(cudaFree(b.scratch_b));
  if (o.pageable) {
    free(b.host_in);
    free(b.host_out);
  } else {
    CHECK(cudaFreeHost(b.host_in));
    CHECK(cudaFreeHost(b.host_out));
  }
  printf("done steps=%d\n", o.steps);
  return o.exit_code;
}
