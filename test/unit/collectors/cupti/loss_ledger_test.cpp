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
  ledger.NoteBudgetDrop(w1 - 10 * kBucket);  // warmup, before the first window
  ledger.NoteBudgetDrop(w1 + kBucket);
  ledger.NoteBudgetDrop(w1 + 2 * kBucket);
  ledger.NoteBudgetDrop(w2 + kBucket);  // decoded early: the writer is behind
  LossCounts first;
  ledger.ChargeWindow(w1, w2, 0, 0, &first);
  CHECK(first.device_records_dropped == 2);
  LossCounts second;
  ledger.ChargeWindow(w2, w3, 0, 0, &second);
  CHECK(second.device_records_dropped == 1);
  LossCounts third;
  ledger.ChargeWindow(w3, w3 + 100 * kBucket, 0, 0, &third);
  CHECK(third.device_records_dropped == 0);  // each charged once, the warmup one never
}

TEST_CASE("an untimed record is a loss of the window holding its call and of no other", "[loss_ledger]") {
  LossLedger ledger;
  ledger.NoteUntimed(50);   // between windows: forgotten
  ledger.NoteUntimed(150);  // the first window's
  ledger.NoteUntimed(250);  // the next one's
  LossCounts first;
  ledger.ChargeWindow(100, 200, 0, 0, &first);
  CHECK(first.device_records_untimed == 1);
  LossCounts second;
  ledger.ChargeWindow(200, 300, 0, 0, &second);
  CHECK(second.device_records_untimed == 1);
  LossCounts third;
  ledger.ChargeWindow(300, 400, 0, 0, &third);
  CHECK(third.device_records_untimed == 0);
}

TEST_CASE("CUPTI's drops are charged once, less those counted during warmup, never below zero", "[loss_ledger]") {
  LossLedger ledger;
  CHECK_FALSE(ledger.CuptiDropsSinceCharged(0));
  CHECK(ledger.CuptiDropsSinceCharged(10));
  LossCounts first;
  ledger.ChargeWindow(0, 100, /*cupti_total=*/10, /*warmup=*/4, &first);
  CHECK(first.cupti_records_dropped == 6);
  CHECK_FALSE(ledger.CuptiDropsSinceCharged(10));
  LossCounts second;
  ledger.ChargeWindow(100, 200, /*cupti_total=*/12, /*warmup=*/5, &second);
  CHECK(second.cupti_records_dropped == 0);  // all of them warmup's
  LossCounts third;
  ledger.ChargeWindow(200, 300, /*cupti_total=*/15, /*warmup=*/0, &third);
  CHECK(third.cupti_records_dropped == 3);
}

TEST_CASE("scratch records and unknown kinds go to the window sealed next, then count from zero", "[loss_ledger]") {
  LossLedger ledger;
  ledger.NoteScratchRecord();
  ledger.NoteScratchRecord();
  ledger.NoteUnknownKind();
  LossCounts first;
  ledger.ChargeWindow(0, 100, 0, 0, &first);
  CHECK(first.device_records_dropped == 2);
  CHECK(first.unknown_activity_kinds == 1);
  LossCounts second;
  ledger.ChargeWindow(100, 200, 0, 0, &second);
  CHECK(second.device_records_dropped == 0);
  CHECK(second.unknown_activity_kinds == 0);
}

}  // namespace
}  // namespace prof::cupti
