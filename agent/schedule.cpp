#include "agent/schedule.h"

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
