// What runs when (STYLE.md 7):
//
//  load       ELF constructor (LD_PRELOAD or dlopen by the driver/NVTX) or
//             InitializeInjection: StartAgent() once per process.
//  start      config parsed, Runtime installed, the agent thread
//             ("libprof-agent": time steps, trigger file, signal exits)
//             started, atexit + SIGINT/SIGTERM + fork handlers installed.
//  window end the session hands a job to "libprof-writer".
//  exit       atexit handler (exit signals blocked on this thread): asks
//             the agent thread to end a window in progress as partial,
//             drain the writer and release CUPTI, and waits at most the
//             exit budget; past it, unfinished temporaries are unlinked and
//             one line says the window is lost.
//  SIGINT/    the same request from the handler, then it chains to the
//  SIGTERM/   host's handler, or restores the default and re-raises so the
//  SIGHUP/    exit status is the signal's. A signal that lands while the
//  SIGQUIT    exit work already runs (atexit, another signal) waits for it
//             (bounded) instead of killing the process mid-write. One that
//             lands while its thread is inside libprof code holding a lock
//             the exit work needs is deferred to the section's end
//             (signal_deferral.h).
//  SIGSEGV/   (only where the host left the default action) no window:
//  SIGBUS/... the process state cannot be trusted. Temporaries unlinked,
//             one line, then the default action.
//  fork       child: every lock we own is re-initialised, the exit-signal
//             deferral table emptied (the parent's threads are gone), the parent's
//             Runtime is abandoned (its buffers, threads, half-window) and a
//             fresh agent starts with the child's pid, its PROF_NAME (if any)
//             suffixed _pid<pid>. When the parent had loaded no CUDA library
//             (a multiprocessing worker that imports CUDA itself) the child
//             is profiled like any process; otherwise host-side only (no
//             CUPTI, no dl* calls: the loader lock may be held), and its
//             first window says so.
//  _exit      (LD_PRELOAD: libprof's _exit runs first) what atexit does, in
//             the agent's own process, then the exit as asked.
#pragma once

#include <initializer_list>
#include <string_view>

namespace prof {

// Whether libcudart or libcuda is loaded in this process.
bool ProcessHasCudaLoaded();

// Whether a mapped file's path contains one of `names` ("/libcupti.so"),
// from /proc/self/maps: no loader lock, so safe in a fork child.
bool LibraryInProcMaps(std::initializer_list<std::string_view> names);

// The program called _exit() (os._exit: multiprocessing's forked workers
// leave through it), which runs no atexit handler: does what the atexit
// handler does, in the agent's own process only.
void OnUnderscoreExit();

// Installs atexit, signal and fork handlers (once).
void InstallLifecycleHandlers();

// What RequestSignalExit is asked for at a normal exit (atexit).
inline constexpr int kExitRequest = -1;

// Work the agent thread does when the process ends (sig: an exit signal or
// kExitRequest): end the window as partial, drain the writer.
void HandleExitSignal(int sig);

// That work itself; reason "exit", "SIGTERM", ... Runs on the agent thread
// (or on the exiting thread when there is no agent thread).
void RunExitWork(const char* reason);

}  // namespace prof
