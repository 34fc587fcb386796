#include "collectors/nccl/calls.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "base/clock.h"
#include "base/thread_id.h"
#include "base/agent_hooks.h"
#include "model/collectives.h"

namespace prof::nccl {
namespace {

constexpr size_t kCommSlots = 512;
constexpr uintptr_t kTombstone = 1;
CommSlot g_comms[kCommSlots];
std::mutex g_comms_mutex;  // creation and removal only

size_t SlotOf(const void* handle) {
  uintptr_t h = reinterpret_cast<uintptr_t>(handle);
  h ^= h >> 17;
  h *= 0xed5ad4bbu;
  h ^= h >> 11;
  return h % kCommSlots;
}

thread_local int t_group_depth = 0;
struct PendingCall {
  CallArgs args;
  uint64_t seq;
  uint64_t start_ns;
  uint64_t end_ns;
  int result;
};
thread_local std::vector<PendingCall>* t_group_calls = nullptr;

}  // namespace

CommSlot* FindComm(const void* handle) {
  if (handle == nullptr) return nullptr;
  const uintptr_t key = reinterpret_cast<uintptr_t>(handle);
  for (size_t i = 0, s = SlotOf(handle); i < kCommSlots; ++i, s = (s + 1) % kCommSlots) {
    uintptr_t k = g_comms[s].handle.load(std::memory_order_acquire);
    if (k == key) return &g_comms[s];
    if (k == 0) return nullptr;
  }
  return nullptr;
}

CommSlot* AddComm(const void* handle, const CommInfo& info) {
  if (handle == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  if (CommSlot* existing = FindComm(handle)) {
    existing->info = info;
    return existing;
  }
  for (size_t i = 0, s = SlotOf(handle); i < kCommSlots; ++i, s = (s + 1) % kCommSlots) {
    uintptr_t k = g_comms[s].handle.load(std::memory_order_relaxed);
    if (k == 0 || k == kTombstone) {
      g_comms[s].info = info;
      g_comms[s].seq.coll.store(0, std::memory_order_relaxed);
      g_comms[s].seq.p2p.store(0, std::memory_order_relaxed);
      g_comms[s].splits.store(0, std::memory_order_relaxed);
      g_comms[s].handle.store(reinterpret_cast<uintptr_t>(handle), std::memory_order_release);
      return &g_comms[s];
    }
  }
  return nullptr;
}

void RemoveComm(const void* handle) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  if (CommSlot* slot = FindComm(handle)) slot->handle.store(kTombstone, std::memory_order_release);
}

namespace {

void Record(const CallArgs& args, uint64_t seq, uint64_t start_ns, uint64_t end_ns, int result, uint32_t correlation,
            CollSource source) {
  CollectiveCall c{};
  c.start_ns = start_ns;
  c.end_ns = end_ns;
  CommSlot* slot = FindComm(args.comm);
  c.comm_id = slot ? slot->info.id : args.comm_id;
  c.count = args.count;
  c.seq = seq;
  c.stream = args.stream;
  c.tid = ThisThreadId();
  c.correlation_id = correlation;
  c.root_or_peer = args.root_or_peer;
  c.result = result;
  c.func = static_cast<uint8_t>(args.func);
  c.datatype = static_cast<int8_t>(args.datatype);
  c.source = static_cast<uint8_t>(source);
  hooks::RecordCollective(c);
}

}  // namespace

void FinishCall(const CallArgs& args, uint64_t seq, uint64_t start_ns, uint64_t end_ns, int result,
                const LaunchSink& launches, CollSource source) {
  if (t_group_depth > 0 && source == CollSource::kWrapper) {
    // Launched by the group's end: kept until then.
    if (t_group_calls == nullptr) t_group_calls = new std::vector<PendingCall>();
    if (t_group_calls->size() < 4096) t_group_calls->push_back(PendingCall{args, seq, start_ns, end_ns, result});
    return;
  }
  Record(args, seq, start_ns, end_ns, result, launches.count ? launches.ids[0] : 0, source);
}

void GroupStarted() { ++t_group_depth; }

bool InGroup() { return t_group_depth > 0; }

void GroupEnded(const LaunchSink& launches, bool recording) {
  if (t_group_depth > 0) --t_group_depth;
  if (t_group_depth > 0 || t_group_calls == nullptr) return;
  // NCCL launches a group's collectives in call order, then one kernel for
  // its sends and receives: the i-th collective gets the i-th launch, the
  // point-to-point calls the launch after the collectives (or, when the
  // launches do not add up, the first one).
  size_t colls = 0;
  for (const PendingCall& p : *t_group_calls) colls += IsP2p(p.args.func) ? 0 : 1;
  const bool exact = launches.count == colls + (colls < t_group_calls->size() ? 1 : 0);
  size_t next = 0;
  for (const PendingCall& p : *t_group_calls) {
    uint32_t correlation = 0;
    if (launches.count > 0) {
      if (!exact) {
        correlation = launches.ids[0];
      } else if (IsP2p(p.args.func)) {
        correlation = launches.ids[colls];
      } else {
        correlation = launches.ids[next++];
      }
    }
    if (recording) Record(p.args, p.seq, p.start_ns, p.end_ns, p.result, correlation, CollSource::kWrapper);
  }
  t_group_calls->clear();
}

CollFunc FuncFromName(const char* name) {
  if (name == nullptr) return CollFunc::kCount;
  for (uint8_t f = 0; f < static_cast<uint8_t>(CollFunc::kCount); ++f) {
    if (std::strcmp(name, CollFuncName(f)) == 0) return static_cast<CollFunc>(f);
  }
  return CollFunc::kCount;
}

int DatatypeFromName(const char* name) {
  static const char* const kNames[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",    "ncclUint32",
                                       "ncclInt64",   "ncclUint64",  "ncclFloat16",  "ncclFloat32",
                                       "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  if (name == nullptr) return -1;
  for (int i = 0; i < 12; ++i) {
    if (std::strcmp(name, kNames[i]) == 0) return i;
  }
  return -1;
}

}  // namespace prof::nccl
