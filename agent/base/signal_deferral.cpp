#include "agent/base/signal_deferral.h"

#include <signal.h>

namespace prof {
namespace {
// initial-exec: the handler reads these, and must not be the first to touch
// a dynamically allocated TLS block (__tls_get_addr may allocate).
__attribute__((tls_model("initial-exec"))) thread_local int t_depth = 0;
__attribute__((tls_model("initial-exec"))) thread_local volatile sig_atomic_t t_pending = 0;
}  // namespace

ExitSignalDeferral::ExitSignalDeferral() {
  ++t_depth;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);  // the handler sees depth before any lock is taken
}

ExitSignalDeferral::~ExitSignalDeferral() {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (--t_depth == 0 && t_pending != 0) {
    int sig = t_pending;
    t_pending = 0;
    raise(sig);  // now on a thread that holds none of our locks
  }
}

bool DeferExitSignal(int sig) {
  if (t_depth == 0) return false;
  if (t_pending == 0) t_pending = sig;
  return true;
}

}  // namespace prof
