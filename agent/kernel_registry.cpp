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
      slots_[h].name_and_verdict.store(name_id & kNameMask, std::memory_order_relaxed);
      slots_[h].key.store(k, std::memory_order_release);
      return;
    }
  }
  // Full: the kernel stays unnamed.
}

void KernelRegistry::SetVerdict(const void* key, uint32_t name_id, Verdict verdict) {
  auto* slot = const_cast<Slot*>(FindSlot(reinterpret_cast<uintptr_t>(key)));
  if (slot == nullptr || name_id == 0 || verdict == Verdict::kUnknown) return;
  uint32_t expected = name_id & kNameMask;
  slot->name_and_verdict.compare_exchange_strong(
      expected, expected | static_cast<uint32_t>(verdict) << kVerdictShift, std::memory_order_relaxed);
}

void KernelRegistry::ForgetVerdicts() {
  for (Slot& slot : slots_) {
    if (slot.name_and_verdict.load(std::memory_order_relaxed) >> kVerdictShift) {
      slot.name_and_verdict.fetch_and(kNameMask, std::memory_order_relaxed);
    }
  }
}

KernelRegistry& Kernels() {
  static KernelRegistry* registry = new KernelRegistry;  // lives until exit
  return *registry;
}

}  // namespace prof
