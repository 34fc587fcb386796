#include "collectors/cupti/loss_ledger.h"

namespace prof::cupti {

void LossLedger::ChargeWindow(uint64_t start_ns, uint64_t end_ns, uint64_t cupti_total, uint64_t warmup,
                              LossCounts* losses) {
  losses->device_records_dropped += scratch_records_;
  std::erase_if(untimed_launch_ns_, [&](uint64_t launch_ns) {
    if (launch_ns >= end_ns) return false;  // a later window's
    if (launch_ns >= start_ns) ++losses->device_records_untimed;
    return true;
  });
  // Budget drops of calls launched in this window; later windows' stay for
  // them, earlier ones (warmup, between windows) would have been discarded
  // anyway and are forgotten.
  for (auto it = budget_drops_.begin(); it != budget_drops_.end() && (it->first << kBucketShift) < end_ns;
       it = budget_drops_.erase(it)) {
    if (it->first >= (start_ns >> kBucketShift)) losses->device_records_dropped += it->second;
  }
  uint64_t window_dropped = cupti_total - cupti_charged_;
  window_dropped = window_dropped > warmup ? window_dropped - warmup : 0;
  cupti_charged_ = cupti_total;
  losses->cupti_records_dropped += window_dropped;
  losses->unknown_activity_kinds += unknown_kinds_;
  scratch_records_ = unknown_kinds_ = 0;
}

}  // namespace prof::cupti
