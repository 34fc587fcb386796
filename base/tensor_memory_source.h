// The seam between the writer and the collector of PyTorch's tensor memory
// (collectors/python/tensor_memory.h): at a window's seal the writer asks
// for the allocator's actions in the window, which reach the collector a
// little after the window's end (the interpreter's main thread hands them
// over at its next bytecode boundary).
#pragma once

#include <cstdint>

#include "model/window.h"

namespace prof {

class TensorMemorySource {
 public:
  virtual ~TensorMemorySource() = default;
  // Fills w->tensor_memory with the actions in [start_ns, end_ns] and
  // w->meta.tensor_memory with its status, waiting for a hand-over that is
  // due until deadline_ns at most. Interns the Python lines (before the
  // window's strings are taken).
  virtual void Take(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* w) = 0;
  // The process is exiting: a hand-over still due will not come, and the
  // window waiting for it is written without it.
  virtual void ProcessExiting() = 0;
};

}  // namespace prof
