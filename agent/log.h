// The agent's named spdlog logger ("libprof"). Messages are one line each and
// prefixed "[libprof]" so users can grep them out of their job's stderr.
#pragma once

#include <spdlog/spdlog.h>

namespace prof {

// Never null; created on first use from PROF_LOG_LEVEL / PROF_LOG_FILE.
spdlog::logger& Log();

}  // namespace prof
