#include "collectors/cupti/launch_registry.h"

#include <algorithm>

namespace prof::cupti {

LaunchRegistry::LaunchRegistry(size_t max_calls) : max_per_shard_(max_calls / kShards + (max_calls % kShards != 0)) {
  // Sized up front: growing (rehashing) under a shard lock would stall the
  // application threads that launch meanwhile.
  for (Shard& shard : shards_) shard.calls.reserve(std::min<size_t>(max_per_shard_, 8192));
}

void LaunchRegistry::OnEnter(uint32_t correlation_id, uint64_t enter_ns, bool expects_record, uint32_t parent_id) {
  if (correlation_id == 0) return;
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<std::mutex> lock(shard.mutex);
  if (shard.calls.size() >= max_per_shard_ && shard.calls.find(correlation_id) == shard.calls.end()) {
    overflowed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  shard.calls[correlation_id] = Call{enter_ns, parent_id, expects_record, false};
}

void LaunchRegistry::OnExit(uint32_t correlation_id, bool succeeded) {
  if (succeeded) return;
  Shard& shard = ShardOf(correlation_id);
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.calls.find(correlation_id);
  if (it != shard.calls.end()) it->second.expects_record = false;
}

bool LaunchRegistry::EnterNs(uint32_t correlation_id, uint64_t* enter_ns) const {
  const Shard& shard = ShardOf(correlation_id);
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto it = shard.calls.find(correlation_id);
  if (it == shard.calls.end()) return false;
  *enter_ns = it->second.enter_ns;
  return true;
}

void LaunchRegistry::MarkDelivered(uint32_t correlation_id) {
  uint32_t parent_id = 0;
  {
    Shard& shard = ShardOf(correlation_id);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.calls.find(correlation_id);
    if (it == shard.calls.end()) return;
    it->second.delivered = true;
    parent_id = it->second.parent_id;
  }
  if (parent_id == 0) return;
  Shard& shard = ShardOf(parent_id);
  std::lock_guard<std::mutex> lock(shard.mutex);
  auto parent = shard.calls.find(parent_id);
  if (parent != shard.calls.end()) parent->second.delivered = true;
}

uint64_t LaunchRegistry::Outstanding(uint64_t start_ns, uint64_t end_ns) const {
  uint64_t count = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (const auto& [id, call] : shard.calls) {
      if (call.expects_record && !call.delivered && call.enter_ns >= start_ns && call.enter_ns < end_ns) ++count;
    }
  }
  return count;
}

void LaunchRegistry::ForgetBefore(uint64_t end_ns) {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    std::erase_if(shard.calls, [end_ns](const auto& entry) { return entry.second.enter_ns < end_ns; });
  }
}

void LaunchRegistry::Clear() {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.calls.clear();
  }
}

size_t LaunchRegistry::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total += shard.calls.size();
  }
  return total;
}

uint64_t LaunchRegistry::overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

}  // namespace prof::cupti
