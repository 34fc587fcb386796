#include "base/kernel_registry.h"

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
  if (!any_verdict_.load(std::memory_order_relaxed)) any_verdict_.store(true, std::memory_order_relaxed);
  uint32_t expected = name_id & kNameMask;
  slot->name_and_verdict.compare_exchange_strong(
      expected, expected | static_cast<uint32_t>(verdict) << kVerdictShift, std::memory_order_relaxed);
}

void KernelRegistry::ForgetVerdicts() {
  // None was ever set (every process at start): the table's 1 MiB stays
  // untouched.
  if (!any_verdict_.exchange(false, std::memory_order_relaxed)) return;
  for (Slot& slot : slots_) {
    if (slot.name_and_verdict.load(std::memory_order_relaxed) >> kVerdictShift) {
      slot.name_and_verdict.fetch_and(kNameMask, std::memory_order_relaxed);
    }
  }
}

namespace {

// Constant-initialised and all zero, so it lies in .bss: a process pays for
// the pages its registrations touch, not for 1 MiB at start (every process
// libprof is preloaded into, CUDA or not). Never destroyed: the union's
// destructor does not run the registry's, so wrappers called during exit
// still find it.
union RegistryStorage {
  constexpr RegistryStorage() : registry() {}
  ~RegistryStorage() {}
  KernelRegistry registry;
};
constinit RegistryStorage g_registry;

}  // namespace

KernelRegistry& Kernels() { return g_registry.registry; }

}  // namespace prof
