// Interned strings (kernel names, NVTX range names): records carry ids.
// Interning takes a mutex: it happens at kernel registration and NVTX range
// starts, never in a runtime wrapper's per-call path.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace prof {

class StringTable {
 public:
  StringTable() { strings_.emplace_back(); }  // id 0 is ""

  uint32_t Intern(std::string_view text);
  std::string Get(uint32_t id);
  // Copy of every string, id -> text, for a sealed Window.
  std::vector<std::string> Snapshot();
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  std::mutex mu_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, uint32_t> ids_;
};

// The process's table; lives until exit (never destroyed, so late wrappers
// and the exit path can still use it).
StringTable& Strings();

// abi::__cxa_demangle, or the input when it is not a mangled C++ name.
std::string Demangle(const char* mangled);

}  // namespace prof
