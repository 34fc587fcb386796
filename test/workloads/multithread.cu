// Many host threads launching at once: --threads T (default 64) threads,
// each with its own stream, wait on one barrier, then launch --launches N
// (default 100) kernels and synchronize their stream. Stresses the
// profiler's per-thread buffers and its thread-safety. --waves W (default 1)
// does that W times, each wave's threads created after the last wave's have
// exited: thread churn (W x T short-lived threads over the run, as a
// thread-per-request server makes).
#include <cuda_runtime.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void worker_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

namespace {

pthread_barrier_t g_start;
int g_launches = 100;

struct Result {
  cudaError_t error = cudaSuccess;
};

void* Worker(void* arg) {
  auto* result = static_cast<Result*>(arg);
  cudaStream_t stream = nullptr;
  int* counter = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc(&counter, sizeof(int));
  pthread_barrier_wait(&g_start);  // everyone launches at the same moment
  for (int i = 0; e == cudaSuccess && i < g_launches; ++i) {
    worker_kernel<<<1, 32, 0, stream>>>(counter);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e == cudaSuccess) e = cudaFree(counter);
  if (e == cudaSuccess) e = cudaStreamDestroy(stream);
  result->error = e;
  return nullptr;
}

int ParseFlag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = ParseFlag(argc, argv, "--threads", 64);
  g_launches = ParseFlag(argc, argv, "--launches", 100);
  if (threads <= 0 || g_launches < 0) {
    fprintf(stderr, "usage: multithread [--threads T] [--launches N]\n");
    return 2;
  }
  const int waves = ParseFlag(argc, argv, "--waves", 1);
  if (waves <= 0) {
    fprintf(stderr, "usage: multithread [--threads T] [--launches N] [--waves W]\n");
    return 2;
  }
  pthread_barrier_init(&g_start, nullptr, static_cast<unsigned>(threads));
  std::vector<pthread_t> ids(threads);
  std::vector<Result> results(threads);
  int failures = 0;
  for (int w = 0; w < waves; ++w) {
    int created = 0;
    for (int t = 0; t < threads; ++t) {
      results[t] = Result();
      if (pthread_create(&ids[t], nullptr, Worker, &results[t]) != 0) break;
      ++created;
    }
    if (created < threads) {
      // The barrier waits for all T: a wave that cannot start them all cannot run.
      fprintf(stderr, "wave %d: could not create thread %d\n", w, created);
      return 1;
    }
    for (int t = 0; t < threads; ++t) {
      pthread_join(ids[t], nullptr);
      if (results[t].error != cudaSuccess) {
        fprintf(stderr, "wave %d thread %d: %s\n", w, t, cudaGetErrorString(results[t].error));
        ++failures;
      }
    }
  }
  cudaDeviceSynchronize();
  printf("threads=%d launches=%d waves=%d failures=%d\n", threads, g_launches, waves, failures);
  return failures == 0 ? 0 : 1;
}
