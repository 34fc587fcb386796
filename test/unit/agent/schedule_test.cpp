// The schedule is torch.profiler.schedule: checked step by step against an
// independent construction of the same sequence (skip_first NONEs, then
// `repeat` cycles of wait NONE / warmup WARMUP / active-1 RECORD /
// RECORD_AND_SAVE, then NONE forever) over many combinations, plus literal
// tables copied from what torch prints.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "agent/steps/schedule.h"

namespace prof {
namespace {

std::vector<Action> Reference(const ScheduleParams& p, size_t steps) {
  std::vector<Action> seq(p.skip_first, Action::kNone);
  uint64_t cycles = p.repeat == 0 ? steps : p.repeat;
  for (uint64_t c = 0; c < cycles && seq.size() < steps; ++c) {
    seq.insert(seq.end(), p.wait, Action::kNone);
    seq.insert(seq.end(), p.warmup, Action::kWarmup);
    seq.insert(seq.end(), p.active - 1, Action::kRecord);
    seq.push_back(Action::kRecordAndSave);
  }
  seq.resize(std::max(seq.size(), steps), Action::kNone);
  seq.resize(steps);
  return seq;
}

// Calls check(p) for every schedule with skip_first 0-3, wait 0-max_wait,
// warmup 0-2, active 1-3 and repeat 0-3; returns how many it visited.
template <typename Check>
int ForEachSchedule(uint64_t max_wait, Check check) {
  int combos = 0;
  for (uint64_t skip = 0; skip <= 3; ++skip)
    for (uint64_t wait = 0; wait <= max_wait; ++wait)
      for (uint64_t warmup = 0; warmup <= 2; ++warmup)
        for (uint64_t active = 1; active <= 3; ++active)
          for (uint64_t repeat = 0; repeat <= 3; ++repeat) {
            check(ScheduleParams{skip, wait, warmup, active, repeat});
            ++combos;
          }
  return combos;
}

std::string Describe(const ScheduleParams& p) {
  return "skip_first=" + std::to_string(p.skip_first) + " wait=" + std::to_string(p.wait) +
         " warmup=" + std::to_string(p.warmup) + " active=" + std::to_string(p.active) +
         " repeat=" + std::to_string(p.repeat);
}

TEST_CASE("every step of many (skip_first, wait, warmup, active, repeat) matches torch's schedule", "[schedule]") {
  int combos = ForEachSchedule(3, [](const ScheduleParams& p) {
    std::vector<Action> want = Reference(p, 60);
    for (uint64_t step = 0; step < want.size(); ++step) {
      INFO(Describe(p) << " step=" << step);
      REQUIRE(ScheduleAction(p, step) == want[step]);
    }
  });
  CHECK(combos == 4 * 4 * 3 * 3 * 4);
}

// What NextScheduleEvent must answer, by looking at every step from `from` on.
uint64_t NextEventByScan(const ScheduleParams& p, uint64_t from, uint64_t horizon) {
  for (uint64_t step = from; step < horizon; ++step) {
    bool finishes_here = ScheduleFinished(p, step) && (step == 0 || !ScheduleFinished(p, step - 1));
    if (ScheduleAction(p, step) != Action::kNone || finishes_here) return step;
  }
  return kNoScheduleEvent;
}

TEST_CASE("the next step the schedule acts at is the first non-NONE step or the finishing one, from any step",
          "[schedule]") {
  int combos = ForEachSchedule(4, [](const ScheduleParams& p) {
    for (uint64_t from = 0; from < 60; ++from) {
      INFO(Describe(p) << " from=" << from);
      REQUIRE(NextScheduleEvent(p, from) == NextEventByScan(p, from, 200));
    }
  });
  CHECK(combos == 4 * 5 * 3 * 3 * 4);
  // Closed form, not a scan: the bench's PROF_WAIT=10^9 answers at once.
  ScheduleParams long_wait{0, 1'000'000'000, 2, 5, 1};
  CHECK(NextScheduleEvent(long_wait, 7) == 1'000'000'000);
  CHECK(NextScheduleEvent(long_wait, 1'000'000'007) == 1'000'000'007);  // the finishing step
  CHECK(NextScheduleEvent(long_wait, 1'000'000'008) == kNoScheduleEvent);
}

TEST_CASE("DESIGN.md example: skip_first=1 wait=3 warmup=1 active=2 repeat=2 records steps 5-6 and 11-12", "[schedule]") {
  ScheduleParams p{1, 3, 1, 2, 2};
  using A = Action;
  const std::vector<Action> table = {A::kNone,   A::kNone,   A::kNone,   A::kNone,   A::kWarmup,
                                     A::kRecord, A::kRecordAndSave, A::kNone, A::kNone, A::kNone,
                                     A::kWarmup, A::kRecord, A::kRecordAndSave, A::kNone, A::kNone};
  for (uint64_t step = 0; step < table.size(); ++step) {
    INFO("step " << step);
    CHECK(ScheduleAction(p, step) == table[step]);
  }
  CHECK_FALSE(ScheduleFinished(p, 12));
  CHECK(ScheduleFinished(p, 13));
}

TEST_CASE("repeat=0 repeats forever", "[schedule]") {
  ScheduleParams p{0, 1, 0, 1, 0};
  for (uint64_t step = 0; step < 1000; ++step) {
    CHECK(ScheduleAction(p, step) == (step % 2 == 0 ? Action::kNone : Action::kRecordAndSave));
  }
  CHECK_FALSE(ScheduleFinished(p, 1'000'000));
}

TEST_CASE("the defaults (0 30 2 5 1) record steps 32-36 once", "[schedule]") {
  ScheduleParams p{0, 30, 2, 5, 1};
  for (uint64_t step = 0; step < 30; ++step) CHECK(ScheduleAction(p, step) == Action::kNone);
  CHECK(ScheduleAction(p, 30) == Action::kWarmup);
  CHECK(ScheduleAction(p, 31) == Action::kWarmup);
  for (uint64_t step = 32; step < 36; ++step) CHECK(ScheduleAction(p, step) == Action::kRecord);
  CHECK(ScheduleAction(p, 36) == Action::kRecordAndSave);
  CHECK(ScheduleAction(p, 37) == Action::kNone);
  CHECK(ScheduleFinished(p, 37));
  CHECK_FALSE(ScheduleFinished(p, 36));
}

}  // namespace
}  // namespace prof
