// Host stub (and cudaKernel_t handle) -> interned kernel name, filled by the
// __cudaRegisterFunction and __cudaGetKernel wrappers, read lock-free by the
// launch wrappers. Open addressing over a fixed table: inserts take a mutex
// (registration is rare), lookups are a few relaxed/acquire loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace prof {

class KernelRegistry {
 public:
  static constexpr uint32_t kCapacity = 1u << 16;

  // Later inserts of the same key overwrite (a module reloaded).
  void Insert(const void* key, uint32_t name_id);
  // 0 when unknown.
  uint32_t Find(const void* key) const;
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<uint32_t> name_id{0};
  };
  static uint32_t Hash(uintptr_t key) { return static_cast<uint32_t>((key >> 4) * 0x9E3779B97F4A7C15ull >> 48); }

  std::mutex mu_;
  Slot slots_[kCapacity];
};

// The process's registry (constant-initialised storage: usable from
// registration wrappers that run before the agent starts).
KernelRegistry& Kernels();

}  // namespace prof
