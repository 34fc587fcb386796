// "libprof-agent": the agent's own thread. It ends time steps on their
// boundaries (PROF_STEP=time:<d>), runs PROF_STEP=auto's analysis when
// the tape asks (and its fallback at PROF_AUTO_TIMEOUT), polls
// PROF_TRIGGER_FILE, and does the
// exit work for SIGINT/SIGTERM, which a signal handler cannot do itself.
// It sleeps on a semaphore so the handler can wake it (sem_post is
// async-signal-safe).
#pragma once

#include <cstdint>

#include "agent/runtime/runtime.h"

namespace prof {

void StartAgentThread(Runtime* rt, uint64_t start_ns);

// From a signal handler: ask the agent thread to end the window for sig and
// wait at most timeout_ns for it. False if there is no agent thread or it
// did not finish in time.
bool RequestSignalExit(int sig, uint64_t timeout_ns);

// Whether the agent thread was started.
bool AgentThreadRunning();

// Any thread: wake the agent thread (PROF_STEP=auto has events to analyse).
void WakeAgentThread();

// The hot bits a decided PROF_STEP=auto marker needs.
uint32_t AutoMarkerBits(const StepMarker& marker);

}  // namespace prof
