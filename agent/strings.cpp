#include "agent/strings.h"

#include <cxxabi.h>

#include <cstdlib>

namespace prof {

uint32_t StringTable::Intern(std::string_view text) {
  if (text.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(std::string(text));
  if (it != ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::string StringTable::Get(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return id < strings_.size() ? strings_[id] : std::string();
}

std::vector<std::string> StringTable::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return strings_;
}

StringTable& Strings() {
  static StringTable* table = new StringTable;  // intentionally leaked: see header
  return *table;
}

std::string Demangle(const char* mangled) {
  if (mangled == nullptr) return "";
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return mangled;
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace prof
