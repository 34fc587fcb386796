#include "agent/runtime.h"

#include "agent/strings.h"

namespace prof {
namespace {
std::atomic<Runtime*> g_runtime{nullptr};
}  // namespace

Runtime* CurrentRuntime() { return g_runtime.load(std::memory_order_acquire); }
void InstallRuntime(Runtime* runtime) { g_runtime.store(runtime, std::memory_order_release); }

void MarkerMatcher::Configure(const std::string& pattern, bool demangle) {
  regex_.emplace(pattern, std::regex::ECMAScript | std::regex::optimize);
  demangle_ = demangle;
  cache_.reset(new std::atomic<uint8_t>[kCached]);
  for (uint32_t i = 0; i < kCached; ++i) cache_[i].store(0, std::memory_order_relaxed);
}

bool MarkerMatcher::Matches(uint32_t name_id) {
  if (!regex_ || name_id == 0) return false;
  if (name_id < kCached) {
    uint8_t state = cache_[name_id].load(std::memory_order_relaxed);
    if (state != 0) return state == 2;
  }
  std::string name = Strings().Get(name_id);
  if (demangle_) name = Demangle(name.c_str());
  bool match;
  {
    std::lock_guard<std::mutex> lock(mu_);
    match = std::regex_search(name, *regex_);
  }
  if (name_id < kCached) cache_[name_id].store(match ? 2 : 1, std::memory_order_relaxed);
  return match;
}

}  // namespace prof
