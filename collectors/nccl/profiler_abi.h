// The NCCL profiler-plugin interface libprof implements (versions 4, 5 and
// 6), from the layouts NCCL publishes for plugin authors (ext-profiler /
// plugins/profiler: nccl/profiler_v4.h .. profiler_v6.h). Only the event
// descriptors libprof reads are spelled out; the static_asserts pin NCCL's
// offsets on x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prof::nccl {

using Result = int;  // ncclResult_t: 0 success
constexpr Result kSuccess = 0;

// Event-type bits (nccl/profiler.h).
enum : uint64_t {
  kProfileGroup = 1 << 0,
  kProfileColl = 1 << 1,
  kProfileP2p = 1 << 2,
};

struct CollV4 {  // ncclProfilerEventDescr_v4_t::coll
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
struct P2pV4 {  // ::p2p
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
// v5 and v6 append parentGroup to both; the members before it are v4's.
struct CollV5 {
  CollV4 v4;
  void* parentGroup;
};
struct P2pV5 {
  P2pV4 v4;
  void* parentGroup;
};

struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollV4 coll;
    P2pV4 p2p;
    unsigned char union_bytes[80];
  };
};
// v5 and v6: a 64-bit type; v6's union only adds members (copy-engine events).
struct DescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    CollV5 coll;
    P2pV5 p2p;
    unsigned char union_bytes[88];
  };
};

static_assert(offsetof(DescrV4, coll) == 24 && offsetof(DescrV5, coll) == 24);
static_assert(offsetof(CollV4, count) == 32 && offsetof(CollV4, root) == 40 && offsetof(CollV4, datatype) == 48);
static_assert(offsetof(P2pV4, datatype) == 16 && offsetof(P2pV4, count) == 24 && offsetof(P2pV4, peer) == 32);
static_assert(sizeof(CollV5) == 88 && sizeof(P2pV5) == 48);

using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
using InitV4 = Result (*)(void** context, int* mask, const char* comm_name, uint64_t comm_hash, int n_nodes,
                          int nranks, int rank, Logger logfn);
using InitV5 = Result (*)(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes,
                          int nranks, int rank, Logger logfn);

// ncclProfiler_vN_t: the same shape in every version.
template <typename Init, typename Descr>
struct Table {
  const char* name;
  Init init;
  Result (*startEvent)(void* context, void** handle, Descr* descr);
  Result (*stopEvent)(void* handle);
  Result (*recordEventState)(void* handle, int state, void* args);
  Result (*finalize)(void* context);
};

}  // namespace prof::nccl
