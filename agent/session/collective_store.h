// NCCL communicators and the collective calls made while a window records
// (collectors/nccl). Calls are coarse (a few per step and bucket): they are
// kept in a WindowedStore, as NVTX ranges are.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/collectives.h"
#include "model/events.h"
#include "agent/session/take_window.h"

namespace prof {

class CollectiveStore {
 public:
  explicit CollectiveStore(size_t max_calls = 1u << 18) : calls_(max_calls) {}
  void SetCapacity(size_t max_calls) { calls_.SetCapacity(max_calls); }
  void WindowOpens(uint64_t begin_ns) { calls_.WindowOpens(begin_ns); }
  void Add(const CollectiveCall& call) { calls_.Add(call); }
  // Calls that started in [begin_ns, end_ns), by start; older ones are dropped.
  std::vector<CollectiveCall> Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped);

  // Communicators live for the process: every window lists them all.
  void AddComm(const CommInfo& comm);
  void RemoveComm(uint64_t id);
  std::vector<CommInfo> Comms();
  void SetNcclVersion(int version) { nccl_version_.store(version, std::memory_order_relaxed); }
  int NcclVersion() const { return nccl_version_.load(std::memory_order_relaxed); }
  void ResetMutexAfterFork() {
    new (&mu_) std::mutex();
    calls_.ResetMutexAfterFork();
  }

 private:
  WindowedStore<CollectiveCall> calls_;
  std::mutex mu_;
  std::vector<CommInfo> comms_;  // mu_
  std::atomic<int> nccl_version_{0};
};

}  // namespace prof
