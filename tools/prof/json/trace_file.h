// A whole trace file in memory: its bytes (plain or gzip, detected from the
// bytes, not the name), or an nlohmann document parsed strictly. For tests
// and small inputs; the commands stream (trace_stream.h). The tool may use
// nlohmann-json; libprof.so never does.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace prof::tool {

// Reads and strictly parses `path` (no comments, no trailing commas).
// Returns false with a one-line `error`.
bool LoadTrace(const std::string& path, nlohmann::json* trace, std::string* error);

// Reads the whole file, decompressing gzip transparently.
bool ReadFileBytes(const std::string& path, std::string* bytes, std::string* error);

}  // namespace prof::tool
