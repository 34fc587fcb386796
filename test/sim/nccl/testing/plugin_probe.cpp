// A profiler plugin for the sim's tests: exports ncclProfiler_v<PROBE_VERSION>
// only, asks for every event type the sim sends, and writes one line per
// event to $PLUGIN_PROBE_FILE (append): what NCCL passed, so a test can
// compare it with the sim's truth log. PLUGIN_PROBE_FAIL_INIT: init fails;
// PLUGIN_PROBE_NULL_CONTEXT: init keeps no context (sets it to null).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../profiler_abi.h"

using namespace simnccl;

namespace {

struct Context {
  uint64_t comm;
  int rank;
  int nranks;
};
struct Event {
  uint64_t type;
  Context* ctx;
};

void Write(const std::string& line) {
  const char* path = getenv("PLUGIN_PROBE_FILE");
  if (!path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0) return;
  std::string l = line + "\n";
  if (write(fd, l.data(), l.size()) < 0) {
  }
  close(fd);
}

const char* Str(const char* s) { return s ? s : ""; }

ncclResult_t Init(void** context, uint64_t comm, int* mask, const char* name, int nodes, int nranks, int rank) {
  if (getenv("PLUGIN_PROBE_FAIL_INIT")) return ncclInternalError;
  auto* c = getenv("PLUGIN_PROBE_NULL_CONTEXT") ? nullptr : new Context{comm, rank, nranks};
  *context = c;
  *mask = kProfileGroup | kProfileColl | kProfileP2p | kProfileKernelCh | kProfileGroupApi | kProfileCollApi |
          kProfileP2pApi | kProfileKernelLaunch;
  char b[256];
  snprintf(b, sizeof(b), "{\"ev\":\"init\",\"version\":%d,\"comm\":\"0x%016" PRIx64 "\",\"rank\":%d,\"nranks\":%d,\"nodes\":%d,\"name\":\"%s\",\"pid\":%d}",
           PROBE_VERSION, comm, rank, nranks, nodes, Str(name), static_cast<int>(getpid()));
  Write(b);
  return ncclSuccess;
}

template <typename Descr>
ncclResult_t StartCommon(void* context, void** handle, Descr* d) {
  auto* c = static_cast<Context*>(context);
  char b[512];
  b[0] = 0;
  const uint64_t type = d->type;
  if (type == kProfileColl) {
    snprintf(b, sizeof(b),
             "{\"ev\":\"coll\",\"pid\":%d,\"rank\":%d,\"seq\":%" PRIu64 ",\"func\":\"%s\",\"count\":%zu,\"root\":%d,"
             "\"datatype\":\"%s\",\"channels\":%d,\"algo\":\"%s\",\"proto\":\"%s\",\"parent\":%d}",
             static_cast<int>(getpid()), d->rank, d->coll.seqNumber, Str(d->coll.func), d->coll.count, d->coll.root,
             Str(d->coll.datatype), d->coll.nChannels, Str(d->coll.algo), Str(d->coll.proto), d->parentObj != nullptr);
  } else if (type == kProfileP2p) {
    snprintf(b, sizeof(b),
             "{\"ev\":\"p2p\",\"pid\":%d,\"rank\":%d,\"func\":\"%s\",\"count\":%zu,\"peer\":%d,\"datatype\":\"%s\"}",
             static_cast<int>(getpid()), d->rank, Str(d->p2p.func), d->p2p.count, d->p2p.peer, Str(d->p2p.datatype));
  } else if (type == kProfileKernelCh && c == nullptr) {
    snprintf(b, sizeof(b), "{\"ev\":\"kernel_ch_start\",\"pid\":%d,\"null_context\":true}", static_cast<int>(getpid()));
  } else if (type == kProfileKernelCh) {
    snprintf(b, sizeof(b), "{\"ev\":\"kernel_ch_start\",\"pid\":%d,\"channel\":%d,\"ptimer\":%" PRIu64 ",\"parent\":%d}",
             static_cast<int>(getpid()), d->kernelCh.channelId, d->kernelCh.pTimer, d->parentObj != nullptr);
  } else {
    snprintf(b, sizeof(b), "{\"ev\":\"type\",\"pid\":%d,\"type\":%" PRIu64 "}", static_cast<int>(getpid()), type);
  }
  Write(b);
  *handle = new Event{type, c};
  return ncclSuccess;
}

ncclResult_t Stop(void* handle) {
  delete static_cast<Event*>(handle);
  return ncclSuccess;
}

ncclResult_t Record(void* handle, int state, StateArgs* args) {
  auto* e = static_cast<Event*>(handle);
  if (e->type == kProfileKernelCh && state == kStateKernelChStop) {
    char b[128];
    snprintf(b, sizeof(b), "{\"ev\":\"kernel_ch_stop\",\"pid\":%d,\"ptimer\":%" PRIu64 "}", static_cast<int>(getpid()),
             args->kernelCh.pTimer);
    Write(b);
  }
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  auto* c = static_cast<Context*>(context);
  char b[128];
  snprintf(b, sizeof(b), "{\"ev\":\"finalize\",\"pid\":%d,\"rank\":%d}", static_cast<int>(getpid()), c ? c->rank : -1);
  Write(b);
  delete c;
  return ncclSuccess;
}

}  // namespace

#if PROBE_VERSION == 4
ncclResult_t InitV4Fn(void** ctx, int* mask, const char* name, uint64_t hash, int nodes, int nranks, int rank, DebugLogger) {
  return Init(ctx, hash, mask, name, nodes, nranks, rank);
}
extern "C" {
__attribute__((visibility("default"))) ProfilerV4 ncclProfiler_v4 = {
    "probe-v4", &InitV4Fn, &StartCommon<EventDescrV4>, &Stop, &Record, &Finalize};
}
#else
ncclResult_t InitV5Fn(void** ctx, uint64_t id, int* mask, const char* name, int nodes, int nranks, int rank, DebugLogger) {
  return Init(ctx, id, mask, name, nodes, nranks, rank);
}
#if PROBE_VERSION == 5
extern "C" {
__attribute__((visibility("default"))) ProfilerV5 ncclProfiler_v5 = {
    "probe-v5", &InitV5Fn, &StartCommon<EventDescrV5>, &Stop, &Record, &Finalize};
}
#else
extern "C" {
__attribute__((visibility("default"))) ProfilerV6 ncclProfiler_v6 = {
    "probe-v6", &InitV5Fn, &StartCommon<EventDescrV6>, &Stop, &Record, &Finalize};
}
#endif
#endif
