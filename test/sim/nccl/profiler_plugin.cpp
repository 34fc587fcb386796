// The profiler plugin, loaded and called the way NCCL (2.27-2.29) does:
// NCCL_PROFILER_PLUGIN names the library (unset: libnccl-profiler.so;
// "none": no plugin; STATIC_PLUGIN: the program's own symbols), the newest
// interface it exports wins (ncclProfiler_v6, then v5, then v4), init runs
// once per communicator and may switch the plugin off for it, finalize at
// the communicator's teardown.
#include <dlfcn.h>
#include <stdarg.h>
#include <strings.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "internal.h"
#include "profiler_abi.h"

namespace simnccl {
namespace {

struct Loaded {
  int version = 0;
  ProfilerV4* v4 = nullptr;
  ProfilerV5* v5 = nullptr;
  ProfilerV6* v6 = nullptr;
  int64_t globaltimer_offset_ns = 0;  // GPU %globaltimer = sim clock + offset (Unix-epoch ns)
};

void Logger(DebugLogLevel level, unsigned long, const char* file, int line, const char* fmt, ...) {
  if (!getenv("NCCL_DEBUG") || level == kLogNone) return;
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "NCCL INFO [profiler %s:%d] ", file ? file : "?", line);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
}

void* Open(const char* env) {
  if (env && strncasecmp(env, "STATIC_PLUGIN", 13) == 0) return dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
  const std::string name = env ? env : "libnccl-profiler.so";
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  const bool lib_so = name.rfind("lib", 0) == 0 && name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0;
  if (!lib && env && !strchr(env, '/') && !lib_so) {
    lib = dlopen(("libnccl-profiler-" + name + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  return lib;
}

Loaded Load() {
  Loaded l;
  timespec real, raw;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC_RAW, &raw);
  l.globaltimer_offset_ns = (static_cast<int64_t>(real.tv_sec) - raw.tv_sec) * 1000000000ll + (real.tv_nsec - raw.tv_nsec);
  const char* env = getenv("NCCL_PROFILER_PLUGIN");
  if (env && strcasecmp(env, "none") == 0) return l;
  void* lib = Open(env);
  if (!lib) return l;
  // SIM_NCCL_PROFILER_NEWEST: an older NCCL, which probes from the newest
  // interface it knows (2.27: v4, 2.28: v5, 2.29: v6).
  const char* newest_env = getenv("SIM_NCCL_PROFILER_NEWEST");
  const int newest = newest_env && *newest_env ? atoi(newest_env) : 6;
  if (newest >= 6 && (l.v6 = static_cast<ProfilerV6*>(dlsym(lib, "ncclProfiler_v6")))) {
    l.version = 6;
  } else if (newest >= 5 && (l.v5 = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5")))) {
    l.version = 5;
  } else if ((l.v4 = static_cast<ProfilerV4*>(dlsym(lib, "ncclProfiler_v4")))) {
    l.version = 4;
  } else {
    if (getenv("NCCL_DEBUG")) fprintf(stderr, "NCCL INFO profiler plugin has no ncclProfiler_v4..v6 (older ones are not simulated)\n");
  }
  return l;
}

const Loaded& Plugin() {
  static const Loaded loaded = Load();
  return loaded;
}

// One descriptor for every version: the v6 layout, converted for v4.
ncclResult_t Start(ncclComm_t comm, void** handle, const EventDescrV6& d) {
  *handle = nullptr;
  const Loaded& p = Plugin();
  if (p.version >= 5) {
    // v5's union is v6's without the copy-engine members: the same offsets.
    return p.version == 6 ? p.v6->startEvent(comm->plugin_context, handle, const_cast<EventDescrV6*>(&d))
                          : p.v5->startEvent(comm->plugin_context, handle,
                                             reinterpret_cast<EventDescrV5*>(const_cast<EventDescrV6*>(&d)));
  }
  EventDescrV4 v4{};
  v4.type = static_cast<uint8_t>(d.type);
  v4.parentObj = d.parentObj;
  v4.rank = d.rank;
  if (d.type == kProfileColl) {
    v4.coll = CollDescrV4{d.coll.seqNumber, d.coll.func,     d.coll.sendBuff,  d.coll.recvBuff,
                          d.coll.count,     d.coll.root,     d.coll.datatype,  d.coll.nChannels,
                          d.coll.nWarps,    d.coll.algo,     d.coll.proto};
  } else if (d.type == kProfileP2p) {
    v4.p2p = P2pDescrV4{d.p2p.func, d.p2p.buff, d.p2p.datatype, d.p2p.count, d.p2p.peer, d.p2p.nChannels};
  } else if (d.type == kProfileKernelCh) {
    v4.kernelCh = d.kernelCh;
  }
  return p.v4->startEvent(comm->plugin_context, handle, &v4);
}

bool Wants(ncclComm_t comm, uint64_t bit) {
  return Plugin().version != 0 && comm->plugin_on && (comm->plugin_mask & bit) != 0;
}

void Stop(void* handle) {
  if (!handle) return;
  const Loaded& p = Plugin();
  if (p.version == 6) p.v6->stopEvent(handle);
  if (p.version == 5) p.v5->stopEvent(handle);
  if (p.version == 4) p.v4->stopEvent(handle);
}

void RecordState(void* handle, int state, StateArgs* args) {
  if (!handle) return;
  const Loaded& p = Plugin();
  if (p.version == 6) p.v6->recordEventState(handle, state, args);
  if (p.version == 5) p.v5->recordEventState(handle, state, args);
  if (p.version == 4) p.v4->recordEventState(handle, state, args);
}

EventDescrV6 Descr(ncclComm_t comm, uint64_t type, void* parent) {
  EventDescrV6 d;
  memset(&d, 0, sizeof(d));
  d.type = type;
  d.parentObj = parent;
  d.rank = comm->rank;
  return d;
}

}  // namespace

int PluginVersion() { return Plugin().version; }

void PluginCommInit(ncclComm_t comm) {
  const Loaded& p = Plugin();
  int mask = 0;
  void* ctx = nullptr;
  ncclResult_t r = ncclSuccess;
  const char* name = comm->comm_name.empty() ? nullptr : comm->comm_name.c_str();
  if (p.version == 6) r = p.v6->init(&ctx, comm->comm_hash, &mask, name, 1, comm->nranks, comm->rank, &Logger);
  if (p.version == 5) r = p.v5->init(&ctx, comm->comm_hash, &mask, name, 1, comm->nranks, comm->rank, &Logger);
  if (p.version == 4) r = p.v4->init(&ctx, &mask, name, comm->comm_hash, 1, comm->nranks, comm->rank, &Logger);
  if (p.version == 0 || r != ncclSuccess) {
    // An init that fails switches the plugin off for this communicator.
    comm->plugin_context = nullptr;
    comm->plugin_mask = 0;
    comm->plugin_on = false;
    return;
  }
  // As NCCL keeps it: events get the context init set, null included.
  comm->plugin_context = ctx;
  comm->plugin_mask = mask;
  comm->plugin_on = true;
}

void PluginCommFinalize(ncclComm_t comm) {
  // NCCL 2.27 and later finalize only a context init set.
  if (Plugin().version == 0 || !comm->plugin_on || !comm->plugin_context) return;
  const Loaded& p = Plugin();
  if (p.version == 6) p.v6->finalize(comm->plugin_context);
  if (p.version == 5) p.v5->finalize(comm->plugin_context);
  if (p.version == 4) p.v4->finalize(comm->plugin_context);
  comm->plugin_context = nullptr;
  comm->plugin_on = false;
}

namespace {
thread_local void* t_open_api = nullptr;        // the API event of the call in progress (v5+)
thread_local void* t_open_group_api = nullptr;
}  // namespace

void PluginApiStart(ncclComm_t comm, PluginOp* op, bool p2p) {
  if (Plugin().version < 5) return;
  if (Wants(comm, kProfileGroupApi)) {
    EventDescrV6 g = Descr(comm, kProfileGroupApi, nullptr);
    g.groupApi.groupDepth = 1;
    Start(comm, &op->group_api, g);
  }
  if (Wants(comm, p2p ? kProfileP2pApi : kProfileCollApi)) {
    EventDescrV6 d = Descr(comm, p2p ? kProfileP2pApi : kProfileCollApi, op->group_api);
    if (p2p) {
      d.p2pApi = P2pApiDescr{op->func, op->count, op->datatype, op->stream, false};
    } else {
      d.collApi = CollApiDescr{op->func, op->count, op->datatype, op->root, op->stream, false};
    }
    Start(comm, &op->api, d);
  }
  t_open_api = op->api;
  t_open_group_api = op->group_api;
}

void PluginApiStop(ncclComm_t, PluginOp* op) {
  Stop(op->api);
  Stop(op->group_api);
  op->api = op->group_api = nullptr;
  t_open_api = t_open_group_api = nullptr;
}

void PluginTaskStart(ncclComm_t comm, PluginOp* op, bool p2p) {
  if (Wants(comm, kProfileGroup)) Start(comm, &op->group, Descr(comm, kProfileGroup, nullptr));
  if (!Wants(comm, p2p ? kProfileP2p : kProfileColl)) return;
  // v4: the parent is the group; v5+: the API event while the call is in
  // progress (a task launched by ncclGroupEnd has none open), the group in parentGroup.
  void* parent = Plugin().version >= 5 ? t_open_api : op->group;
  EventDescrV6 d = Descr(comm, p2p ? kProfileP2p : kProfileColl, parent);
  if (p2p) {
    d.p2p.func = op->func;
    d.p2p.buff = strcmp(op->func, "Send") == 0 ? const_cast<void*>(op->sendbuff) : op->recvbuff;
    d.p2p.datatype = op->datatype;
    d.p2p.count = op->count;
    d.p2p.peer = op->peer;
    d.p2p.nChannels = op->channels;
    d.p2p.parentGroup = op->group;
  } else {
    d.coll.seqNumber = op->seq;
    d.coll.func = op->func;
    d.coll.sendBuff = op->sendbuff;
    d.coll.recvBuff = op->recvbuff;
    d.coll.count = op->count;
    d.coll.root = op->root;
    d.coll.datatype = op->datatype;
    d.coll.nChannels = op->channels;
    d.coll.nWarps = 16;
    d.coll.algo = op->algo;
    d.coll.proto = op->proto;
    d.coll.parentGroup = op->group;
  }
  Start(comm, &op->task, d);
}

void PluginLaunchStart(ncclComm_t comm, PluginOp* op, void** handle) {
  *handle = nullptr;
  if (!op || Plugin().version < 5 || !Wants(comm, kProfileKernelLaunch)) return;
  EventDescrV6 d = Descr(comm, kProfileKernelLaunch, t_open_group_api);
  d.kernelLaunch.stream = op->stream;
  Start(comm, handle, d);
}

void PluginLaunchStop(ncclComm_t, void* handle) { Stop(handle); }

void PluginTaskStop(ncclComm_t, PluginOp* op) {
  Stop(op->task);  // "enqueued": the kernel has not run yet
  Stop(op->group);
}

void PluginKernelDone(ncclComm_t comm, void* task, int channels, uint64_t start_ns, uint64_t end_ns) {
  if (!Wants(comm, kProfileKernelCh)) return;
  const int64_t offset = Plugin().globaltimer_offset_ns;
  for (int ch = 0; ch < channels; ++ch) {
    EventDescrV6 d = Descr(comm, kProfileKernelCh, task);
    d.kernelCh.channelId = static_cast<uint8_t>(ch);
    d.kernelCh.pTimer = static_cast<uint64_t>(static_cast<int64_t>(start_ns) + offset);
    void* h = nullptr;
    if (Start(comm, &h, d) != ncclSuccess || !h) continue;
    StateArgs args{};
    args.kernelCh.pTimer = static_cast<uint64_t>(static_cast<int64_t>(end_ns) + offset);
    RecordState(h, kStateKernelChStop, &args);
    Stop(h);
  }
}

}  // namespace simnccl
