// Entry points: the ELF constructor (LD_PRELOAD, or any dlopen of libprof),
// InitializeInjection (CUDA_INJECTION64_PATH) and prof_step(). Whichever
// comes first starts the one agent of this process; the others find it
// started (agent_start.cpp).
#include <sys/syscall.h>
#include <unistd.h>

#include "base/export.h"
#include "agent/process/agent_start.h"
#include "agent/process/lifecycle.h"
#include "base/agent_hooks.h"

namespace prof {
namespace {

void StartOnce(const char* how) {
  try {
    StartAgent(how);
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
  // The driver calls this from cuInit, where NVIDIA's injection samples
  // subscribe to CUPTI: no wrapper is on the program's call path, so calls
  // reach the marker path through CUPTI's callbacks from here on.
  prof::OnCudaInitialized();
  return 1;
}

// PROF_STEP=manual: each call ends the current step and starts the next.
EXPORT_SYMBOL void prof_step(void) {
  try {
    prof::ObservedEvent event;
    event.site = prof::MarkerSite::kManual;
    event.feed = prof::MarkerFeed::kApp;
    prof::hooks::Observe(event);
  } catch (...) {
  }
}

// _exit() runs no atexit handler, so a window in progress was lost in
// processes that leave through it: CPython's os._exit, with which every
// multiprocessing worker started by fork ends. Under LD_PRELOAD this one runs
// first: the window is ended and written as at exit(), then the process ends
// exactly as _exit() ends it (exit_group, the same status). glibc's own exit()
// reaches its _exit internally, not through here.
EXPORT_SYMBOL void _exit(int status) {
  try {
    prof::OnUnderscoreExit();
  } catch (...) {
  }
  for (;;) syscall(SYS_exit_group, status);
}

}  // extern "C"
