// torch.profiler.schedule, transcribed: the action for step k is exactly what
// schedule(skip_first, wait, warmup, active, repeat)(k) returns.
#pragma once

#include <cstdint>

namespace prof {

enum class Action : uint8_t { kNone, kWarmup, kRecord, kRecordAndSave };

struct ScheduleParams {
  uint64_t skip_first = 0;
  uint64_t wait = 0;
  uint64_t warmup = 0;
  uint64_t active = 1;  // >= 1 (config parsing enforces it)
  uint64_t repeat = 0;  // 0: forever
};

// torch/profiler/profiler.py schedule_fn:
//   if step < skip_first: NONE; step -= skip_first
//   num_steps = wait + warmup + active
//   if repeat > 0 and step / num_steps >= repeat: NONE
//   mod = step % num_steps
//   mod < wait: NONE; mod < wait + warmup: WARMUP;
//   else RECORD if mod < num_steps - 1 else RECORD_AND_SAVE
Action ScheduleAction(const ScheduleParams& p, uint64_t step);

// True from the first step after the last RECORD_AND_SAVE of a finite
// schedule on: nothing will ever be recorded again.
bool ScheduleFinished(const ScheduleParams& p, uint64_t step);

// No step >= from is one: NextScheduleEvent's answer then.
inline constexpr uint64_t kNoScheduleEvent = ~uint64_t{0};

// The first step >= from at which the schedule does something: its action is
// not NONE, or it is the step ScheduleFinished turns true at. Every step in
// [from, that step) is NONE and changes nothing, so the session may count
// them without looking (Session::QuietStep). kNoScheduleEvent when there is
// none (a finite schedule that finished before from).
uint64_t NextScheduleEvent(const ScheduleParams& p, uint64_t from);

const char* ActionName(Action a);

}  // namespace prof
