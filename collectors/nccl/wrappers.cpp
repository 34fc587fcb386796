// NCCL's public API, interposed for programs that call NCCL as a shared
// library (pip wheels of PyTorch: libtorch_cuda.so has DT_NEEDED
// libnccl.so.2). Each wrapper forwards to the real function found at run
// time (pncclX, NCCL's strong name, else the next ncclX; libprof has no
// DT_NEEDED on libnccl), counts the call in its communicator's sequence
// number (every call, so equal numbers are the same collective on every
// rank) and, while a window records, records it with the CUPTI correlation
// id of the launch that enqueued its kernel. Outside windows a call costs a
// relaxed load and a branch, plus the sequence count (a lock-free lookup and
// a relaxed add) and two thread-local stores.
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/loader_guard.h"
#include "base/agent_hooks.h"
#include "collectors/nccl/calls.h"

#define NCCL_WRAPPER extern "C" __attribute__((visibility("default")))
#define NCCL_LIKELY(x) __builtin_expect(!!(x), 1)

namespace prof::nccl {
namespace {

void* ResolveReal(const char* strong_name, const char* name) {
  LoaderSection section;  // base/loader_guard.h
  void* fn = dlsym(RTLD_NEXT, strong_name);
  if (fn == nullptr) fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    // Loaded RTLD_LOCAL (ctypes, a plugin): not in the global scope.
    if (void* lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
      fn = dlsym(lib, strong_name);
      if (fn == nullptr) fn = dlsym(lib, name);
    }
  }
  return fn;
}

template <typename Fn>
Fn Real(std::atomic<void*>& slot, const char* strong_name, const char* name) {
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = ResolveReal(strong_name, name);
    if (fn == nullptr) {
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) Log().warn("NCCL: {} called but no NCCL library provides it", name);
      return nullptr;
    }
    slot.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(fn);
}

#define REAL(name) \
  static std::atomic<void*> real_slot{nullptr}; \
  auto real = prof::nccl::Real<decltype(&name)>(real_slot, "p" #name, #name); \
  if (real == nullptr) return ncclInternalError

uint64_t Hash(const void* data, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// The NCCL version, asked once (for the trace's distributedInfo).
void NoteVersion() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  static std::atomic<void*> slot{nullptr};
  auto get = Real<ncclResult_t (*)(int*)>(slot, "pncclGetVersion", "ncclGetVersion");
  int version = 0;
  if (get != nullptr && get(&version) == ncclSuccess) hooks::SetNcclVersion(version);
}

void Register(ncclComm_t handle, uint64_t id, int rank, int nranks, uint64_t parent, int color) {
  if (handle == nullptr) return;
  CommInfo info;
  info.id = id;
  info.rank = rank;
  info.nranks = nranks;
  info.parent = parent;
  info.color = color;
  info.source = static_cast<uint8_t>(CollSource::kWrapper);
  AddComm(handle, info);
  hooks::RegisterComm(info);
  NoteVersion();
}

bool Created(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

template <typename Call>
ncclResult_t Collective(const CallArgs& args, Call call) {
  hooks::NoteCollective();  // the job's iteration count (PROF_STEP=auto on several ranks)
  uint64_t seq = 0;
  if (CommSlot* slot = FindComm(args.comm)) {
    seq = slot->seq.Next(IsP2p(args.func));
  }
  if (NCCL_LIKELY((LoadHotBits() & kHotRecording) == 0)) {
    tls_in_wrapper = true;
    ncclResult_t r = call();
    tls_in_wrapper = false;
    return r;
  }
  LaunchSink launches;
  const uint64_t start_ns = NowNs();
  tls_in_wrapper = true;
  ncclResult_t r = static_cast<ncclResult_t>(RunCollecting(&launches, [&] { return static_cast<int>(call()); }));
  tls_in_wrapper = false;
  FinishCall(args, seq, start_ns, NowNs(), r, launches, CollSource::kWrapper);
  return r;
}

uint64_t StreamOf(cudaStream_t s) { return reinterpret_cast<uint64_t>(s); }

}  // namespace
}  // namespace prof::nccl

using prof::CollFunc;
using prof::nccl::CallArgs;
using prof::nccl::Collective;
using prof::nccl::StreamOf;
using prof::nccl::Real;

// ---- communicators

NCCL_WRAPPER ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  REAL(ncclCommInitRank);
  ncclResult_t r = real(comm, nranks, id, rank);
  if (prof::nccl::Created(r) && comm) prof::nccl::Register(*comm, prof::nccl::Hash(id.internal, sizeof(id.internal)), rank, nranks, 0, -1);
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                 ncclConfig_t* config) {
  REAL(ncclCommInitRankConfig);
  ncclResult_t r = real(comm, nranks, id, rank, config);
  if (prof::nccl::Created(r) && comm) prof::nccl::Register(*comm, prof::nccl::Hash(id.internal, sizeof(id.internal)), rank, nranks, 0, -1);
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int n_ids,
                                                   ncclUniqueId* ids, ncclConfig_t* config) {
  REAL(ncclCommInitRankScalable);
  ncclResult_t r = real(comm, nranks, rank, n_ids, ids, config);
  if (prof::nccl::Created(r) && comm && ids && n_ids > 0) {
    prof::nccl::Register(*comm, prof::nccl::Hash(ids[0].internal, sizeof(ids[0].internal)), rank, nranks, 0, -1);
  }
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  REAL(ncclCommInitAll);
  ncclResult_t r = real(comms, ndev, devlist);
  if (r == ncclSuccess && comms) {
    // All ranks are in this process: any id they share is equal on every rank.
    static std::atomic<uint32_t> calls{0};
    const uint64_t key[2] = {static_cast<uint64_t>(getpid()), calls.fetch_add(1)};
    const uint64_t id = prof::nccl::Hash(key, sizeof(key));
    for (int i = 0; i < ndev; ++i) prof::nccl::Register(comms[i], id, i, ndev, 0, -1);
  }
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                        ncclConfig_t* config) {
  REAL(ncclCommSplit);
  prof::nccl::CommSlot* parent = prof::nccl::FindComm(comm);
  const uint32_t round = parent ? parent->splits.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
  ncclResult_t r = real(comm, color, key, newcomm, config);
  if (prof::nccl::Created(r) && newcomm && *newcomm) {
    static std::atomic<void*> count_slot{nullptr}, rank_slot{nullptr};
    auto count = prof::nccl::Real<ncclResult_t (*)(const ncclComm_t, int*)>(count_slot, "pncclCommCount", "ncclCommCount");
    auto user_rank =
        prof::nccl::Real<ncclResult_t (*)(const ncclComm_t, int*)>(rank_slot, "pncclCommUserRank", "ncclCommUserRank");
    int nranks = 0, rank = 0;
    if (count && user_rank && count(*newcomm, &nranks) == ncclSuccess && user_rank(*newcomm, &rank) == ncclSuccess) {
      const uint64_t parent_id = parent ? parent->info.id : 0;
      const uint64_t mix[3] = {parent_id, round, static_cast<uint64_t>(static_cast<int64_t>(color))};
      prof::nccl::Register(*newcomm, prof::nccl::Hash(mix, sizeof(mix)), rank, nranks, parent_id, color);
    }
  }
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  REAL(ncclCommDestroy);
  ncclResult_t r = real(comm);
  prof::nccl::RemoveComm(comm);  // the handle may be reused; the window keeps the communicator
  return r;
}

NCCL_WRAPPER ncclResult_t ncclCommAbort(ncclComm_t comm) {
  REAL(ncclCommAbort);
  ncclResult_t r = real(comm);
  prof::nccl::RemoveComm(comm);
  return r;
}

// ---- collectives and point-to-point

NCCL_WRAPPER ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclAllReduce);
  return Collective(CallArgs{CollFunc::kAllReduce, comm, 0, count, datatype, -1, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclBroadcast);
  return Collective(CallArgs{CollFunc::kBroadcast, comm, 0, count, datatype, root, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  REAL(ncclBcast);
  return Collective(CallArgs{CollFunc::kBroadcast, comm, 0, count, datatype, root, StreamOf(stream)},
                    [&] { return real(buff, count, datatype, root, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclReduce);
  return Collective(CallArgs{CollFunc::kReduce, comm, 0, count, datatype, root, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, op, root, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclAllGather);
  return Collective(CallArgs{CollFunc::kAllGather, comm, 0, sendcount, datatype, -1, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  REAL(ncclReduceScatter);
  return Collective(CallArgs{CollFunc::kReduceScatter, comm, 0, recvcount, datatype, -1, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, recvcount, datatype, op, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclAlltoAll);
  return Collective(CallArgs{CollFunc::kAlltoAll, comm, 0, count, datatype, -1, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, comm, stream); });
}

// One wrapper per NCCL collective: the exported symbols' shape, not shared logic.
NCCL_WRAPPER ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclGather);
  return Collective(CallArgs{CollFunc::kGather, comm, 0, count, datatype, root, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclScatter);
  return Collective(CallArgs{CollFunc::kScatter, comm, 0, count, datatype, root, StreamOf(stream)},
                    [&] { return real(sendbuff, recvbuff, count, datatype, root, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclSend);
  return Collective(CallArgs{CollFunc::kSend, comm, 0, count, datatype, peer, StreamOf(stream)},
                    [&] { return real(sendbuff, count, datatype, peer, comm, stream); });
}

NCCL_WRAPPER ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  REAL(ncclRecv);
  return Collective(CallArgs{CollFunc::kRecv, comm, 0, count, datatype, peer, StreamOf(stream)},
                    [&] { return real(recvbuff, count, datatype, peer, comm, stream); });
}

// ---- groups: calls inside are launched by the outermost ncclGroupEnd

NCCL_WRAPPER ncclResult_t ncclGroupStart() {
  REAL(ncclGroupStart);
  ncclResult_t r = real();
  if (r == ncclSuccess) prof::nccl::GroupStarted();
  return r;
}

NCCL_WRAPPER ncclResult_t ncclGroupEnd() {
  REAL(ncclGroupEnd);
  if (!prof::nccl::InGroup()) return real();  // NCCL's own error (no group open)
  prof::LaunchSink launches;
  const bool recording = (prof::LoadHotBits() & prof::kHotRecording) != 0;
  prof::nccl::tls_in_wrapper = true;
  ncclResult_t r = recording ? static_cast<ncclResult_t>(prof::nccl::RunCollecting(&launches, [&] { return static_cast<int>(real()); }))
                             : real();
  prof::nccl::tls_in_wrapper = false;
  prof::nccl::GroupEnded(launches, recording);
  return r;
}
