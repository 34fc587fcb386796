// NCCL communicators and the collective calls made while a window records
// (collectors/nccl). Calls are coarse (a few per step and bucket), so a
// mutex-protected vector is enough, as for NVTX ranges.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "agent/session/events.h"
#include "agent/session/take_window.h"

namespace prof {

// One communicator this process is a rank of.
struct CommInfo {
  uint64_t id = 0;       // equal on every rank: a hash of its unique id (wrappers) or NCCL's commHash (plugin)
  int rank = 0;          // this process's rank in it
  int nranks = 0;
  uint64_t parent = 0;   // ncclCommSplit: the parent's id
  int color = -1;        // ncclCommSplit's colour
  uint8_t source = 0;    // CollSource
};

class CollectiveStore {
 public:
  explicit CollectiveStore(size_t max_calls = 1u << 18) : max_calls_(max_calls) {}
  void SetCapacity(size_t max_calls);
  void WindowOpens(uint64_t begin_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.Opens(begin_ns);
  }
  void Add(const CollectiveCall& call);
  // Calls that started in [begin_ns, end_ns); older ones are dropped.
  std::vector<CollectiveCall> Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped);

  // Communicators live for the process: every window lists them all.
  void AddComm(const CommInfo& comm);
  void RemoveComm(uint64_t id);
  std::vector<CommInfo> Comms();
  void SetNcclVersion(int version) { nccl_version_.store(version, std::memory_order_relaxed); }
  int NcclVersion() const { return nccl_version_.load(std::memory_order_relaxed); }
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  std::mutex mu_;
  std::vector<CollectiveCall> calls_;
  std::vector<CommInfo> comms_;
  size_t max_calls_;
  OpenWindows open_;  // mu_
  std::atomic<int> nccl_version_{0};
};

// "AllReduce", ... as NCCL names them; "?" out of range.
const char* CollFuncName(uint8_t func);
// Kineto's "Collective name" (PyTorch's names): "allreduce", "broadcast", ...
const char* CollKinetoName(uint8_t func);
// Kineto's "dtype" (c10 scalar type names) for an ncclDataType_t: "Float", ...; "" unknown.
const char* CollDtypeName(int datatype);
// Bytes per element of an ncclDataType_t; 0 unknown.
int CollTypeBytes(int datatype);
// "2.28.9" from NCCL_VERSION_CODE-style numbers (22809; 2.8 and older: 2804); "" for 0.
std::string NcclVersionText(int code);

}  // namespace prof
