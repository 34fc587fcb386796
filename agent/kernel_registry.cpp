#include "agent/kernel_registry.h"

namespace prof {

void KernelRegistry::Insert(const void* key, uint32_t name_id) {
  auto k = reinterpret_cast<uintptr_t>(key);
  if (k == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t i = 0, h = Hash(k); i < kCapacity; ++i, h = (h + 1) & (kCapacity - 1)) {
    uintptr_t existing = slots_[h].key.load(std::memory_order_relaxed);
    if (existing == k || existing == 0) {
      // Name first, then key (release): a reader that sees the key sees the name.
      slots_[h].name_id.store(name_id, std::memory_order_relaxed);
      slots_[h].key.store(k, std::memory_order_release);
      return;
    }
  }
  // Full: the kernel stays unnamed.
}

uint32_t KernelRegistry::Find(const void* key) const {
  auto k = reinterpret_cast<uintptr_t>(key);
  if (k == 0) return 0;
  for (uint32_t i = 0, h = Hash(k); i < kCapacity; ++i, h = (h + 1) & (kCapacity - 1)) {
    uintptr_t existing = slots_[h].key.load(std::memory_order_acquire);
    if (existing == k) return slots_[h].name_id.load(std::memory_order_relaxed);
    if (existing == 0) return 0;
  }
  return 0;
}

KernelRegistry& Kernels() {
  static KernelRegistry* registry = new KernelRegistry;  // lives until exit
  return *registry;
}

}  // namespace prof
