#include "collectors/cupti/launch_registry.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

namespace prof::cupti {
namespace {

using Ref64 = std::atomic_ref<uint64_t>;
using Ref32 = std::atomic_ref<uint32_t>;

size_t RingCalls(size_t max_calls) { return std::bit_ceil(std::max<size_t>(max_calls, 2)); }

}  // namespace

void LaunchRegistry::FreeDeleter::operator()(Slot* p) const { std::free(p); }

size_t LaunchRegistry::BytesFor(size_t max_calls) { return RingCalls(max_calls) * sizeof(Slot); }

LaunchRegistry::LaunchRegistry(size_t max_calls) : mask_(RingCalls(max_calls) - 1) {
  // calloc: zero pages from the kernel, resident only once written, so a
  // large ring costs what the calls in it use.
  slots_.reset(static_cast<Slot*>(std::calloc(mask_ + 1, sizeof(Slot))));
  if (!slots_) throw std::bad_alloc();
}

void LaunchRegistry::EnteredOutOfOrder(uint32_t correlation_id) {
  // Another thread entered a later id first: a window may have been
  // forgotten above this one meanwhile. Paired with the fence in
  // ForgetBefore: either this load sees its new low_id_, or its second look
  // sees this key.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (correlation_id < low_id_.load(std::memory_order_relaxed)) NoteLate(correlation_id);
}

void LaunchRegistry::NoteLate(uint32_t id) {
  uint32_t late = late_low_.load(std::memory_order_relaxed);
  while (id < late && !late_low_.compare_exchange_weak(late, id, std::memory_order_relaxed)) {
  }
}

uint32_t LaunchRegistry::ScanLow() const {
  uint32_t low = std::min(low_id_.load(std::memory_order_relaxed), late_low_.load(std::memory_order_relaxed));
  return low == 0 ? 1 : low;
}

bool LaunchRegistry::Read(uint32_t id, Entry* entry) const {
  Slot& slot = SlotOf(id);
  Ref64 key(slot.key);
  uint64_t before = key.load(std::memory_order_acquire);
  if (before == 0 || IdOf(before) != id) return false;
  entry->enter_ns = Ref64(slot.enter_ns).load(std::memory_order_relaxed);
  entry->parent_id = Ref32(slot.parent_id).load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  uint64_t after = key.load(std::memory_order_relaxed);
  // Flags may change in between (delivered); the call may not.
  if (IdOf(after) != id) return false;
  entry->key = after;
  return true;
}

uint32_t LaunchRegistry::SetFlags(uint32_t id, uint64_t set, uint64_t clear) {
  if (!ChangeFlags(id, set, clear)) return 0;
  Entry entry;
  return Read(id, &entry) ? entry.parent_id : 0;
}

void LaunchRegistry::OnOwnCall(uint32_t correlation_id, uint64_t enter_ns) {
  OnEnter(correlation_id, enter_ns, Awaits::kNothing);
  ChangeFlags(correlation_id, /*set=*/kOwn | kExited, /*clear=*/0);
}

bool LaunchRegistry::IsOwn(uint32_t correlation_id) const {
  Entry entry;
  return correlation_id != 0 && Read(correlation_id, &entry) && (entry.key & kOwn) != 0;
}

bool LaunchRegistry::EnterNs(uint32_t correlation_id, uint64_t* enter_ns) const {
  Entry entry;
  if (correlation_id == 0 || !Read(correlation_id, &entry)) return false;
  *enter_ns = entry.enter_ns;
  return true;
}

bool LaunchRegistry::LookUpApi(uint32_t correlation_id, ApiState* state) const {
  Entry entry;
  if (correlation_id == 0 || !Read(correlation_id, &entry)) return false;
  state->enter_ns = entry.enter_ns;
  state->expects_api_record = (entry.key & kExpectsApi) != 0;
  state->api_record_delivered = (entry.key & kApiDelivered) != 0;
  return true;
}

void LaunchRegistry::MarkDelivered(uint32_t correlation_id) {
  if (correlation_id == 0) return;
  uint32_t parent_id = SetFlags(correlation_id, kDelivered, 0);
  if (parent_id != 0) SetFlags(parent_id, kDelivered, 0);
}

void LaunchRegistry::MarkApiDelivered(uint32_t correlation_id) {
  if (correlation_id != 0) ChangeFlags(correlation_id, kApiDelivered, 0);
}

template <typename Fn>
void LaunchRegistry::ForEachLive(uint32_t low, uint32_t high, uint64_t end_ns, Fn&& fn) const {
  if (high < low) return;
  // Older ids than one ring's worth were overwritten (overflow).
  if (high - low > mask_) low = high - static_cast<uint32_t>(mask_);
  uint32_t later_run = 0;
  for (uint32_t id = low;; ++id) {
    Entry entry;
    if (Read(id, &entry)) {
      fn(id, entry);
      later_run = entry.enter_ns >= end_ns ? later_run + 1 : 0;
      if (later_run == kLaterRun) break;
    }
    if (id == high) break;
  }
}

uint64_t LaunchRegistry::Outstanding(uint64_t start_ns, uint64_t end_ns, Pending* pending) const {
  uint64_t count = 0;
  Pending p;
  ForEachLive(ScanLow(), max_id_.load(std::memory_order_acquire), end_ns, [&](uint32_t, const Entry& e) {
    if (e.enter_ns < start_ns || e.enter_ns >= end_ns) return;
    if ((e.key & kExpects) != 0 && (e.key & kDelivered) == 0) {
      ++count;
      switch (static_cast<Awaits>((e.key & kAwaitsMask) >> kAwaitsShift)) {
        case Awaits::kKernel: ++p.device.kernels; break;
        case Awaits::kMemcpy: ++p.device.copies; break;
        case Awaits::kMemset: ++p.device.memsets; break;
        case Awaits::kNothing: break;
      }
    }
    if ((e.key & kExpectsApi) != 0 && (e.key & kApiDelivered) == 0) ++p.api_records;
    if ((e.key & kExited) == 0) ++p.in_progress;
  });
  if (pending != nullptr) *pending = p;
  return count;
}

void LaunchRegistry::WrappedCalls(uint64_t start_ns, uint64_t end_ns, std::vector<uint32_t>* ids) const {
  ForEachLive(ScanLow(), max_id_.load(std::memory_order_acquire), end_ns, [&](uint32_t id, const Entry& e) {
    if (e.enter_ns >= start_ns && e.enter_ns < end_ns && (e.key & kWrapped) != 0) ids->push_back(id);
  });
}

bool LaunchRegistry::IdSpan(uint64_t start_ns, uint64_t end_ns, uint32_t* low, uint32_t* high) const {
  uint32_t lo = 0, hi = 0;
  ForEachLive(ScanLow(), max_id_.load(std::memory_order_acquire), end_ns, [&](uint32_t id, const Entry& e) {
    if (e.enter_ns < start_ns || e.enter_ns >= end_ns || (e.key & kOwn) != 0) return;
    if (lo == 0 || id < lo) lo = id;
    if (id > hi) hi = id;
  });
  *low = lo;
  *high = hi;
  return lo != 0;
}

void LaunchRegistry::ForgetBefore(uint64_t end_ns) {
  // Late calls noted from here on are for the next scan.
  uint32_t late = late_low_.exchange(kNoLateId, std::memory_order_relaxed);
  uint32_t low = std::min(low_id_.load(std::memory_order_relaxed), late);
  if (low == 0) low = 1;
  uint32_t high = max_id_.load(std::memory_order_acquire);
  uint32_t lowest_kept = 0;
  auto forget = [&](uint32_t id, const Entry& e) {
    if (e.enter_ns >= end_ns) {
      if (lowest_kept == 0 || id < lowest_kept) lowest_kept = id;
      return;
    }
    // Fails only if the call's slot was just taken by a newer call.
    uint64_t expected = e.key;
    Ref64(SlotOf(id).key).compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
  };
  ForEachLive(low, high, end_ns, forget);
  uint32_t new_low = lowest_kept != 0 ? lowest_kept : high + 1;
  low_id_.store(new_low, std::memory_order_relaxed);
  // A second look below the new low_id_, after the fence OnEnter pairs with:
  // a call entered out of order while the first pass ran is either seen
  // here or has seen the new low_id_ and noted itself late.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  lowest_kept = 0;
  if (new_low > low) ForEachLive(low, new_low - 1, end_ns, forget);
  if (lowest_kept != 0) NoteLate(lowest_kept);
}

void LaunchRegistry::Clear() {
  // Stores only where something is: untouched pages stay untouched.
  for (size_t i = 0; i <= mask_; ++i) {
    Ref64 key(slots_.get()[i].key);
    if (key.load(std::memory_order_relaxed) != 0) key.store(0, std::memory_order_relaxed);
  }
  max_id_.store(0, std::memory_order_release);
  low_id_.store(0, std::memory_order_relaxed);
  late_low_.store(kNoLateId, std::memory_order_relaxed);
}

size_t LaunchRegistry::size() const {
  size_t total = 0;
  for (size_t i = 0; i <= mask_; ++i) total += Ref64(slots_.get()[i].key).load(std::memory_order_acquire) != 0;
  return total;
}

uint64_t LaunchRegistry::overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

}  // namespace prof::cupti
