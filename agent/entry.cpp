// Entry points: the ELF constructor (LD_PRELOAD), InitializeInjection
// (CUDA_INJECTION64_PATH) and prof_step(). Whichever comes first starts the
// one agent of this process; the others find it started.
#include <atomic>

#include "agent/export.h"
#include "agent/log.h"

namespace prof {
namespace {

std::atomic<bool> g_started{false};

void StartOnce(const char* how) {
  bool expected = false;
  if (!g_started.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  try {
    Log().info("agent loaded via {}", how);
  } catch (...) {
    // Never let an exception reach the host.
  }
}

__attribute__((constructor)) void OnLoad() { StartOnce("LD_PRELOAD"); }

}  // namespace
}  // namespace prof

extern "C" {

EXPORT_SYMBOL int InitializeInjection(void) {
  prof::StartOnce("CUDA_INJECTION64_PATH");
  return 1;
}

EXPORT_SYMBOL void prof_step(void) {}

}  // extern "C"
