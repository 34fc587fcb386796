// The agent's named spdlog logger ("libprof"). Messages are one line each and
// prefixed "[libprof]" so users can grep them out of their job's stderr.
#pragma once

#include <spdlog/spdlog.h>

namespace prof {

// Never null; created on first use from PROF_LOG_LEVEL / PROF_LOG_FILE.
spdlog::logger& Log();

// fork child: forget the parent's logger (its sink mutex may be held by a
// thread that does not exist here); the next Log() makes a new one.
void ResetLogAfterFork();

}  // namespace prof
