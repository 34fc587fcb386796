// A CUDA-graph loop, as torch.compile(mode="reduce-overhead") and inference
// servers run one: a step's kernels are captured once from a stream into a
// graph, instantiated, and each step replays it with cudaGraphLaunch and
// waits with cudaStreamSynchronize. Flags: README.md.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void graph_gemm(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] = scratch[i] * 0.5f + 1.0f;
}

__global__ void graph_bias(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] += 0.25f;
}

namespace {

struct Options {
  int steps = 10;
  int kernels = 4;        // kernels per captured graph
  int recapture_at = -1;  // capture a fresh graph at the start of this step
  bool manual_steps = false;
};

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("%s failed: %s\n", what, cudaGetErrorName(e));
  return false;
}

// Captures opts.kernels launches (alternating two kernels) from stream.
bool Capture(cudaStream_t stream, float* scratch, int n, int kernels, cudaGraphExec_t* exec) {
  cudaGraph_t graph = nullptr;
  if (!Check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture")) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (!Check(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing")) return false;
  for (int k = 0; k < kernels; ++k) {
    if (k % 2 == 0) {
      graph_gemm<<<(n + 255) / 256, 256, 0, stream>>>(scratch, n);
    } else {
      graph_bias<<<(n + 255) / 256, 256, 0, stream>>>(scratch, n);
    }
  }
  if (!Check(cudaGetLastError(), "capture launch")) return false;
  if (!Check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture")) return false;
  if (!Check(cudaGraphInstantiate(exec, graph, 0), "cudaGraphInstantiate")) return false;
  std::printf("captured %d kernels (capturing=%d)\n", kernels, status == cudaStreamCaptureStatusActive ? 1 : 0);
  return Check(cudaGraphDestroy(graph), "cudaGraphDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      opts.steps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--kernels") && i + 1 < argc) {
      opts.kernels = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--recapture-at") && i + 1 < argc) {
      opts.recapture_at = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--manual-steps")) {
      opts.manual_steps = true;
    } else {
      std::fprintf(stderr, "usage: %s [--steps N] [--kernels K] [--recapture-at STEP] [--manual-steps]\n", argv[0]);
      return 2;
    }
  }
  const int n = 1 << 16;
  float* scratch = nullptr;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t exec = nullptr;
  if (!Check(cudaMalloc(&scratch, n * sizeof(float)), "cudaMalloc")) return 1;
  if (!Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) return 1;
  if (!Capture(stream, scratch, n, opts.kernels, &exec)) return 1;
  using StepFn = void (*)();
  StepFn step_marker = nullptr;
  if (opts.manual_steps) step_marker = reinterpret_cast<StepFn>(dlsym(RTLD_DEFAULT, "prof_step"));
  for (int step = 0; step < opts.steps; ++step) {
    if (step == opts.recapture_at) {
      if (!Check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy")) return 1;
      if (!Capture(stream, scratch, n, opts.kernels, &exec)) return 1;
    }
    if (!Check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch")) return 1;
    if (!Check(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) return 1;
    std::printf("graph step %d\n", step);
    if (step_marker) step_marker();
  }
  Check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  Check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  Check(cudaFree(scratch), "cudaFree");
  std::printf("done steps=%d\n", opts.steps);
  return 0;
}
