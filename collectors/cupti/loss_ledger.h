// What windows report as lost on the device side, kept between windows:
// records decoding could not keep, each charged to the window its call was
// launched in, and CUPTI's own drop count, charged once. Bookkeeping only
// (no CUPTI): the collector notes each loss as it decodes
// (collector_decode.cpp) and charges a window as it seals it
// (collector_window.cpp).
//
// Thread: the writer thread, under the collector's decode_mutex_.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "model/window.h"

namespace prof::cupti {

class LossLedger {
 public:
  // A record of a scratch buffer (handed out past the pool's cap), of kind
  // (kernel, memcpy, memset; another kind counts in the total only): its
  // launch is unknown, so it is charged to the window sealed next.
  void NoteScratchRecord(DeviceKind kind) {
    ++scratch_records_;
    scratch_kinds_.Add(kind);
  }
  // A record of a kind the decoder does not know: the window sealed next.
  void NoteUnknownKind() { ++unknown_kinds_; }
  // CUPTI delivered the device record (of kind) of a call launched at
  // launch_ns without times: a loss of the window holding that call, and of
  // no other.
  void NoteUntimed(uint64_t launch_ns, DeviceKind kind) { untimed_.push_back({launch_ns, kind}); }
  // A record decoded past the budget, of a call launched at launch_ns. When
  // the writer lags, records are decoded for windows still queued behind
  // it, and those are what drop: each is charged to the window its launch
  // falls in (to within one bucket at a window's end), not to the window
  // being collected when it happened.
  void NoteBudgetDrop(uint64_t launch_ns, DeviceKind kind) {
    Drops& drops = budget_drops_[launch_ns >> kBucketShift];
    ++drops.records;
    drops.kinds.Add(kind);
  }

  // cupti_total (CUPTI's drops counted so far, a running sum of
  // cuptiActivityGetNumDroppedRecords) holds drops no window was charged.
  bool CuptiDropsSinceCharged(uint64_t cupti_total) const { return cupti_total != cupti_charged_; }

  // Adds the window [start_ns, end_ns)'s losses to *losses and forgets
  // them, with those of earlier launches (warmup, between windows: no
  // window holds them). Later windows' budget drops and untimed records
  // stay for them. cupti_total: as above; cupti_at_begin: the total when
  // the window began recording. The window is charged CUPTI's drops
  // counted since then, or since the last charge if that came later
  // (windows back to back: the earlier window took them).
  void ChargeWindow(uint64_t start_ns, uint64_t end_ns, uint64_t cupti_total, uint64_t cupti_at_begin,
                    LossCounts* losses);

  // Buckets of launch times budget drops are kept in: 2^kBucketShift ns.
  static constexpr int kBucketShift = 16;  // ~66 us

 private:
  struct Untimed {
    uint64_t launch_ns;
    DeviceKind kind;
  };
  struct Drops {
    uint64_t records = 0;   // of any kind
    DeviceLossKinds kinds;  // those of the three kinds counted by kind
  };
  uint64_t scratch_records_ = 0;
  DeviceLossKinds scratch_kinds_;
  uint64_t unknown_kinds_ = 0;
  std::vector<Untimed> untimed_;                   // rare
  std::map<uint64_t, Drops> budget_drops_;         // launch bucket -> records
  uint64_t cupti_charged_ = 0;                     // cupti_total at the last charge
};

}  // namespace prof::cupti
