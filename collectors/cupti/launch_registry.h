// Which API call each correlation id belongs to: its enter time on the agent
// clock (window membership is decided by launch time) and whether it put
// device work in flight whose record has not been delivered yet (a window
// waits for those, bounded, and counts the ones that never come).
//
// Layout: a ring of fixed slots indexed by correlation id modulo its
// (power of two) capacity. CUPTI hands out correlation ids from one
// increasing counter, so the calls still remembered occupy a window of ids
// and a slot is only reused capacity ids later. The application thread's
// OnEnter is a few plain stores into its slot: no lock, no allocation, no
// hashing. Past the capacity the newest call takes the slot of the one
// capacity ids older (counted in overflowed(); that call's records fall back
// to membership by their own start time).
//
// Threads: OnEnter/OnExit run in CUPTI's API callbacks on application
// threads; the rest on the decoding (writer) thread. No mutex: each slot is a
// seqlock-like pair. Its key word (id and flags) is cleared, the fields are
// written, then the key is published with a release store; readers check the
// key's id before and after reading the fields. Flag changes (delivered,
// failed) are compare-and-swaps on the key, so a change meant for an old call
// never lands on the newer call that took its slot. Nothing here takes a
// lock, so it is a leaf in every lock order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/window.h"

namespace prof::cupti {

class LaunchRegistry {
 public:
  // The device record a call awaits (the first of it: a graph launch's
  // others come with it), by kind, so what never comes is counted by kind.
  enum class Awaits : uint8_t { kNothing, kKernel, kMemcpy, kMemset };

  // Remembers at least max_calls calls (rounded up to a power of two).
  explicit LaunchRegistry(size_t max_calls);

  // awaits: the call enqueues device work of an enabled kind.
  // parent_id: the runtime call a driver call was made from (0: none); a
  // record carrying either id satisfies both, since CUPTI documents some
  // records (memcpy) with the driver call's id and others with the runtime's.
  // expects_api_record: the call's own RUNTIME/DRIVER record is enabled;
  // it is written when the call returns, so until it is delivered the call
  // may still be in progress (a window must not stop recording before).
  void OnEnter(uint32_t correlation_id, uint64_t enter_ns, Awaits awaits, uint32_t parent_id = 0,
               bool expects_api_record = false);
  // The call returned; a failed call enqueued nothing: stop expecting a
  // device record for it. api_record_comes false: CUPTI was told not to
  // write this call's own RUNTIME record (a wrapper recorded the call), so
  // nothing waits for it.
  // wrapped: an interposed wrapper timed the call; its host event is
  // appended after the call returns (WrappedCalls).
  void OnExit(uint32_t correlation_id, bool succeeded, bool api_record_comes = true, bool wrapped = false);

  // A call libprof made itself (base/device_collector.h: OwnCudaCall) on an
  // application thread: nothing is expected from it, and its records are
  // not the application's (IsOwn).
  void OnOwnCall(uint32_t correlation_id, uint64_t enter_ns);
  bool IsOwn(uint32_t correlation_id) const;

  bool EnterNs(uint32_t correlation_id, uint64_t* enter_ns) const;
  // What a call still in the ring was registered with: its enter time,
  // whether its own API record was expected (OnEnter) and whether it came.
  struct ApiState {
    uint64_t enter_ns = 0;
    bool expects_api_record = false;
    bool api_record_delivered = false;
  };
  bool LookUpApi(uint32_t correlation_id, ApiState* state) const;
  void MarkDelivered(uint32_t correlation_id);
  void MarkApiDelivered(uint32_t correlation_id);

  // What calls entered in [start_ns, end_ns) still wait for.
  struct Pending {
    uint64_t api_records = 0;  // their own RUNTIME/DRIVER record not delivered yet
    uint64_t in_progress = 0;  // not returned yet (may still enqueue device work)
    DeviceLossKinds device;    // the returned count, by the kind each call awaits
  };
  // Calls entered in [start_ns, end_ns) still expecting their first device
  // record; *pending (if given) adds the rest they wait for, and that count
  // by kind.
  uint64_t Outstanding(uint64_t start_ns, uint64_t end_ns, Pending* pending = nullptr) const;
  // Calls entered in [start_ns, end_ns) that returned through a recording
  // wrapper (OnExit's wrapped): the correlation ids their host events carry.
  void WrappedCalls(uint64_t start_ns, uint64_t end_ns, std::vector<uint32_t>* ids) const;
  // The lowest and highest ids of the calls entered in [start_ns, end_ns)
  // (false: none): a record that comes for one after ForgetBefore is known
  // as a sealed window's.
  bool IdSpan(uint64_t start_ns, uint64_t end_ns, uint32_t* low, uint32_t* high) const;
  // Forgets every call entered before end_ns (their window is sealed).
  void ForgetBefore(uint64_t end_ns);
  // Forgets everything, ids included (a new CUPTI session may count ids
  // from 1 again). Only while no callback can run.
  void Clear();

  size_t size() const;  // calls remembered (scans the ring: tests, debugging)
  size_t capacity() const { return mask_ + 1; }
  uint64_t overflowed() const;

  // Bytes of the ring for max_calls: callers charge it to the budget.
  static size_t BytesFor(size_t max_calls);

 private:
  // Plain words accessed through std::atomic_ref: the ring comes from
  // calloc, so its pages cost nothing until a call lands in them.
  struct Slot {
    uint64_t key;       // id << 32 | flags; 0 = empty
    uint64_t enter_ns;  // agent clock
    uint32_t parent_id;
    uint32_t unused;
  };
  struct FreeDeleter {
    void operator()(Slot* p) const;
  };
  struct Entry {
    uint64_t key;
    uint64_t enter_ns;
    uint32_t parent_id;
  };
  // A launch's state bits: constants, not logic.
  static constexpr uint64_t kExpects = 1;
  static constexpr uint64_t kDelivered = 2;
  static constexpr uint64_t kExpectsApi = 4;
  static constexpr uint64_t kApiDelivered = 8;
  static constexpr uint64_t kExited = 16;
  static constexpr uint64_t kOwn = 32;
  static constexpr uint64_t kWrapped = 64;
  static constexpr int kAwaitsShift = 7;  // two bits: Awaits
  static constexpr uint64_t kAwaitsMask = uint64_t{3} << kAwaitsShift;
  static constexpr uint32_t kNoLateId = ~0u;
  static constexpr uint32_t kLaterRun = 512;

  static uint32_t IdOf(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
  Slot& SlotOf(uint32_t id) const { return slots_.get()[id & mask_]; }
  // A consistent copy of id's slot, or false if the slot holds another call.
  bool Read(uint32_t id, Entry* entry) const;
  // Sets bits in id's key (compare-and-swap: never on another call's slot).
  // False if the slot holds another call.
  bool ChangeFlags(uint32_t id, uint64_t set, uint64_t clear);
  // ChangeFlags, then id's parent id (0: none, or the slot holds another call).
  uint32_t SetFlags(uint32_t id, uint64_t set, uint64_t clear);
  // Calls fn(id, entry) for every call remembered with an id in [low, high],
  // one ring at most, up to the kLaterRun-th consecutive one entered at or
  // after end_ns: a writer behind the application would otherwise walk every
  // later window's calls at each window (O(lag) per window). Ids follow
  // enter times but for threads racing between the two, so a call of the
  // window is not expected behind that many later ones; if one is, the
  // window does not wait for its record, and it is forgotten by a later
  // window's scan.
  template <typename Fn>
  void ForEachLive(uint32_t low, uint32_t high, uint64_t end_ns, Fn&& fn) const;
  // Where scans start: low_id_, or a late call's id below it.
  uint32_t ScanLow() const;
  // A call entered below low_id_: later scans start at its id.
  void NoteLate(uint32_t id);
  // OnEnter's rare half: an id entered after a later one.
  void EnteredOutOfOrder(uint32_t correlation_id);

  size_t mask_;
  std::unique_ptr<Slot[], FreeDeleter> slots_;
  std::atomic<uint32_t> max_id_{0};  // highest id entered (application threads)
  // Ids below were all forgotten, except late ones: written by ForgetBefore
  // (writer thread) and Clear (attach, no callbacks running), read by
  // OnEnter for a call entered out of id order.
  std::atomic<uint32_t> low_id_{0};
  // The lowest id entered below low_id_ since the last ForgetBefore took it
  // (kNoLateId: none). CUPTI hands ids out from one counter, but a thread
  // may enter its call after other threads entered (and a window forgot)
  // later ids. Scans cover the ids from here (or low_id_) to max_id_: the
  // calls of the open windows, not a fixed slack below them.
  std::atomic<uint32_t> late_low_{kNoLateId};
  std::atomic<uint64_t> overflowed_{0};
};

// OnEnter and OnExit run in every API callback while recording (application
// threads): defined here so the collector's callbacks inline them.

inline void LaunchRegistry::OnEnter(uint32_t correlation_id, uint64_t enter_ns, Awaits awaits, uint32_t parent_id,
                                    bool expects_api_record) {
  if (correlation_id == 0) return;
  Slot& slot = SlotOf(correlation_id);
  std::atomic_ref<uint64_t> key(slot.key);
  uint64_t old = key.load(std::memory_order_relaxed);
  if (old != 0 && IdOf(old) != correlation_id) overflowed_.fetch_add(1, std::memory_order_relaxed);
  // Seqlock write: empty key, fields, then the key with release, so a reader
  // that sees the new key on both sides of its read saw the new fields.
  key.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::atomic_ref<uint64_t>(slot.enter_ns).store(enter_ns, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(slot.parent_id).store(parent_id, std::memory_order_relaxed);
  key.store(uint64_t{correlation_id} << 32 | (awaits != Awaits::kNothing ? kExpects : 0) |
                uint64_t{static_cast<uint8_t>(awaits)} << kAwaitsShift | (expects_api_record ? kExpectsApi : 0),
            std::memory_order_release);
  // Ids come from one counter: on one thread this is a load and one CAS.
  // Release: a scan that reads max_id_ at or above this id sees the key.
  uint32_t seen = max_id_.load(std::memory_order_relaxed);
  while (seen < correlation_id &&
         !max_id_.compare_exchange_weak(seen, correlation_id, std::memory_order_release, std::memory_order_relaxed)) {
  }
  if (seen >= correlation_id) EnteredOutOfOrder(correlation_id);  // else the newest id: no scan passed it
}

inline bool LaunchRegistry::ChangeFlags(uint32_t id, uint64_t set, uint64_t clear) {
  std::atomic_ref<uint64_t> key(SlotOf(id).key);
  uint64_t expected = key.load(std::memory_order_acquire);
  for (;;) {
    if (expected == 0 || IdOf(expected) != id) return false;
    uint64_t desired = (expected | set) & ~clear;
    if (desired == expected || key.compare_exchange_weak(expected, desired, std::memory_order_acq_rel)) return true;
  }
}

inline void LaunchRegistry::OnExit(uint32_t correlation_id, bool succeeded, bool api_record_comes, bool wrapped) {
  if (correlation_id == 0) return;
  // No parent id needed, so no read of the slot after the change.
  ChangeFlags(correlation_id, /*set=*/kExited | (wrapped ? kWrapped : 0),
              /*clear=*/(succeeded ? 0 : kExpects) | (api_record_comes ? 0 : kExpectsApi));
}

}  // namespace prof::cupti
