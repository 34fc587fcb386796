// The Python stack capture alone, on the real interpreter that loads this
// library with ctypes (test/bench/python_stacks.py): the same PythonStacks
// the agent uses, detecting the interpreter through dlsym as the agent does.
// Each entry point returns nanoseconds spent inside Capture() only, so the
// figure is the capture's own cost, free of the simulated launch's noise.
#include <time.h>

#include <cstdint>

#include "collectors/python/python_stacks.h"

namespace {

prof::python::PythonStacks& Stacks() {
  static auto* stacks = new prof::python::PythonStacks(/*enabled=*/true, /*depth=*/64);
  return *stacks;
}

uint64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

// n captures of the caller's stack; total ns. *stack_id: the last id.
extern "C" __attribute__((visibility("default"))) uint64_t bench_capture(int n, uint32_t* stack_id) {
  uint64_t start = Now();
  uint32_t id = 0;
  for (int i = 0; i < n; ++i) id = Stacks().Capture(start, true);
  uint64_t ns = Now() - start;
  if (stack_id != nullptr) *stack_id = id;
  return ns;
}

// Frames in a captured stack (to check the depth the benchmark claims).
extern "C" __attribute__((visibility("default"))) int bench_stack_depth(uint32_t stack_id) {
  prof::PythonInfo info;
  Stacks().Snapshot(&info);
  return stack_id < info.stacks.size() ? static_cast<int>(info.stacks[stack_id].size()) : -1;
}
