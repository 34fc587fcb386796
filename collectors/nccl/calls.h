// What the NCCL wrappers (wrappers.cpp) and libprof's NCCL profiler plugin
// (plugin.cpp) share: communicators by handle with their per-communicator
// sequence numbers, and recording one call with the launches it made.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/device_collector.h"
#include "model/events.h"

namespace prof::nccl {

// True on a thread while a wrapper runs the real NCCL call: the plugin then
// ignores the events NCCL sends it for that call (the wrapper records it).
inline thread_local bool tls_in_wrapper = false;

// Sequence numbers of one communicator, counted for every call (in and out
// of windows): each rank counts the same calls, so equal numbers name the
// same collective on every rank.
struct CommSeq {
  std::atomic<uint64_t> coll{0};
  std::atomic<uint64_t> p2p{0};
  // Counts one call: its number on this communicator, from 1.
  uint64_t Next(bool is_p2p) {
    return (is_p2p ? p2p : coll).fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

// Send and Recv are numbered in CommSeq::p2p, every other call in coll.
inline bool IsP2p(CollFunc f) { return f == CollFunc::kSend || f == CollFunc::kRecv; }

// Communicators the wrappers saw created, by handle (ncclComm_t). Lookups
// are lock-free (a fixed open-addressed table); creation and destruction are
// rare and take a lock.
struct CommSlot {
  std::atomic<uintptr_t> handle{0};  // 0: free; kTombstone: freed
  CommInfo info;                     // written before handle is published
  CommSeq seq;
  std::atomic<uint32_t> splits{0};   // ncclCommSplit calls on it (the child's id needs the round)
};
CommSlot* FindComm(const void* handle);
// Registers (or re-registers) handle; returns its slot (nullptr: table full).
CommSlot* AddComm(const void* handle, const CommInfo& info);
void RemoveComm(const void* handle);

// Records one call made while recording (not in a group: at once; in a
// group: when the group ends, with the group's launches).
struct CallArgs {
  CollFunc func;
  const void* comm;  // the wrappers' handle (looked up for its id), or null
  uint64_t comm_id;  // used when comm is null (the plugin knows the id)
  uint64_t count;
  int datatype;
  int root_or_peer;
  uint64_t stream;
};

// Runs `call` (the real NCCL function) with the launches it makes
// collected; *launches receives them.
template <typename Call>
int RunCollecting(LaunchSink* sink, Call call) {
  LaunchSink* outer = tls_launch_sink;
  tls_launch_sink = sink;
  int result = call();
  tls_launch_sink = outer;
  return result;
}

void FinishCall(const CallArgs& args, uint64_t seq, uint64_t start_ns, uint64_t end_ns, int result,
                const LaunchSink& launches, CollSource source);

// Group nesting on this thread (ncclGroupStart/End through the wrappers).
void GroupStarted();
// The outermost ncclGroupEnd returned: the group's calls get its launches.
void GroupEnded(const LaunchSink& launches, bool recording);
bool InGroup();

// CollFunc from NCCL's profiler strings ("AllReduce", "Send", ...); kCount if unknown.
CollFunc FuncFromName(const char* name);
// ncclDataType_t from NCCL's profiler strings ("ncclFloat32", ...); -1 if unknown.
int DatatypeFromName(const char* name);

}  // namespace prof::nccl
