// A CUDA library loaded the way PyTorch loads its CUDA code: by Python's
// ctypes with RTLD_LOCAL, so libcudart.so.13 is only a dependency of an
// RTLD_LOCAL library (invisible to dlsym(RTLD_NEXT, ...)).
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

__global__ void ctypes_step_kernel(float* scratch, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] += 1.0f;
}

// Runs `steps` steps (H2D, kernel, D2H, synchronize) and returns the sum of
// the data copied back over all steps, or -(cudaError_t) on failure.
extern "C" __attribute__((visibility("default"))) long long run_steps(int steps) {
  constexpr int kN = 4096;
  float host[kN];
  float* in = nullptr;
  float* scratch = nullptr;
  cudaStream_t stream = nullptr;
  cudaError_t e = cudaMalloc(&in, sizeof host);
  if (e == cudaSuccess) e = cudaMalloc(&scratch, sizeof host);
  if (e == cudaSuccess) e = cudaStreamCreate(&stream);
  long long total = 0;
  for (int s = 0; e == cudaSuccess && s < steps; ++s) {
    for (int i = 0; i < kN; ++i) host[i] = static_cast<float>((i + s) % 10);
    e = cudaMemcpyAsync(in, host, sizeof host, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) break;
    ctypes_step_kernel<<<kN / 256, 256, 0, stream>>>(scratch, kN);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(host, in, sizeof host, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    for (int i = 0; e == cudaSuccess && i < kN; ++i) total += static_cast<long long>(host[i]);
  }
  if (stream) cudaStreamDestroy(stream);
  cudaFree(in);
  cudaFree(scratch);
  return e == cudaSuccess ? total : -static_cast<long long>(e);
}

// --- One CUDA operation per call, for test/workloads/python_model.py --------
// The model calls these through ctypes (CDLL: the GIL is released during the
// call, as PyTorch does around its operators; PyDLL: it is kept), so each
// recorded CUDA call has a known Python line above it. All return a
// cudaError_t (0 on success) except wl_item.

namespace {
constexpr int kWlN = 1 << 16;
float* g_dev = nullptr;      // model state on the device
float* g_pinned = nullptr;   // pinned staging buffer
float g_pageable[kWlN];      // pageable host buffer (the data loader's batch)
cudaStream_t g_stream = nullptr;
}  // namespace

extern "C" __attribute__((visibility("default"))) int wl_init() {
  cudaError_t e = cudaMalloc(&g_dev, kWlN * sizeof(float));
  if (e == cudaSuccess) e = cudaMallocHost(&g_pinned, kWlN * sizeof(float));
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking);
  return e;
}

// The model's stream (cudaStream_t), for calls made from Python on it
// (test/workloads/ddp_ctypes.py launches its all-reduces there).
extern "C" __attribute__((visibility("default"))) void* wl_stream() { return g_stream; }

// The data loader's batch: a pageable host-to-device copy.
extern "C" __attribute__((visibility("default"))) int wl_load_batch(int step) {
  for (int i = 0; i < kWlN; i += 1024) g_pageable[i] = static_cast<float>(step);
  return cudaMemcpyAsync(g_dev, g_pageable, kWlN * sizeof(float), cudaMemcpyHostToDevice, g_stream);
}

// One layer's work: `kernels` kernel launches on the model's stream.
extern "C" __attribute__((visibility("default"))) int wl_layer(int kernels) {
  for (int k = 0; k < kernels; ++k) ctypes_step_kernel<<<kWlN / 256, 256, 0, g_stream>>>(g_dev, kWlN);
  return cudaGetLastError();
}

// A .item()-like read: a synchronous 4-byte device-to-host copy. Returns the
// value read (or -1 on failure).
extern "C" __attribute__((visibility("default"))) float wl_item() {
  float v = 0;
  if (cudaMemcpy(&v, g_dev, sizeof v, cudaMemcpyDeviceToHost) != cudaSuccess) return -1.0f;
  return v;
}

// A scratch buffer allocated and freed inside the step (allocator churn).
extern "C" __attribute__((visibility("default"))) int wl_scratch() {
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, 1 << 20);
  if (e == cudaSuccess) e = cudaFree(p);
  return e;
}

// Waits for the model's stream.
extern "C" __attribute__((visibility("default"))) int wl_sync() { return cudaStreamSynchronize(g_stream); }

// A worker thread's own work on its own stream.
extern "C" __attribute__((visibility("default"))) int wl_worker(int kernels) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int k = 0; e == cudaSuccess && k < kernels; ++k) {
    ctypes_step_kernel<<<kWlN / 256, 256, 0, s>>>(g_dev, kWlN);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (s) cudaStreamDestroy(s);
  return e;
}

// n kernel launches from one call (the Python stacks benchmark: every launch
// has the same Python stack above it).
extern "C" __attribute__((visibility("default"))) int wl_launches(int n) {
  for (int k = 0; k < n; ++k) ctypes_step_kernel<<<1, 32, 0, g_stream>>>(g_dev, 32);
  return cudaGetLastError();
}

// A memset on the model's stream (python_model.py's coroutine issues it).
extern "C" __attribute__((visibility("default"))) int wl_memset() {
  return cudaMemsetAsync(g_dev, 0, 4096, g_stream);
}

// A C++ thread (no Python thread state) launching for the calling thread,
// which waits for it (joins): its calls have no Python frames of their own.
extern "C" __attribute__((visibility("default"))) int wl_cpp_thread(int kernels) {
  int result = 0;
  std::thread t([&] { result = wl_worker(kernels); });
  t.join();
  return result;
}

// A pool of native threads that launch kernels for the caller, who waits
// for them, as PyTorch's autograd engine runs loss.backward(): the calling
// (Python) thread hands each pool thread a task and sleeps on a condition
// variable until every task is done. The pool threads start at the first
// call and live for the process (no Python thread state, ever).
namespace {
struct Pool {
  std::mutex mu;
  std::condition_variable work, done;
  uint64_t generation = 0;  // bumped per call; each thread runs each generation once
  int kernels = 0;
  int pending = 0;
  int error = 0;
  std::vector<std::thread> threads;
};
Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: its threads outlive main()
  return *pool;
}
void PoolThread(int index) {
  Pool& p = ThePool();
  uint64_t seen = 0;
  cudaStream_t s = nullptr;
  cudaError_t created = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (;;) {
    int kernels;
    {
      std::unique_lock<std::mutex> lock(p.mu);
      p.work.wait(lock, [&] { return p.generation != seen; });
      seen = p.generation;
      kernels = p.kernels;
    }
    cudaError_t e = created;
    for (int k = 0; e == cudaSuccess && k < kernels; ++k) {
      ctypes_step_kernel<<<kWlN / 256, 256, 0, s>>>(g_dev + index, kWlN - index);
      e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    std::lock_guard<std::mutex> lock(p.mu);
    if (e != cudaSuccess) p.error = e;
    if (--p.pending == 0) p.done.notify_all();
  }
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int wl_pool(int threads, int kernels_each) {
  Pool& p = ThePool();
  std::unique_lock<std::mutex> lock(p.mu);
  while (static_cast<int>(p.threads.size()) < threads) {
    p.threads.emplace_back(PoolThread, static_cast<int>(p.threads.size()));
    p.threads.back().detach();
  }
  p.kernels = kernels_each;
  p.pending = static_cast<int>(p.threads.size());
  p.error = 0;
  ++p.generation;
  p.work.notify_all();
  p.done.wait(lock, [&] { return p.pending == 0; });
  return p.error;
}
