// The agent's named spdlog logger ("libprof"). Messages are one line each and
// prefixed "[libprof]" so users can grep them out of their job's stderr.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

namespace prof {

// Never null; created on first use from PROF_LOG_LEVEL / PROF_LOG_FILE.
spdlog::logger& Log();

// fork child: forget the parent's logger (its sink mutex may be held by a
// thread that does not exist here); the next Log() makes a new one.
void ResetLogAfterFork();

// Control characters as \n, \t, \xNN: every log record stays one line
// whatever a PROF_* value or a path holds. The logger applies it to each
// message; exposed for tests and for other one-line outputs.
std::string EscapeForLog(std::string_view text);

// PROF_LOG_FILE: opened for appending only if it is a regular file (a FIFO,
// a device or a directory is refused without blocking); -1 with a reason.
int OpenLogFile(const char* path, std::string* why);

}  // namespace prof
