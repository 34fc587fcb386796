// A data-parallel training-like job for multi-rank tests: one process per
// rank, started with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT), or mpirun's or srun's rank variables. Rank 0 makes the NCCL unique id and hands it to
// the others over TCP at MASTER_ADDR:MASTER_PORT, as torchrun's store does.
// At start a broadcast of the parameters from rank 0; then per step: an
// optional host delay (WORKLOAD_SLOW_RANK / WORKLOAD_SLOW_US), forward
// kernels, backward kernels on the compute stream with a bucketed
// all-reduce of each finished bucket of gradients on a second (comm)
// stream, overlapping the rest of the backward pass, the optimizer step
// after the compute stream waited for the last all-reduce, and a D2H copy of
// the loss (the step's synchronisation). Flags: README.md.
#include <arpa/inet.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

__global__ void forward_layer(float* act, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) act[i] = act[i] * 0.5f + 1.0f;
}

__global__ void backward_layer(float* grad, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grad[i] = grad[i] * 0.25f;
}

__global__ void sgd_step(float* param, const float* grad, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) param[i] -= 0.01f * grad[i];
}

namespace {

#define CHECK_CUDA(call)                                                                        \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, #call, cudaGetErrorName(e_));         \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)
// CHECK_CUDA's shape for ncclResult_t: another error type and name function.
#define CHECK_NCCL(call)                                                                        \
  do {                                                                                          \
    ncclResult_t r_ = (call);                                                                   \
    if (r_ != ncclSuccess) {                                                                    \
      fprintf(stderr, "rank %d: %s failed: %s\n", g_rank, #call, ncclGetErrorString(r_));       \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

int g_rank = 0;

int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

// Rank 0 serves the id to WORLD_SIZE-1 peers; the others connect (retrying
// while rank 0 is not listening yet).
bool ExchangeId(ncclUniqueId* id, int rank, int world) {
  const char* addr = getenv("MASTER_ADDR");
  const int port = EnvInt("MASTER_PORT", 29500);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  addrinfo* info = nullptr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  if (getaddrinfo(addr ? addr : "127.0.0.1", nullptr, &hints, &info) != 0 || !info) return false;
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(info->ai_addr)->sin_addr;
  freeaddrinfo(info);
  if (rank == 0) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(s, world) != 0) return false;
    for (int i = 1; i < world; ++i) {
      int c = accept(s, nullptr, nullptr);
      if (c < 0 || write(c, id, sizeof(*id)) != static_cast<ssize_t>(sizeof(*id))) return false;
      close(c);
    }
    close(s);
    return true;
  }
  for (int attempt = 0; attempt < 3000; ++attempt) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      size_t got = 0;
      while (got < sizeof(*id)) {
        ssize_t n = read(s, reinterpret_cast<char*>(id) + got, sizeof(*id) - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      close(s);
      return got == sizeof(*id);
    }
    close(s);
    usleep(10000);
  }
  return false;
}

struct Options {
  int steps = 40;
  int layers = 8;
  int buckets = 4;
  int bucket_elems = 1 << 20;   // floats per bucket
  int forward_blocks = 2000;    // per forward kernel
  int backward_blocks = 4000;   // per backward kernel
  bool pinned_loss = false;     // loss copied into pinned memory: the step's cudaStreamSynchronize waits
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? atoi(argv[++i]) : -1; };
    if (a == "--steps") o.steps = next();
    else if (a == "--layers") o.layers = next();
    else if (a == "--buckets") o.buckets = next();
    else if (a == "--bucket-elems") o.bucket_elems = next();
    else if (a == "--forward-blocks") o.forward_blocks = next();
    else if (a == "--backward-blocks") o.backward_blocks = next();
    else if (a == "--pinned-loss") o.pinned_loss = true;
    else {
      fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (o.steps < 1 || o.layers < 1 || o.buckets < 1 || o.buckets > o.layers || o.bucket_elems < 1) {
    fprintf(stderr, "bad flags\n");
    return 2;
  }
  // torchrun's variables, else Open MPI's (mpirun), else Slurm's (srun).
  const int rank = EnvInt("RANK", EnvInt("OMPI_COMM_WORLD_RANK", EnvInt("SLURM_PROCID", 0)));
  const int world = EnvInt("WORLD_SIZE", EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("SLURM_NTASKS", 1)));
  const int local_rank = EnvInt("LOCAL_RANK", EnvInt("OMPI_COMM_WORLD_LOCAL_RANK", EnvInt("SLURM_LOCALID", 0)));
  g_rank = rank;
  const int slow_rank = EnvInt("WORKLOAD_SLOW_RANK", -1);
  const int slow_us = EnvInt("WORKLOAD_SLOW_US", 0);
  // One simulated device: every local rank uses device 0 (a real node gives
  // each its own: cudaSetDevice(local_rank)).
  int devices = 0;
  CHECK_CUDA(cudaGetDeviceCount(&devices));
  CHECK_CUDA(cudaSetDevice(devices > local_rank ? local_rank : 0));

  ncclUniqueId id;
  if (rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
  if (world > 1 && !ExchangeId(&id, rank, world)) {
    fprintf(stderr, "rank %d: could not exchange the NCCL id\n", rank);
    return 1;
  }
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, world, id, rank));

  cudaStream_t compute, comm_stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  const size_t n = static_cast<size_t>(o.bucket_elems);
  float *params, *grads, *act, *loss_dev;
  CHECK_CUDA(cudaMalloc(&params, n * o.buckets * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&grads, n * o.buckets * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&act, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&loss_dev, sizeof(float)));
  CHECK_CUDA(cudaMemset(params, 0, n * o.buckets * sizeof(float)));
  CHECK_CUDA(cudaMemset(loss_dev, 0, sizeof(float)));
  std::vector<cudaEvent_t> bucket_ready(o.buckets);
  for (auto& e : bucket_ready) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  cudaEvent_t reduced;
  CHECK_CUDA(cudaEventCreateWithFlags(&reduced, cudaEventDisableTiming));

  // Every rank starts from rank 0's parameters.
  CHECK_NCCL(ncclBroadcast(params, params, n * o.buckets, ncclFloat32, 0, comm, compute));
  CHECK_CUDA(cudaStreamSynchronize(compute));

  const int layers_per_bucket = (o.layers + o.buckets - 1) / o.buckets;
  float pageable_loss = 0;
  float* loss = &pageable_loss;
  if (o.pinned_loss) CHECK_CUDA(cudaMallocHost(&loss, sizeof(float)));
  for (int step = 0; step < o.steps; ++step) {
    if (rank == slow_rank && slow_us > 0) usleep(static_cast<useconds_t>(slow_us));  // this rank's host is late
    for (int l = 0; l < o.layers; ++l) forward_layer<<<o.forward_blocks, 256, 0, compute>>>(act, static_cast<int>(n));
    int bucket = 0;
    for (int l = o.layers - 1; l >= 0; --l) {
      backward_layer<<<o.backward_blocks, 256, 0, compute>>>(grads + n * bucket, static_cast<int>(n));
      const bool bucket_full = (o.layers - l) % layers_per_bucket == 0 || l == 0;
      if (bucket_full && bucket < o.buckets) {
        CHECK_CUDA(cudaEventRecord(bucket_ready[bucket], compute));
        CHECK_CUDA(cudaStreamWaitEvent(comm_stream, bucket_ready[bucket], 0));
        CHECK_NCCL(ncclAllReduce(grads + n * bucket, grads + n * bucket, n, ncclFloat32, ncclSum, comm, comm_stream));
        ++bucket;
      }
    }
    CHECK_CUDA(cudaEventRecord(reduced, comm_stream));
    CHECK_CUDA(cudaStreamWaitEvent(compute, reduced, 0));
    sgd_step<<<o.backward_blocks, 256, 0, compute>>>(params, grads, static_cast<int>(n));
    CHECK_CUDA(cudaMemcpyAsync(loss, loss_dev, sizeof(float), cudaMemcpyDeviceToHost, compute));
    CHECK_CUDA(cudaStreamSynchronize(compute));
  }
  CHECK_NCCL(ncclCommFinalize(comm));
  CHECK_NCCL(ncclCommDestroy(comm));
  for (auto& e : bucket_ready) CHECK_CUDA(cudaEventDestroy(e));
  CHECK_CUDA(cudaEventDestroy(reduced));
  CHECK_CUDA(cudaFree(params));
  CHECK_CUDA(cudaFree(grads));
  CHECK_CUDA(cudaFree(act));
  CHECK_CUDA(cudaFree(loss_dev));
  if (o.pinned_loss) CHECK_CUDA(cudaFreeHost(loss));
  printf("rank %d of %d: done steps=%d\n", rank, world, o.steps);
  return 0;
}
