#include "agent/steps/marker_matcher.h"

#include "base/strings.h"

namespace prof {

void MarkerMatcher::Configure(const std::string& pattern, bool demangle) {
  regex_.emplace(pattern, std::regex::ECMAScript | std::regex::optimize);
  demangle_ = demangle;
  cache_.reset(new std::atomic<uint32_t>[kCached]);
  for (uint32_t i = 0; i < kCached; ++i) cache_[i].store(0, std::memory_order_relaxed);
  cache_epoch_.store(Strings().id_epoch(), std::memory_order_relaxed);
}

bool MarkerMatcher::MatchesText(std::string_view name) {
  if (!regex_ || name.empty()) return false;
  std::string text(name);
  if (demangle_) text = Demangle(text.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  return std::regex_search(text, *regex_);
}

bool MarkerMatcher::KnownNoMatch(uint32_t name_id) const {
  if (!regex_ || !cache_ || name_id == 0 || name_id == kDroppedNameId) return false;
  if (Strings().id_epoch() != cache_epoch_.load(std::memory_order_relaxed)) return false;
  uint32_t cached = cache_[name_id & (kCached - 1)].load(std::memory_order_relaxed);
  return cached != 0 && (cached >> 2) == name_id && (cached & 3) == 1;
}

bool MarkerMatcher::Matches(uint32_t name_id) {
  if (!regex_ || name_id == 0 || name_id == kDroppedNameId) return false;
  uint32_t epoch = Strings().id_epoch();
  if (epoch != cache_epoch_.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t i = 0; i < kCached; ++i) cache_[i].store(0, std::memory_order_relaxed);
    cache_epoch_.store(epoch, std::memory_order_relaxed);
  }
  std::atomic<uint32_t>& slot = cache_[name_id & (kCached - 1)];
  uint32_t cached = slot.load(std::memory_order_relaxed);
  if (cached != 0 && (cached >> 2) == name_id) return (cached & 3) == 2;
  std::string name = Strings().Get(name_id);
  if (name.empty()) return false;  // released meanwhile: not cached
  if (demangle_) name = Demangle(name.c_str());
  bool match;
  {
    std::lock_guard<std::mutex> lock(mu_);
    match = std::regex_search(name, *regex_);
  }
  slot.store((name_id << 2) | (match ? 2u : 1u), std::memory_order_relaxed);
  return match;
}

}  // namespace prof
