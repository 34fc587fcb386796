#include "collectors/cupti/graph_sites.h"

namespace prof::cupti {

bool GraphSites::Created(uint64_t node_id, uint32_t stack) {
  if (node_id == 0 || stack == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (stack_of_.size() >= kMaxNodes && stack_of_.find(node_id) == stack_of_.end()) {
    ++dropped_;
    return false;
  }
  stack_of_.try_emplace(node_id, stack);
  return true;
}

bool GraphSites::Cloned(uint64_t node_id, uint64_t original_id) {
  if (node_id == 0 || original_id == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto original = stack_of_.find(original_id);
  if (original == stack_of_.end()) return true;
  uint32_t stack = original->second;
  if (stack_of_.size() >= kMaxNodes && stack_of_.find(node_id) == stack_of_.end()) {
    ++dropped_;
    return false;
  }
  stack_of_[node_id] = stack;
  return true;
}

uint32_t GraphSites::StackOf(uint64_t node_id) const {
  if (node_id == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stack_of_.find(node_id);
  return it == stack_of_.end() ? 0 : it->second;
}

uint64_t GraphSites::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace prof::cupti
