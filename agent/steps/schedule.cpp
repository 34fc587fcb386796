#include "agent/steps/schedule.h"

namespace prof {

Action ScheduleAction(const ScheduleParams& p, uint64_t step) {
  if (step < p.skip_first) return Action::kNone;
  step -= p.skip_first;
  uint64_t num_steps = p.wait + p.warmup + p.active;
  if (num_steps == 0) return Action::kNone;
  if (p.repeat > 0 && step / num_steps >= p.repeat) return Action::kNone;
  uint64_t mod = step % num_steps;
  if (mod < p.wait) return Action::kNone;
  if (mod < p.wait + p.warmup) return Action::kWarmup;
  return mod < num_steps - 1 ? Action::kRecord : Action::kRecordAndSave;
}

bool ScheduleFinished(const ScheduleParams& p, uint64_t step) {
  if (p.repeat == 0) return false;
  uint64_t num_steps = p.wait + p.warmup + p.active;
  return step >= p.skip_first && (step - p.skip_first) / num_steps >= p.repeat;
}

uint64_t NextScheduleEvent(const ScheduleParams& p, uint64_t from) {
  uint64_t step = from > p.skip_first ? from : p.skip_first;  // skip_first's steps are NONE
  uint64_t num_steps = p.wait + p.warmup + p.active;
  if (num_steps == 0) return kNoScheduleEvent;
  uint64_t v = step - p.skip_first;
  uint64_t cycle = v / num_steps;
  if (p.repeat > 0 && cycle >= p.repeat) {
    // Past the last cycle: its first step is where ScheduleFinished turns true.
    return v == p.repeat * num_steps ? step : kNoScheduleEvent;
  }
  if (v % num_steps >= p.wait) return step;  // warmup or active
  return p.skip_first + cycle * num_steps + p.wait;  // this cycle's warmup (or first active) step
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kNone: return "NONE";
    case Action::kWarmup: return "WARMUP";
    case Action::kRecord: return "RECORD";
    case Action::kRecordAndSave: return "RECORD_AND_SAVE";
  }
  return "?";
}

}  // namespace prof
