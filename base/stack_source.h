// The seam between the agent and the Python stack collector
// (collectors/python): the wrappers ask for the calling thread's stack id
// while recording, the writer asks for the interned stacks at a window's
// seal. Null in a Runtime without one (PROF_PYTHON=0 still installs one that
// answers 0, so the config is reported the same way).
#pragma once

#include <cstdint>

#include "model/window.h"

namespace prof {

class StackSource {
 public:
  virtual ~StackSource() = default;
  // The calling thread's stack id; 0 when none is recorded. now_ns: the
  // call's time; launch: the call launches a kernel.
  virtual uint32_t Capture(uint64_t now_ns, bool launch) = 0;
  // Frames, stacks and status for a window being sealed.
  virtual void Snapshot(PythonInfo* out) = 0;
};

}  // namespace prof
