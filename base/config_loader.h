// Parsing of the PROF_* variables into a Config. Strict: every malformed
// value gives one problem line naming the variable, the value and the
// accepted forms, and says whether the default is used or profiling is off.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/config.h"

namespace prof {

// Looks a variable up; nullptr when unset. Tests hand a map, the agent getenv.
using EnvLookup = std::function<const char*(const char*)>;

struct ConfigResult {
  Config config;
  std::vector<std::string> problems;  // one line each, ready to log as warnings
};

// Environment first, then PROF_CONFIG_FILE's KEY=VALUE lines for keys the
// environment leaves unset. Also creates the output directory (and reports
// it when it cannot be created or written).
ConfigResult ParseConfig(const EnvLookup& env);

// ParseConfig(getenv) with each problem logged once.
Config LoadConfigFromEnvironment();

// Parses "100ms", "2s", "1.5s", "250us", "10ns", "1min" into ns; false on
// anything else (no unit, negative, zero, overflow).
bool ParseDurationNs(const std::string& text, uint64_t* out_ns);

}  // namespace prof
