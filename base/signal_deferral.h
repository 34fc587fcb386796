// Exit signals that land while an application thread is inside libprof code
// holding (or about to take) a lock the exit path needs: Session::mu_ at a
// step, the allocation table, the NVTX store, the string table, the log.
// The exit work runs on the agent thread while the handler waits for it; if
// the handler waited on the very thread that holds such a lock, both would
// wait until the exit budget ran out and the window would be lost. So inside
// such a section the handler only records the signal, and the thread raises
// it again when it leaves the outermost section, holding nothing.
//
// How the handler knows, without static TLS: libprof.so must load by dlopen
// (CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH) into processes whose static
// TLS surplus is used up, so it has no initial-exec thread-local; and a
// handler must not read a dynamically allocated thread-local (its first
// touch on a thread calls __tls_get_addr, which may allocate). The state the
// handler reads is a fixed global table instead: a thread entering its
// outermost section claims a slot, one atomic word holding
// (kernel tid << 8 | pending signal); the handler finds its slot by the tid
// from a gettid system call and stores the signal into it; leaving, the
// thread takes the word back with one exchange, which frees the slot and
// yields the signal in the same step: one CAS and one exchange per outermost
// section, no system call (the thread's tid is kept in an ordinary
// thread-local from its first section on). Depth, slot index and tid stay in
// ordinary thread-locals, read only outside handlers. When every slot is held (more
// than kExitDeferralSlots threads inside libprof at once) a section runs
// without deferral (a signal then takes the exit path at once, which at worst
// waits out the exit budget) and is counted.
#pragma once

#include <cstdint>

namespace prof {

inline constexpr int kExitDeferralSlots = 128;

// A scope class, as LoaderSection is: constructor, destructor, no copies.
class ExitSignalDeferral {
 public:
  ExitSignalDeferral();
  ~ExitSignalDeferral();
  ExitSignalDeferral(const ExitSignalDeferral&) = delete;
  ExitSignalDeferral& operator=(const ExitSignalDeferral&) = delete;
};

// From the signal handler (async-signal-safe: no thread-local, no lock): true
// if this thread is inside a deferral section that holds a slot; then sig is
// kept (the first one, if several land) and raised again when the thread
// leaves the section.
bool DeferExitSignal(int sig);

// Outermost sections that found every slot held, since the start (or the fork).
uint64_t ExitSignalDeferralsMissed();

// In a fork child, on the forking thread: the parent's other threads are gone
// but their slots (and their tids, which new threads may be given again)
// are still in the table; and this thread now has another tid. Empties the
// table and claims this thread's slot again if it is inside a section. (A
// vfork child, which runs on its parent's thread-locals until it execs,
// claims with the parent's tid: its sections are not deferred.)
void ExitSignalDeferralAfterFork();

}  // namespace prof
