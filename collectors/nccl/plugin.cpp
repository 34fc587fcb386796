// libprof as an NCCL profiler plugin (interfaces v4, v5 and v6: NCCL 2.27
// and later), for NCCL linked into a program or library, where its calls
// cannot be interposed. libprof sets NCCL_PROFILER_PLUGIN to its own path
// when the variable is unset (agent start), so NCCL opens it (a library
// already loaded: the same handle). NCCL calls init once per communicator;
// libprof asks for the Coll and P2p events only: their start and stop
// bracket the kernel's launch on the calling thread, so the CUPTI launches
// between them are the call's. A call made through libprof's wrappers
// (NCCL shared) is recorded there and ignored here.
#include <dlfcn.h>

#include <cstring>
#include <new>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/thread_id.h"
#include "base/loader_guard.h"
#include "base/agent_hooks.h"
#include "collectors/nccl/calls.h"
#include "collectors/nccl/profiler_abi.h"

namespace prof::nccl {
namespace {

struct PluginComm {
  uint64_t id;
  int rank;
  int nranks;
  CommSeq seq;
  std::atomic<bool> registered{false};
};

struct OpenCall {
  CallArgs args;
  uint64_t seq;
  uint64_t start_ns;
  uint32_t tid;
  LaunchSink launches;
  LaunchSink* outer;
};

// NCCL does not tell a plugin its version: ask the library when it is a
// shared one (NCCL linked into a program usually exports nothing: unknown).
void NoteVersion() {
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  void* fn = nullptr;
  {
    LoaderSection section;  // base/loader_guard.h
    fn = dlsym(RTLD_DEFAULT, "pncclGetVersion");
    if (fn == nullptr) {
      if (void* lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) fn = dlsym(lib, "pncclGetVersion");
    }
  }
  int version = 0;
  if (fn != nullptr && reinterpret_cast<int (*)(int*)>(fn)(&version) == 0) hooks::SetNcclVersion(version);
}

PluginComm g_inert{};  // the context of every communicator while no agent runs

Result Init(void** context, uint64_t comm_id, int* mask, int nranks, int rank) {
  if (context == nullptr || mask == nullptr) return 1;
  // No agent (PROF_ENABLE=0, or a process libprof was not injected into that
  // inherited NCCL_PROFILER_PLUGIN: agent_start.cpp): no event is asked for,
  // so NCCL calls nothing here for this communicator. The context is a
  // shared inert one, never freed (what a NCCL does with a null one is not
  // documented).
  if (!hooks::AgentRunning()) {
    *context = &g_inert;
    *mask = 0;
    return kSuccess;
  }
  NoteVersion();
  auto* comm = new (std::nothrow) PluginComm();
  if (comm == nullptr) return 1;
  comm->id = comm_id;
  comm->rank = rank;
  comm->nranks = nranks;
  *context = comm;
  *mask = static_cast<int>(kProfileColl | kProfileP2p);
  return kSuccess;
}

Result InitFnV4(void** context, int* mask, const char*, uint64_t comm_hash, int, int nranks, int rank, Logger) {
  return Init(context, comm_hash, mask, nranks, rank);
}
Result InitFnV5(void** context, uint64_t comm_id, int* mask, const char*, int, int nranks, int rank, Logger) {
  return Init(context, comm_id, mask, nranks, rank);
}

// type, rank and the coll/p2p members before v5's parentGroup are at the
// same offsets in every version; only the type's width differs.
Result StartCall(void* context, void** handle, uint64_t type, const CollV4* coll, const P2pV4* p2p) {
  *handle = nullptr;
  if (context == nullptr || context == &g_inert || (type != kProfileColl && type != kProfileP2p)) return kSuccess;
  if (tls_in_wrapper) return kSuccess;  // the wrapper records this call
  auto* comm = static_cast<PluginComm*>(context);
  hooks::NoteCollective();  // the job's iteration count (PROF_STEP=auto on several ranks)
  const bool is_p2p = type == kProfileP2p;
  const uint64_t seq = comm->seq.Next(is_p2p);
  if ((LoadHotBits() & kHotRecording) == 0) return kSuccess;
  if (!comm->registered.exchange(true)) {
    CommInfo info;
    info.id = comm->id;
    info.rank = comm->rank;
    info.nranks = comm->nranks;
    info.source = static_cast<uint8_t>(CollSource::kProfilerPlugin);
    hooks::RegisterComm(info);
  }
  auto* call = new (std::nothrow) OpenCall();
  if (call == nullptr) return kSuccess;
  call->args.comm = nullptr;
  call->args.comm_id = comm->id;
  call->args.stream = 0;  // not in the task's descriptor
  if (is_p2p) {
    call->args.func = FuncFromName(p2p->func);
    call->args.count = p2p->count;
    call->args.datatype = DatatypeFromName(p2p->datatype);
    call->args.root_or_peer = p2p->peer;
  } else {
    call->args.func = FuncFromName(coll->func);
    call->args.count = coll->count;
    call->args.datatype = DatatypeFromName(coll->datatype);
    const bool rooted = call->args.func == CollFunc::kBroadcast || call->args.func == CollFunc::kReduce ||
                        call->args.func == CollFunc::kGather || call->args.func == CollFunc::kScatter;
    call->args.root_or_peer = rooted ? coll->root : -1;
  }
  if (call->args.func == CollFunc::kCount) {  // a name this libprof does not know
    delete call;
    return kSuccess;
  }
  call->seq = seq;
  call->tid = ThisThreadId();
  call->start_ns = NowNs();
  call->outer = tls_launch_sink;
  tls_launch_sink = &call->launches;
  *handle = call;
  return kSuccess;
}

Result StartV4(void* context, void** handle, DescrV4* d) {
  if (handle == nullptr || d == nullptr) return kSuccess;
  return StartCall(context, handle, d->type, &d->coll, &d->p2p);
}
Result StartV5(void* context, void** handle, DescrV5* d) {
  if (handle == nullptr || d == nullptr) return kSuccess;
  return StartCall(context, handle, d->type, &d->coll.v4, &d->p2p.v4);
}

Result Stop(void* handle) {
  if (handle == nullptr) return kSuccess;
  auto* call = static_cast<OpenCall*>(handle);
  const bool same_thread = call->tid == ThisThreadId();
  if (same_thread && tls_launch_sink == &call->launches) tls_launch_sink = call->outer;
  LaunchSink none;
  FinishCall(call->args, call->seq, call->start_ns, NowNs(), 0, same_thread ? call->launches : none,
             CollSource::kProfilerPlugin);
  delete call;
  return kSuccess;
}

Result RecordState(void*, int, void*) { return kSuccess; }

Result Finalize(void* context) {
  if (context != &g_inert) delete static_cast<PluginComm*>(context);
  return kSuccess;
}

}  // namespace
}  // namespace prof::nccl

extern "C" {
// NCCL probes v6, then v5, then v4 and takes the first it finds.
__attribute__((visibility("default"))) prof::nccl::Table<prof::nccl::InitV4, prof::nccl::DescrV4> ncclProfiler_v4 = {
    "libprof", &prof::nccl::InitFnV4, &prof::nccl::StartV4, &prof::nccl::Stop, &prof::nccl::RecordState,
    &prof::nccl::Finalize};
__attribute__((visibility("default"))) prof::nccl::Table<prof::nccl::InitV5, prof::nccl::DescrV5> ncclProfiler_v5 = {
    "libprof", &prof::nccl::InitFnV5, &prof::nccl::StartV5, &prof::nccl::Stop, &prof::nccl::RecordState,
    &prof::nccl::Finalize};
// v6's descriptor extends v5's union with copy-engine events libprof does not ask for.
__attribute__((visibility("default"))) prof::nccl::Table<prof::nccl::InitV5, prof::nccl::DescrV5> ncclProfiler_v6 = {
    "libprof", &prof::nccl::InitFnV5, &prof::nccl::StartV5, &prof::nccl::Stop, &prof::nccl::RecordState,
    &prof::nccl::Finalize};
}
