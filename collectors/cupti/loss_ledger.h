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
  // A record of a scratch buffer (handed out past the pool's cap): its
  // launch is unknown, so it is charged to the window sealed next.
  void NoteScratchRecord() { ++scratch_records_; }
  // A record of a kind the decoder does not know: the window sealed next.
  void NoteUnknownKind() { ++unknown_kinds_; }
  // CUPTI delivered the device record of a call launched at launch_ns
  // without times: a loss of the window holding that call, and of no other.
  void NoteUntimed(uint64_t launch_ns) { untimed_launch_ns_.push_back(launch_ns); }
  // A record decoded past the budget, of a call launched at launch_ns. When
  // the writer lags, records are decoded for windows still queued behind
  // it, and those are what drop: each is charged to the window its launch
  // falls in (to within one bucket at a window's end), not to the window
  // being collected when it happened.
  void NoteBudgetDrop(uint64_t launch_ns) { ++budget_drops_[launch_ns >> kBucketShift]; }

  // cupti_total (CUPTI's drops counted so far, a running sum of
  // cuptiActivityGetNumDroppedRecords) holds drops no window was charged.
  bool CuptiDropsSinceCharged(uint64_t cupti_total) const { return cupti_total != cupti_charged_; }

  // Adds the window [start_ns, end_ns)'s losses to *losses and forgets
  // them, with those of earlier launches (warmup, between windows: no
  // window holds them). Later windows' budget drops and untimed records
  // stay for them. cupti_total: as above; warmup: CUPTI's drops counted
  // during warmup since the last charge, which are not the window's.
  void ChargeWindow(uint64_t start_ns, uint64_t end_ns, uint64_t cupti_total, uint64_t warmup, LossCounts* losses);

  // Buckets of launch times budget drops are kept in: 2^kBucketShift ns.
  static constexpr int kBucketShift = 16;  // ~66 us

 private:
  uint64_t scratch_records_ = 0;
  uint64_t unknown_kinds_ = 0;
  std::vector<uint64_t> untimed_launch_ns_;        // rare
  std::map<uint64_t, uint64_t> budget_drops_;      // launch bucket -> records
  uint64_t cupti_charged_ = 0;                     // cupti_total at the last charge
};

}  // namespace prof::cupti
