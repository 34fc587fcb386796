// What runs when (STYLE.md 7):
//
//  load       ELF constructor (LD_PRELOAD or dlopen by the driver/NVTX) or
//             InitializeInjection: StartAgent() once per process.
//  start      config parsed, Runtime installed, the agent thread
//             ("libprof-agent": time steps, trigger file, signal exits)
//             started, atexit + SIGINT/SIGTERM + fork handlers installed.
//  window end the session hands a job to "libprof-writer".
//  exit       atexit handler: a window in progress is ended as partial,
//             the writer drained (bounded), or the one "ended before the
//             first window" line is logged.
//  SIGINT/    handler posts a semaphore; the agent thread ends the window as
//  SIGTERM    partial and drains the writer; the handler waits (bounded),
//             then chains to the host's handler, or restores the default
//             and re-raises so the exit status is the signal's.
//  fork       child: every lock we own is re-initialised, the parent's
//             Runtime is abandoned (its buffers, threads, half-window) and a
//             fresh agent starts with the child's pid, host-side only (no
//             CUPTI, no dl* calls: the loader lock may be held), its
//             PROF_NAME (if any) suffixed _pid<pid>.
#pragma once

namespace prof {

// Whether libcudart or libcuda is loaded in this process.
bool ProcessHasCudaLoaded();

// Installs atexit, signal and fork handlers (once).
void InstallLifecycleHandlers();

// Work the agent thread does when a signal arrived: end the window, drain.
void HandleExitSignal(int sig);

// Exit path shared by atexit and signals; reason "exit", "SIGTERM", ...
void EndOfProcess(const char* reason);

}  // namespace prof
