// Exercises the stream semantics the simulator must keep, for its own tests:
// legacy default stream vs blocking and non-blocking streams, events
// (record, query, elapsed time, cross-stream wait) and the per-thread
// default stream. Prints what the runtime reported; the truth log holds the
// timeline. Run with SIM_KERNEL_NS="long_kernel=2000000" to make
// "long_kernel" take 2 ms.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void long_kernel(int* p) {
  if (p && threadIdx.x == 0) p[0] = 1;
}
__global__ void short_kernel(int* p) {
  if (p && threadIdx.x == 0) p[1] = 2;
}

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_));             \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main() {
  int* buf = nullptr;
  cudaStream_t blocking = nullptr, non_blocking = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK(cudaMalloc(&buf, 64));
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  // Phase 1 (legacy semantics): A on a blocking stream, B on the legacy
  // stream must wait for A, C on a non-blocking stream must not, D on the
  // blocking stream must wait for B.
  long_kernel<<<1, 32, 0, blocking>>>(buf);      // A
  short_kernel<<<1, 32, 0, 0>>>(buf);            // B
  short_kernel<<<1, 32, 0, non_blocking>>>(buf);  // C
  short_kernel<<<1, 32, 0, blocking>>>(buf);     // D
  CHECK(cudaDeviceSynchronize());

  // Phase 2 (events): time a long kernel; the end event is not ready at once.
  CHECK(cudaEventRecord(start, non_blocking));
  long_kernel<<<1, 32, 0, non_blocking>>>(buf);  // E
  CHECK(cudaEventRecord(stop, non_blocking));
  const cudaError_t query = cudaEventQuery(stop);
  printf("query before sync -> %d\n", static_cast<int>(query));
  CHECK(cudaEventSynchronize(stop));
  printf("query after sync -> %d\n", static_cast<int>(cudaEventQuery(stop)));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("elapsed_us %.0f\n", ms * 1000.0f);

  // Phase 3 (cross-stream wait): F on the non-blocking stream waits for the
  // long kernel G on the blocking stream through an event.
  long_kernel<<<1, 32, 0, blocking>>>(buf);  // G
  CHECK(cudaEventRecord(stop, blocking));
  CHECK(cudaStreamWaitEvent(non_blocking, stop, 0));
  short_kernel<<<1, 32, 0, non_blocking>>>(buf);  // F
  CHECK(cudaStreamSynchronize(non_blocking));

  // Phase 4: the per-thread default stream (a distinct stream id).
  CHECK(cudaMemsetAsync(buf, 0, 64, cudaStreamPerThread));
  CHECK(cudaStreamSynchronize(cudaStreamPerThread));

  // Teardown, one call per object: a list, not logic.
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(blocking));
  CHECK(cudaStreamDestroy(non_blocking));
  CHECK(cudaFree(buf));
  printf("done\n");
  return 0;
}
