// The device side's losses, charged window by window: hand-noted losses
// and CUPTI drop totals, no CUPTI.
#include "collectors/cupti/loss_ledger.h"

#include <catch2/catch.hpp>

namespace prof::cupti {
namespace {

constexpr uint64_t kBucket = uint64_t{1} << LossLedger::kBucketShift;

TEST_CASE("a record dropped past the budget is charged to the window its call was launched in", "[loss_ledger]") {
  LossLedger ledger;
  const uint64_t w1 = 100 * kBucket, w2 = 200 * kBucket, w3 = 300 * kBucket;
  ledger.NoteBudgetDrop(w1 - 10 * kBucket, DeviceKind::kKernel);  // warmup, before the first window
  ledger.NoteBudgetDrop(w1 + kBucket, DeviceKind::kKernel);
  ledger.NoteBudgetDrop(w1 + 2 * kBucket, DeviceKind::kMemcpy);
  ledger.NoteBudgetDrop(w2 + kBucket, DeviceKind::kMemset);  // decoded early: the writer is behind
  LossCounts first;
  ledger.ChargeWindow(w1, w2, 0, 0, &first);
  CHECK(first.device_records_dropped == 2);
  CHECK(first.dropped_kinds.kernels == 1);  // by kind too
  CHECK(first.dropped_kinds.copies == 1);
  CHECK(first.dropped_kinds.memsets == 0);
  LossCounts second;
  ledger.ChargeWindow(w2, w3, 0, 0, &second);
  CHECK(second.device_records_dropped == 1);
  CHECK(second.dropped_kinds.memsets == 1);
  LossCounts third;
  ledger.ChargeWindow(w3, w3 + 100 * kBucket, 0, 0, &third);
  CHECK(third.device_records_dropped == 0);  // each charged once, the warmup one never
}

TEST_CASE("an untimed record is a loss of the window holding its call and of no other", "[loss_ledger]") {
  LossLedger ledger;
  ledger.NoteUntimed(50, DeviceKind::kKernel);   // between windows: forgotten
  ledger.NoteUntimed(150, DeviceKind::kMemcpy);  // the first window's
  ledger.NoteUntimed(250, DeviceKind::kKernel);  // the next one's
  LossCounts first;
  ledger.ChargeWindow(100, 200, 0, 0, &first);
  CHECK(first.device_records_untimed == 1);
  CHECK(first.untimed_kinds.copies == 1);
  CHECK(first.untimed_kinds.total() == 1);
  LossCounts second;
  ledger.ChargeWindow(200, 300, 0, 0, &second);
  CHECK(second.device_records_untimed == 1);
  CHECK(second.untimed_kinds.kernels == 1);
  LossCounts third;
  ledger.ChargeWindow(300, 400, 0, 0, &third);
  CHECK(third.device_records_untimed == 0);
}

TEST_CASE("CUPTI's drops are charged once, less those counted during warmup, never below zero", "[loss_ledger]") {
  LossLedger ledger;
  CHECK_FALSE(ledger.CuptiDropsSinceCharged(0));
  CHECK(ledger.CuptiDropsSinceCharged(10));
  LossCounts first;
  ledger.ChargeWindow(0, 100, /*cupti_total=*/10, /*cupti_at_begin=*/4, &first);
  CHECK(first.cupti_records_dropped == 6);
  CHECK_FALSE(ledger.CuptiDropsSinceCharged(10));
  LossCounts second;
  ledger.ChargeWindow(100, 200, /*cupti_total=*/12, /*cupti_at_begin=*/12, &second);
  CHECK(second.cupti_records_dropped == 0);  // all of them warmup's
  LossCounts third;
  ledger.ChargeWindow(200, 300, /*cupti_total=*/15, /*cupti_at_begin=*/12, &third);
  CHECK(third.cupti_records_dropped == 3);
}

TEST_CASE("windows back to back: drops counted while an earlier window awaited its seal are that window's",
          "[loss_ledger]") {
  // Window 2 began (total 3) while window 1, begun at 0, was still being
  // collected; window 1's seal read 10. Taking 2's begin as 1's warmup
  // (as before) charged window 1 with 7 of its 10, or none at all.
  LossLedger ledger;
  LossCounts first;
  ledger.ChargeWindow(0, 100, /*cupti_total=*/10, /*cupti_at_begin=*/0, &first);
  CHECK(first.cupti_records_dropped == 10);
  LossCounts second;
  ledger.ChargeWindow(100, 200, /*cupti_total=*/14, /*cupti_at_begin=*/3, &second);
  CHECK(second.cupti_records_dropped == 4);  // from window 1's charge on: each drop once
}

TEST_CASE("scratch records and unknown kinds go to the window sealed next, then count from zero", "[loss_ledger]") {
  LossLedger ledger;
  ledger.NoteScratchRecord(DeviceKind::kMemset);
  ledger.NoteScratchRecord(DeviceKind::kRuntimeApi);  // in the total, of no kind counted
  ledger.NoteUnknownKind();
  LossCounts first;
  ledger.ChargeWindow(0, 100, 0, 0, &first);
  CHECK(first.device_records_dropped == 2);
  CHECK(first.dropped_kinds.memsets == 1);
  CHECK(first.dropped_kinds.total() == 1);
  CHECK(first.unknown_activity_kinds == 1);
  LossCounts second;
  ledger.ChargeWindow(100, 200, 0, 0, &second);
  CHECK(second.device_records_dropped == 0);
  CHECK(second.dropped_kinds.total() == 0);
  CHECK(second.unknown_activity_kinds == 0);
}

}  // namespace
}  // namespace prof::cupti
