#include "collectors/cupti/launch_registry.h"

namespace prof::cupti {

void LaunchRegistry::OnEnter(uint32_t correlation_id, uint64_t enter_ns, bool expects_record, uint32_t parent_id) {
  if (correlation_id == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (calls_.size() >= max_calls_ && calls_.find(correlation_id) == calls_.end()) {
    ++overflowed_;
    return;
  }
  calls_[correlation_id] = Call{enter_ns, parent_id, expects_record, false};
}

void LaunchRegistry::OnExit(uint32_t correlation_id, bool succeeded) {
  if (succeeded) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = calls_.find(correlation_id);
  if (it != calls_.end()) it->second.expects_record = false;
}

bool LaunchRegistry::EnterNs(uint32_t correlation_id, uint64_t* enter_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = calls_.find(correlation_id);
  if (it == calls_.end()) return false;
  *enter_ns = it->second.enter_ns;
  return true;
}

void LaunchRegistry::MarkDelivered(uint32_t correlation_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = calls_.find(correlation_id);
  if (it == calls_.end()) return;
  it->second.delivered = true;
  if (it->second.parent_id == 0) return;
  auto parent = calls_.find(it->second.parent_id);
  if (parent != calls_.end()) parent->second.delivered = true;
}

uint64_t LaunchRegistry::Outstanding(uint64_t start_ns, uint64_t end_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t count = 0;
  for (const auto& [id, call] : calls_) {
    if (call.expects_record && !call.delivered && call.enter_ns >= start_ns && call.enter_ns < end_ns) ++count;
  }
  return count;
}

void LaunchRegistry::ForgetBefore(uint64_t end_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(calls_, [end_ns](const auto& entry) { return entry.second.enter_ns < end_ns; });
}

void LaunchRegistry::Clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.clear();
}

size_t LaunchRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_.size();
}

uint64_t LaunchRegistry::overflowed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return overflowed_;
}

}  // namespace prof::cupti
