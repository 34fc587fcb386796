// MarkerMatcher: whether an interned kernel or NVTX range name matches the
// configured marker regex (PROF_STEP=kernel:/nvtx:, PROF_RANGE=nvtx:),
// cached per name id so the regex runs off the per-call path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace prof {

// Whether an interned name (kernel or NVTX range) is a step marker, decided
// once per name: the regex runs off the per-call path.
class MarkerMatcher {
 public:
  MarkerMatcher() = default;
  // demangle: kernel names are matched in demangled form.
  void Configure(const std::string& pattern, bool demangle);
  bool Matches(uint32_t name_id);
  bool MatchesText(std::string_view name);  // uncached
  // The cached answer for name_id was no (a cache hit of the current id
  // epoch); false when it matched or is not cached. Lock-free.
  bool KnownNoMatch(uint32_t name_id) const;
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  // Direct-mapped by id, tagged with it: (id << 2) | state, state 1 no, 2 yes
  // (0: empty). NVTX names get fresh ids over time (base/strings.h), so any
  // id may be cached; emptied when the table's ids start over (id_epoch).
  static constexpr uint32_t kCached = 1u << 18;
  std::optional<std::regex> regex_;
  bool demangle_ = false;
  std::mutex mu_;  // regex evaluation (std::regex is not reentrant-safe to share freely)
  std::unique_ptr<std::atomic<uint32_t>[]> cache_;
  std::atomic<uint32_t> cache_epoch_{0};
};

}  // namespace prof
