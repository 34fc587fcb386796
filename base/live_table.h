// Open-addressing hash map from a nonzero pointer to its live allocation.
//
// The allocator wrappers insert and erase on every cudaMalloc/cudaFree;
// std::unordered_map allocates and frees a node for each. Here the slots are
// one array (linear probing, load <= 1/2, backward-shift deletion so there
// are no tombstones): a pair does no heap work unless the table grows, which
// doubles it (amortised, and rare once the program's working set is seen).
// Not thread-safe: AllocTracker holds its mutex around every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace prof {

template <typename V>
class LiveTable {
 public:
  explicit LiveTable(size_t initial_slots = 4096) { Rehash(RoundUp(initial_slots)); }

  // The value for key (nonzero), default-constructed if new; *inserted says which.
  V& FindOrInsert(uint64_t key, bool* inserted) {
    if ((size_ + 1) * 2 > mask_ + 1) Rehash((mask_ + 1) * 2);
    size_t i = Home(key);
    while (slots_[i].key != 0) {
      if (slots_[i].key == key) {
        *inserted = false;
        return slots_[i].value;
      }
      i = (i + 1) & mask_;
    }
    slots_[i].key = key;
    slots_[i].value = V{};
    ++size_;
    *inserted = true;
    return slots_[i].value;
  }

  // Removes key and copies its value to *out; false if absent.
  bool Erase(uint64_t key, V* out) {
    size_t i = Home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return false;
      i = (i + 1) & mask_;
    }
    *out = slots_[i].value;
    // Backward shift: move later entries of the probe run into the hole when
    // their home position does not lie strictly between hole and entry.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      size_t home = Home(slots_[j].key);
      bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole].key = 0;
    --size_;
    return true;
  }

  size_t size() const { return size_; }

  // f(key, const V&) for every entry, in slot order.
  template <typename F>
  void ForEach(F f) const {
    for (size_t i = 0; i <= mask_; ++i) {
      if (slots_[i].key != 0) f(slots_[i].key, slots_[i].value);
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;  // 0 = empty (a null pointer is never tracked)
    V value{};
  };

  static size_t RoundUp(size_t n) {
    size_t p = 16;
    while (p < n) p *= 2;
    return p;
  }
  // Allocation addresses share low zero bits; a multiplicative hash spreads them.
  size_t Home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_; }

  void Rehash(size_t slots) {
    // Allocate first: if that throws, the table is unchanged.
    std::unique_ptr<Slot[]> fresh = std::make_unique<Slot[]>(slots);
    size_t old_count = slots_ ? mask_ + 1 : 0;
    std::unique_ptr<Slot[]> old = std::exchange(slots_, std::move(fresh));
    mask_ = slots - 1;
    size_ = 0;
    for (size_t i = 0; i < old_count; ++i) {
      if (old[i].key == 0) continue;
      bool inserted = false;
      FindOrInsert(old[i].key, &inserted) = old[i].value;
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace prof
