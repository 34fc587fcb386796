// The profiler-plugin interface NCCL calls (versions 4, 5 and 6), written
// from the layouts NCCL publishes for plugin authors (the example plugin's
// nccl/profiler_v4.h, profiler_v5.h, profiler_v6.h and profiler.h). Only the
// members this sim fills are named; the unions keep NCCL's member order so
// every offset is NCCL's (checked below).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nccl.h>

namespace simnccl {

// Event-type bits (profiler.h).
enum : uint64_t {
  kProfileGroup = 1 << 0,
  kProfileColl = 1 << 1,
  kProfileP2p = 1 << 2,
  kProfileProxyOp = 1 << 3,
  kProfileProxyStep = 1 << 4,
  kProfileProxyCtrl = 1 << 5,
  kProfileKernelCh = 1 << 6,
  kProfileNetPlugin = 1 << 7,
  kProfileGroupApi = 1 << 8,   // v5
  kProfileCollApi = 1 << 9,    // v5
  kProfileP2pApi = 1 << 10,    // v5
  kProfileKernelLaunch = 1 << 11,  // v5
};

// ncclProfilerEventState_t values this sim records.
enum ProfilerState : int {
  kStateKernelChStop = 22,
  kStateGroupStartApiStop = 23,
  kStateGroupEndApiStart = 24,
};

typedef enum { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 } DebugLogLevel;
typedef void (*DebugLogger)(DebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// NCCL's ABI as the sim's NCCL sees it; collectors/nccl declares it again: the two share no header.
struct CollDescrV4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pDescrV4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct ProxyOpDescr {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct KernelChDescr {
  uint8_t channelId;
  uint64_t pTimer;  // start, GPU globaltimer
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};

struct EventDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollDescrV4 coll;
    P2pDescrV4 p2p;
    ProxyOpDescr proxyOp;
    struct { int step; } proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

struct CollDescrV5 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
};
struct P2pDescrV5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct CollApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  int root;
  void* stream;
  bool graphCaptured;
};
struct P2pApiDescr {
  const char* func;
  size_t count;
  const char* datatype;
  void* stream;
  bool graphCaptured;
};

struct EventDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct { int graphCaptured; int groupDepth; } groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    struct { void* stream; } kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    struct { int step; } proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
  };
};

// Per-version layout, not logic: v5's union with a bool graphCaptured and v6's copy-engine member.
// v6 adds copy-engine descriptors to the union (never sent by this sim;
// the largest is kept so the union has v6's size).
struct EventDescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct { bool graphCaptured; int groupDepth; } groupApi;
    CollApiDescr collApi;
    P2pApiDescr p2pApi;
    struct { void* stream; } kernelLaunch;
    CollDescrV5 coll;
    P2pDescrV5 p2p;
    ProxyOpDescr proxyOp;
    struct { int step; } proxyStep;
    KernelChDescr kernelCh;
    NetPluginDescr netPlugin;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
  };
};

union StateArgs {  // the same for v4, v5 and v6
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
};

template <typename Descr, typename Init>
struct ProfilerTable {
  const char* name;
  Init init;
  ncclResult_t (*startEvent)(void* context, void** handle, Descr* descr);
  ncclResult_t (*stopEvent)(void* handle);
  ncclResult_t (*recordEventState)(void* handle, int state, StateArgs* args);
  ncclResult_t (*finalize)(void* context);
};
using InitV4 = ncclResult_t (*)(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int n_nodes,
                                int nranks, int rank, DebugLogger logfn);
using InitV5 = ncclResult_t (*)(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes,
                                int nranks, int rank, DebugLogger logfn);
using ProfilerV4 = ProfilerTable<EventDescrV4, InitV4>;
using ProfilerV5 = ProfilerTable<EventDescrV5, InitV5>;
using ProfilerV6 = ProfilerTable<EventDescrV6, InitV5>;

// Offsets on x86-64 as NCCL's headers give them.
static_assert(offsetof(EventDescrV4, coll) == 24 && offsetof(EventDescrV5, coll) == 24);
static_assert(offsetof(CollDescrV4, datatype) == 48 && offsetof(CollDescrV4, nChannels) == 56);
static_assert(offsetof(CollDescrV4, algo) == 64 && sizeof(CollDescrV4) == 80);
static_assert(offsetof(CollDescrV5, parentGroup) == 80 && sizeof(CollDescrV5) == 88);
static_assert(offsetof(P2pDescrV5, peer) == 32 && offsetof(P2pDescrV5, parentGroup) == 40);
static_assert(offsetof(CollApiDescr, stream) == 32 && offsetof(KernelChDescr, pTimer) == 8);
static_assert(sizeof(EventDescrV6) == 24 + 88 && sizeof(EventDescrV5) == 24 + 88);

}  // namespace simnccl
