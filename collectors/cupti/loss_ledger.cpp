#include "collectors/cupti/loss_ledger.h"

#include <algorithm>

namespace prof::cupti {

void LossLedger::ChargeWindow(uint64_t start_ns, uint64_t end_ns, uint64_t cupti_total, uint64_t cupti_at_begin,
                              LossCounts* losses) {
  losses->device_records_dropped += scratch_records_;
  losses->dropped_kinds.Add(scratch_kinds_);
  std::erase_if(untimed_, [&](const Untimed& u) {
    if (u.launch_ns >= end_ns) return false;  // a later window's
    if (u.launch_ns >= start_ns) {
      ++losses->device_records_untimed;
      losses->untimed_kinds.Add(u.kind);
    }
    return true;
  });
  // Budget drops of calls launched in this window; later windows' stay for
  // them, earlier ones (warmup, between windows) would have been discarded
  // anyway and are forgotten.
  for (auto it = budget_drops_.begin(); it != budget_drops_.end() && (it->first << kBucketShift) < end_ns;
       it = budget_drops_.erase(it)) {
    if (it->first >= (start_ns >> kBucketShift)) {
      losses->device_records_dropped += it->second.records;
      losses->dropped_kinds.Add(it->second.kinds);
    }
  }
  uint64_t from = std::max(cupti_charged_, cupti_at_begin);
  losses->cupti_records_dropped += cupti_total > from ? cupti_total - from : 0;
  cupti_charged_ = std::max(cupti_charged_, cupti_total);
  losses->unknown_activity_kinds += unknown_kinds_;
  scratch_records_ = unknown_kinds_ = 0;
  scratch_kinds_ = DeviceLossKinds{};
}

}  // namespace prof::cupti
