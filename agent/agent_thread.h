// "libprof-agent": the agent's own thread. It ends time steps on their
// boundaries (PROF_STEP=time:<d>), polls PROF_TRIGGER_FILE, and does the
// exit work for SIGINT/SIGTERM, which a signal handler cannot do itself.
// It sleeps on a semaphore so the handler can wake it (sem_post is
// async-signal-safe).
#pragma once

#include <cstdint>

#include "agent/runtime.h"

namespace prof {

void StartAgentThread(Runtime* rt, uint64_t start_ns);

// From a signal handler: ask the agent thread to end the window for sig and
// wait at most timeout_ns for it. False if there is no agent thread or it
// did not finish in time.
bool RequestSignalExit(int sig, uint64_t timeout_ns);

// Whether the agent thread was started.
bool AgentThreadRunning();

}  // namespace prof
