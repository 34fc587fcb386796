// Starting the one agent of this process (see lifecycle.h for what runs when).
#pragma once

#include "base/config.h"

namespace prof {

// Once per process, whichever entry point comes first. Never throws.
void StartAgent(const char* how);

// getauxval(AT_SECURE): a setuid/setgid/capability process, where libprof
// stays idle.
bool SecureExecution();

// CUDA was initialized (InitializeInjection): a step source that counts
// calls starts watching them through the collector. Never throws.
void OnCudaInitialized();

// fork child: abandon the parent's agent and start a fresh one with the
// same configuration (the child's own pid in names).
void RestartAgentInChild();

}  // namespace prof
