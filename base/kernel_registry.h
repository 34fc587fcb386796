// Host stub (and cudaKernel_t handle) -> interned kernel name, filled by the
// __cudaRegisterFunction and __cudaGetKernel wrappers, read lock-free by the
// launch wrappers. Open addressing over a fixed table: inserts take a mutex
// (registration is rare), lookups are a few relaxed/acquire loads.
//
// Beside each name, PROF_STEP=kernel:<regex>'s verdict on it, set by the
// first launch that asks (the matcher is configured after most kernels are
// registered): a later launch of a kernel that does not match is a plain
// call after this one lookup, without the marker path.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace prof {

class KernelRegistry {
 public:
  static constexpr uint32_t kCapacity = 1u << 16;

  constexpr KernelRegistry() = default;

  // Whether a launch of the key's kernel marks a step (PROF_STEP=kernel:).
  enum class Verdict : uint8_t { kUnknown = 0, kNoMatch = 1, kMatch = 2 };
  struct Entry {
    uint32_t name_id = 0;  // 0: unknown key
    Verdict verdict = Verdict::kUnknown;
  };

  // Later inserts of the same key overwrite (a module reloaded) and forget
  // the verdict.
  void Insert(const void* key, uint32_t name_id);
  // 0 when unknown.
  uint32_t Find(const void* key) const { return Lookup(key).name_id; }
  // Name and verdict, from one load of the slot. Inline: a launch wrapper's
  // whole cost under PROF_STEP=kernel: for a kernel that does not match.
  Entry Lookup(const void* key) const {
    const Slot* slot = FindSlot(reinterpret_cast<uintptr_t>(key));
    if (slot == nullptr) return {};
    uint32_t word = slot->name_and_verdict.load(std::memory_order_relaxed);
    return {word & kNameMask, static_cast<Verdict>(word >> kVerdictShift)};
  }
  // Records the verdict on name_id for key, if the key still has that name
  // and no verdict (a concurrent Insert wins).
  void SetVerdict(const void* key, uint32_t name_id, Verdict verdict);
  // Every verdict is forgotten (a runtime with another PROF_STEP installed).
  void ForgetVerdicts();
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  // A name and its verdict in one word, so a verdict never outlives its
  // name: name ids are permanent ids (< kTransientBase, base/strings.h).
  static constexpr int kVerdictShift = 30;
  static constexpr uint32_t kNameMask = (1u << kVerdictShift) - 1;
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<uint32_t> name_and_verdict{0};
  };
  const Slot* FindSlot(uintptr_t key) const {
    if (key == 0) return nullptr;
    for (uint32_t i = 0, h = Hash(key); i < kCapacity; ++i, h = (h + 1) & (kCapacity - 1)) {
      uintptr_t existing = slots_[h].key.load(std::memory_order_acquire);
      if (existing == key) return &slots_[h];
      if (existing == 0) return nullptr;
    }
    return nullptr;
  }
  static uint32_t Hash(uintptr_t key) { return static_cast<uint32_t>((key >> 4) * 0x9E3779B97F4A7C15ull >> 48); }

  std::mutex mu_;
  std::atomic<bool> any_verdict_{false};  // SetVerdict ran since the last ForgetVerdicts
  Slot slots_[kCapacity];
};

// The process's registry (constant-initialised storage: usable from
// registration wrappers that run before the agent starts).
KernelRegistry& Kernels();

}  // namespace prof
