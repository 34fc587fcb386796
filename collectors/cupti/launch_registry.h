// Which API call each correlation id belongs to: its enter time on the agent
// clock (window membership is decided by launch time) and whether it put
// device work in flight whose record has not been delivered yet (a window
// waits for those, bounded, and counts the ones that never come).
//
// Threads: OnEnter/OnExit run in CUPTI's API callbacks on application
// threads; the rest on the decoding (writer) thread. The table is split in
// shards by correlation id so threads launching at once rarely share a
// mutex. Lock order: each shard's mutex is a leaf; a parent lookup takes
// two shard locks one after the other, never nested.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace prof::cupti {

class LaunchRegistry {
 public:
  // At most max_calls calls are remembered at once; more are counted in
  // overflowed() and their records fall back to membership by start time.
  explicit LaunchRegistry(size_t max_calls);

  // expects_record: the call enqueues device work of an enabled kind.
  // parent_id: the runtime call a driver call was made from (0: none); a
  // record carrying either id satisfies both, since CUPTI documents some
  // records (memcpy) with the driver call's id and others with the runtime's.
  void OnEnter(uint32_t correlation_id, uint64_t enter_ns, bool expects_record, uint32_t parent_id = 0);
  // A failed call enqueued nothing: stop expecting a record for it.
  void OnExit(uint32_t correlation_id, bool succeeded);

  bool EnterNs(uint32_t correlation_id, uint64_t* enter_ns) const;
  void MarkDelivered(uint32_t correlation_id);

  // Calls entered in [start_ns, end_ns) still expecting their first record.
  uint64_t Outstanding(uint64_t start_ns, uint64_t end_ns) const;
  // Forgets every call entered before end_ns (their window is sealed).
  void ForgetBefore(uint64_t end_ns);
  void Clear();

  size_t size() const;
  uint64_t overflowed() const;

 private:
  struct Call {
    uint64_t enter_ns;
    uint32_t parent_id;
    bool expects_record;
    bool delivered;
  };
  static constexpr size_t kShards = 16;
  struct alignas(64) Shard {
    mutable std::mutex mutex;
    std::unordered_map<uint32_t, Call> calls;
  };
  Shard& ShardOf(uint32_t correlation_id) { return shards_[correlation_id % kShards]; }
  const Shard& ShardOf(uint32_t correlation_id) const { return shards_[correlation_id % kShards]; }

  size_t max_per_shard_;
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> overflowed_{0};
};

}  // namespace prof::cupti
