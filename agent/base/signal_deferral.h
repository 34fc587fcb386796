// Exit signals that land while an application thread is inside libprof code
// holding (or about to take) a lock the exit path needs: Session::mu_ at a
// step, the allocation table, the NVTX store, the string table, the log.
// The exit work runs on the agent thread while the handler waits for it; if
// the handler waited on the very thread that holds such a lock, both would
// wait until the exit budget ran out and the window would be lost. So inside
// such a section the handler only records the signal, and the thread raises
// it again when it leaves the outermost section, holding nothing.
#pragma once

namespace prof {

class ExitSignalDeferral {
 public:
  ExitSignalDeferral();
  ~ExitSignalDeferral();
  ExitSignalDeferral(const ExitSignalDeferral&) = delete;
  ExitSignalDeferral& operator=(const ExitSignalDeferral&) = delete;
};

// From the signal handler: true if this thread is inside a deferral section;
// then sig is kept and raised again when the thread leaves it.
bool DeferExitSignal(int sig);

}  // namespace prof
