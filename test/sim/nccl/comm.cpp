// Communicators: unique ids, the ranks' meeting place, split, teardown, and
// the small queries (count, rank, device, version, errors).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <thread>

#include "api.h"
#include "internal.h"

namespace simnccl {
namespace {

std::mutex g_error_mutex;
std::string g_last_error;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// FNV-1a over the id's bytes: the same on every rank, as NCCL's commHash is.
uint64_t Hash(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void Pause() {
  timespec ts{0, 50000};
  nanosleep(&ts, nullptr);
}

template <typename T>
T Resolve(void* (*get)(const char*), T* slot, const char* name) {
  *slot = reinterpret_cast<T>(get(name));
  return *slot;
}

Driver LoadDriver() {
  Driver d{};
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return d;
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) return d;
  auto get = [&](const char* name, int version, void** out) {
    CUdriverProcAddressQueryResult status;
    return get_proc(name, out, version, 0, &status) == CUDA_SUCCESS && *out != nullptr;
  };
  bool ok = get("cuInit", 2000, reinterpret_cast<void**>(&d.cuInit)) &&
            get("cuDeviceGetCount", 2000, reinterpret_cast<void**>(&d.cuDeviceGetCount)) &&
            get("cuCtxGetDevice", 2000, reinterpret_cast<void**>(&d.cuCtxGetDevice)) &&
            get("cuLibraryLoadData", 12000, reinterpret_cast<void**>(&d.cuLibraryLoadData)) &&
            get("cuLibraryGetKernel", 12000, reinterpret_cast<void**>(&d.cuLibraryGetKernel)) &&
            get("cuLaunchKernelEx", 11060, reinterpret_cast<void**>(&d.cuLaunchKernelEx)) &&
            get("cuStreamIsCapturing", 10000, reinterpret_cast<void**>(&d.cuStreamIsCapturing)) &&
            get("cuDevicePrimaryCtxRetain", 7000, reinterpret_cast<void**>(&d.cuDevicePrimaryCtxRetain)) &&
            get("cuCtxSetCurrent", 4000, reinterpret_cast<void**>(&d.cuCtxSetCurrent)) &&
            get("cuCtxGetCurrent", 4000, reinterpret_cast<void**>(&d.cuCtxGetCurrent));
  d.ok = ok && d.cuInit(0) == CUDA_SUCCESS;
  return d;
}

size_t SharedBytes() { return (sizeof(Shared) + 4095) / 4096 * 4096; }

}  // namespace

const Driver& GetDriver() {
  static const Driver driver = LoadDriver();
  return driver;
}

void SetLastError(const std::string& text) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  g_last_error = text;
  if (getenv("NCCL_DEBUG")) fprintf(stderr, "NCCL WARN %s\n", text.c_str());
}

uint64_t TimeoutNs() {
  static const uint64_t ns = [] {
    const char* v = getenv("SIM_NCCL_TIMEOUT_MS");
    long ms = v ? strtol(v, nullptr, 10) : 0;
    return static_cast<uint64_t>(ms > 0 ? ms : 300000) * 1000000ull;
  }();
  return ns;
}

// Maps the segment, registers this rank and waits (as ncclCommInitRank
// does) until all nranks ranks have joined.
ncclResult_t JoinComm(const char* segment, int nranks, int rank, const char* comm_name, uint64_t comm_hash,
                      ncclComm_t* out) {
  if (!out) return ncclInvalidArgument;
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    SetLastError("invalid rank " + std::to_string(rank) + " or nranks " + std::to_string(nranks) +
                 " (the sim supports up to " + std::to_string(kMaxRanks) + " ranks)");
    return ncclInvalidArgument;
  }
  if (!GetDriver().ok) {
    SetLastError("no CUDA driver");
    return ncclUnhandledCudaError;
  }
  int fd = shm_open(segment, O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    SetLastError(std::string("shm_open ") + segment + ": " + strerror(errno));
    return ncclSystemError;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || (static_cast<size_t>(st.st_size) < SharedBytes() && ftruncate(fd, SharedBytes()) != 0)) {
    close(fd);
    SetLastError(std::string("sizing ") + segment + ": " + strerror(errno));
    return ncclSystemError;
  }
  void* mem = mmap(nullptr, SharedBytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) {
    SetLastError(std::string("mmap ") + segment + ": " + strerror(errno));
    return ncclSystemError;
  }
  auto* shared = static_cast<Shared*>(mem);
  uint32_t expected = 0;
  if (!shared->nranks.compare_exchange_strong(expected, static_cast<uint32_t>(nranks)) &&
      expected != static_cast<uint32_t>(nranks)) {
    munmap(mem, SharedBytes());
    SetLastError("ranks disagree on nranks (" + std::to_string(expected) + " vs " + std::to_string(nranks) + ")");
    return ncclInvalidUsage;
  }
  int32_t no_pid = 0;
  if (!shared->ranks[rank].pid.compare_exchange_strong(no_pid, getpid())) {
    munmap(mem, SharedBytes());
    SetLastError("rank " + std::to_string(rank) + " joined twice");
    return ncclInvalidUsage;
  }
  // The last rank in removes the name: every rank has it mapped by then.
  if (shared->joined.fetch_add(1) + 1 == static_cast<uint32_t>(nranks)) shm_unlink(segment);
  const uint64_t deadline = NowNs() + TimeoutNs();
  while (shared->joined.load() < static_cast<uint32_t>(nranks)) {
    if (NowNs() > deadline) {
      SetLastError("timed out waiting for the other ranks to join " + std::string(segment));
      return ncclSystemError;
    }
    Pause();
  }
  auto* comm = new ncclComm();
  comm->name = segment;
  comm->comm_name = comm_name ? comm_name : "";
  comm->shared = shared;
  comm->nranks = nranks;
  comm->rank = rank;
  comm->comm_hash = comm_hash;
  comm->sent_to.assign(nranks, 0);
  comm->received_from.assign(nranks, 0);
  CUdevice device = 0;
  if (GetDriver().cuCtxGetDevice(&device) == CUDA_SUCCESS) comm->device = device;
  *out = comm;
  PluginCommInit(comm);
  TruthComm(comm, "comm_init");
  return ncclSuccess;
}

}  // namespace simnccl

using namespace simnccl;

NCCL_SIM_API(ncclGetVersion, (int* version)) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_SIM_API(ncclGetUniqueId, (ncclUniqueId* id)) {
  if (!id) return ncclInvalidArgument;
  static std::atomic<uint32_t> counter{0};
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  memset(id->internal, 0, sizeof(id->internal));
  snprintf(id->internal, sizeof(id->internal), "/simnccl.%d.%u.%lx", static_cast<int>(getpid()), counter.fetch_add(1),
           static_cast<unsigned long>(ts.tv_nsec ^ (ts.tv_sec << 20)));
  return ncclSuccess;
}

NCCL_SIM_API(ncclCommInitRankConfig, (ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config)) {
  if (id.internal[0] != '/' || memchr(id.internal, 0, sizeof(id.internal)) == nullptr) {
    SetLastError("not a unique id from ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  const char* name = config && config->commName ? config->commName : nullptr;
  return JoinComm(id.internal, nranks, rank, name, Hash(id.internal, sizeof(id.internal)), comm);
}

NCCL_SIM_API(ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId id, int rank)) {
  return pncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

// One process, ndev devices: a rank per device (rank i on devlist[i], or
// device i), joined from threads as NCCL's own implementation does
// internally, each with its device's primary context current; devices the
// process does not see are ncclInvalidArgument, duplicates ncclInvalidUsage
// (as NCCL).
NCCL_SIM_API(ncclCommInitAll, (ncclComm_t* comms, int ndev, const int* devlist)) {
  if (!comms || ndev < 1) return ncclInvalidArgument;
  int count = 0;
  if (!GetDriver().ok || GetDriver().cuDeviceGetCount(&count) != CUDA_SUCCESS) return ncclUnhandledCudaError;
  for (int i = 0; i < ndev; ++i) {
    const int dev = devlist ? devlist[i] : i;
    if (dev < 0 || dev >= count) {
      SetLastError("invalid device " + std::to_string(dev));
      return ncclInvalidArgument;
    }
    for (int j = 0; j < i; ++j) {
      if ((devlist ? devlist[j] : j) == dev) {
        SetLastError("duplicate device " + std::to_string(dev) + " in devlist");
        return ncclInvalidUsage;
      }
    }
  }
  ncclUniqueId id;
  pncclGetUniqueId(&id);
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    const int dev = devlist ? devlist[i] : i;
    threads.emplace_back([&, i, dev] {
      CUcontext context = nullptr;
      if (GetDriver().cuDevicePrimaryCtxRetain(&context, dev) != CUDA_SUCCESS ||
          GetDriver().cuCtxSetCurrent(context) != CUDA_SUCCESS) {
        results[i] = ncclUnhandledCudaError;
        return;
      }
      results[i] = pncclCommInitRank(&comms[i], ndev, id, i);
    });
  }
  for (auto& t : threads) t.join();
  for (ncclResult_t r : results) {
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

// Every rank of the parent calls it (collectively): ranks with the same
// colour form a child ordered by key (then parent rank); colour
// NCCL_SPLIT_NOCOLOR (-1) gets no communicator.
NCCL_SIM_API(ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) {
  if (!comm || !newcomm) return ncclInvalidArgument;
  Shared* s = comm->shared;
  const uint32_t round = ++comm->split_rounds;
  auto& me = s->ranks[comm->rank];
  me.split_color.store(color);
  me.split_key.store(key);
  me.split_round.store(round);
  const uint64_t deadline = NowNs() + TimeoutNs();
  for (int r = 0; r < comm->nranks; ++r) {
    while (s->ranks[r].split_round.load() < round) {
      if (NowNs() > deadline) {
        SetLastError("ncclCommSplit: timed out waiting for rank " + std::to_string(r));
        return ncclSystemError;
      }
      Pause();
    }
  }
  std::vector<std::pair<std::pair<int, int>, int>> members;  // ((key, parent rank), parent rank)
  for (int r = 0; r < comm->nranks; ++r) {
    if (s->ranks[r].split_color.load() == color) members.push_back({{s->ranks[r].split_key.load(), r}, r});
  }
  // No rank publishes the next split's colour before every rank read this one.
  me.split_read.store(round);
  // The same wait as above, on split_read: a second round of the barrier.
  for (int r = 0; r < comm->nranks; ++r) {
    while (s->ranks[r].split_read.load() < round) {
      if (NowNs() > deadline) {
        SetLastError("ncclCommSplit: timed out waiting for rank " + std::to_string(r));
        return ncclSystemError;
      }
      Pause();
    }
  }
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  std::sort(members.begin(), members.end());
  int new_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == comm->rank) new_rank = static_cast<int>(i);
  }
  char child[128];
  snprintf(child, sizeof(child), "%s.s%u.c%d", comm->name.c_str(), round, color);
  uint64_t hash = Hash(&round, sizeof(round), Hash(&color, sizeof(color), comm->comm_hash));
  const char* name = config && config->commName ? config->commName : nullptr;
  return JoinComm(child, static_cast<int>(members.size()), new_rank, name, hash, newcomm);
}

NCCL_SIM_API(ncclCommFinalize, (ncclComm_t comm)) {
  if (!comm) return ncclInvalidArgument;
  DrainComm(comm);
  comm->finalized = true;
  return ncclSuccess;
}

namespace {
ncclResult_t Teardown(ncclComm_t comm, bool abort) {
  if (!comm) return ncclInvalidArgument;
  if (!abort && !comm->finalized) DrainComm(comm);
  comm->aborted = abort;
  TruthComm(comm, abort ? "comm_abort" : "comm_destroy");
  PluginCommFinalize(comm);
  // An aborted communicator may still have kernels waiting on it: its
  // memory stays (the process is expected to end).
  if (!abort) {
    munmap(comm->shared, SharedBytes());
    delete comm;
  }
  return ncclSuccess;
}
}  // namespace

NCCL_SIM_API(ncclCommDestroy, (ncclComm_t comm)) { return Teardown(comm, /*abort=*/false); }
NCCL_SIM_API(ncclCommAbort, (ncclComm_t comm)) { return Teardown(comm, /*abort=*/true); }

NCCL_SIM_API(ncclCommCount, (const ncclComm_t comm, int* count)) {
  if (!comm || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_SIM_API(ncclCommCuDevice, (const ncclComm_t comm, int* device)) {
  if (!comm || !device) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

NCCL_SIM_API(ncclCommUserRank, (const ncclComm_t comm, int* rank)) {
  if (!comm || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_SIM_API_CONST(const char*, ncclGetErrorString, (ncclResult_t result)) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_SIM_API_CONST(const char*, ncclGetLastError, (ncclComm_t)) {
  std::lock_guard<std::mutex> lock(g_error_mutex);
  thread_local std::string copy;
  copy = g_last_error;
  return copy.c_str();
}

namespace simnccl {
void TruthComm(ncclComm_t comm, const char* what) {
  const Hub& hub = GetHub();
  if (!hub.ok) return;
  char b[512];
  snprintf(b, sizeof(b),
           "{\"type\":\"%s\",\"pid\":%d,\"comm\":\"0x%016lx\",\"rank\":%d,\"nranks\":%d,\"device\":%d,"
           "\"comm_name\":\"%s\",\"plugin_version\":%d,\"time_ns\":%lu}",
           what, static_cast<int>(getpid()), static_cast<unsigned long>(comm->comm_hash), comm->rank, comm->nranks,
           comm->device, comm->comm_name.c_str(), PluginVersion(), static_cast<unsigned long>(hub.now_ns()));
  hub.truth_line(b);
}
}  // namespace simnccl
