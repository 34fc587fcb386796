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

const char* ActionName(Action a);

}  // namespace prof
