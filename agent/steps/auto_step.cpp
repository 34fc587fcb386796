#include "agent/steps/auto_step.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include <cstdlib>
#include <new>
#include <type_traits>
#include <vector>

#include "base/clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace prof {
namespace {

// Host time of a tape event: only compared with its neighbours (the longest
// gap), so the cheapest monotonic counter will do.
inline uint64_t Ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return CoarseNowNs();
#endif
}

size_t RoundUpPow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

std::string Plural(uint32_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

uint32_t TokenForCall(ApiId id, uint32_t detail) {
  uint32_t api = static_cast<uint32_t>(id);
  switch (ApiKindOf(id)) {
    case ApiKind::kLaunch:
      return detail != 0 ? MakeToken(TokenKind::kLaunch, detail) : MakeToken(TokenKind::kGraph, api);
    case ApiKind::kMemcpy: return MakeToken(TokenKind::kCopy, api * 16 + (detail & 15));
    case ApiKind::kMemset: return MakeToken(TokenKind::kMemset, api);
    default: return 0;
  }
}

uint32_t TokenForSyncReturn(ApiId id) {
  switch (id) {
    case ApiId::cudaDeviceSynchronize:
    case ApiId::cudaStreamSynchronize:
    case ApiId::cudaStreamSynchronize_ptsz:
    case ApiId::cudaEventSynchronize:
      return MakeToken(TokenKind::kSync, static_cast<uint32_t>(id));
    default: return 0;  // cudaStreamWaitEvent & co. do not block the host
  }
}

uint32_t TokenForEvent(const ObservedEvent& event) {
  switch (event.site) {
    case MarkerSite::kNvtxRange: return TokenForNvtxRange(event.name_id);
    case MarkerSite::kManual:
    case MarkerSite::kNvtxRangeEnd: return 0;
    default: break;
  }
  bool enter = event.site == MarkerSite::kCallEnter;
  bool watched = enter ? (event.kind == ApiKind::kLaunch || event.kind == ApiKind::kMemcpy || event.kind == ApiKind::kMemset)
                       : (event.kind == ApiKind::kSync && event.result_ok);
  if (!watched) return 0;
  ApiId id = event.id;
  // A CUPTI-fed call names itself only by its function: look it up (calls
  // outside libprof's API table are not watched).
  if (id == ApiId::kCount && !ApiFromName(BaseApiName(event.api), &id)) {
    return enter && event.kind == ApiKind::kLaunch && event.name_id != 0 ? MakeToken(TokenKind::kLaunch, event.name_id) : 0;
  }
  return enter ? TokenForCall(id, event.kind == ApiKind::kLaunch ? event.name_id : event.detail) : TokenForSyncReturn(id);
}

namespace {

// A zero-filled array from calloc: fresh pages from the kernel, not written
// here, so a process that never appends pays for none of its 3 MiB (every
// process libprof is preloaded into builds a tape; most append nothing).
// Atomics of integers are zero-initialised by all-zero bytes.
template <typename T>
std::unique_ptr<T[], AutoStep::FreeDeleter> ZeroedArray(size_t n) {
  static_assert(std::is_trivially_destructible_v<T>);
  void* p = std::calloc(n, sizeof(T));
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<T[], AutoStep::FreeDeleter>(static_cast<T*>(p));
}

}  // namespace

AutoStep::AutoStep(size_t capacity, std::function<void()> wake, std::function<std::string(uint32_t)> name_of)
    : capacity_(RoundUpPow2(capacity < 1024 ? 1024 : capacity)),
      tokens_(ZeroedArray<std::atomic<uint32_t>>(capacity_)),
      ticks_(ZeroedArray<std::atomic<uint64_t>>(capacity_)),
      wake_(std::move(wake)),
      name_of_(std::move(name_of)) {}

void AutoStep::Append(uint32_t token) {
  uint64_t i = count_.fetch_add(1, std::memory_order_relaxed);
  if (i < capacity_) {
    ticks_[i].store(Ticks(), std::memory_order_relaxed);
    tokens_[i].store(token, std::memory_order_release);
  }
  if (i == 0 && observed_total_.load(std::memory_order_relaxed) == 0) {
    first_event_ns_.store(NowNs(), std::memory_order_relaxed);
    if (first_) first_();
  }
  if (IsThreshold(i + 1) || i + 1 == capacity_) {
    if (wake_) wake_();
  }
}

bool AutoStep::Analyze() {
  if (state_.load(std::memory_order_acquire) != State::kDetecting) return false;
  uint64_t n = count_.load(std::memory_order_acquire);
  if (n > capacity_) n = capacity_;
  if (n == analysed_count_ || n < 64) return false;
  uint64_t from = analysed_count_;
  analysed_count_ = n;
  // A slot whose writer has not stored yet reads 0 and is skipped.
  std::vector<uint32_t> tokens(n);
  std::vector<uint64_t> ticks(n);
  for (uint64_t i = 0; i < n; ++i) {
    tokens[i] = tokens_[i].load(std::memory_order_acquire);
    ticks[i] = ticks_[i].load(std::memory_order_relaxed);
  }
  // The prefixes the wake-ups were for (thresholds passed since the last
  // analysis), in order, then the whole tape: an agent thread that runs late
  // (a loaded machine) decides on the same events an on-time one would have,
  // so how many iterations the decision needed does not depend on when it
  // ran. All of them together still cost at most about three times the last.
  for (uint64_t p = NextThreshold(from); ; p = NextThreshold(p)) {
    uint64_t len = p < n ? p : n;
    detection_ = DetectPeriod(tokens.data(), ignore_gaps_ ? nullptr : ticks.data(), len);
    if (detection_.found) {
      marker_ = detection_.marker;
      KeepCore(detection_.core);
      last_.store(0, std::memory_order_relaxed);
      state_.store(State::kDecided, std::memory_order_release);
      iterations_before_ = CountMarkers();
      return true;
    }
    if (len == n) break;
  }
  if (n == capacity_) {
    // Full without a loop: start over, forgetting the warm-up. A writer
    // still storing into the old tape only adds a stray token.
    for (size_t i = 0; i < capacity_; ++i) tokens_[i].store(0, std::memory_order_relaxed);
    observed_total_.fetch_add(count_.exchange(0, std::memory_order_acq_rel), std::memory_order_relaxed);
    analysed_count_ = 0;
  }
  return false;
}

void AutoStep::KeepCore(const std::vector<uint32_t>& core) {
  core_.fill(0);
  core_filter_ = !core.empty() && core.size() <= kCoreSlots * 3 / 4;
  if (!core_filter_) return;
  for (uint32_t token : core) {
    uint32_t i = (token * 2654435761u) >> 24;
    while (core_[i] != 0 && core_[i] != token) i = (i + 1) & (kCoreSlots - 1);
    core_[i] = token;
  }
}

uint64_t AutoStep::CountMarkers() {
  if (observed_total_.load(std::memory_order_relaxed) != 0) return 0;  // started over: the start is gone
  // Every event appended before the decision took effect. A writer that
  // took its slot just before may still be storing (descheduled between its
  // fetch_add and its store on a loaded machine): a missed marker would
  // number every later step one short, so its store is waited for, a while.
  uint64_t n = count_.load(std::memory_order_acquire);
  if (n > capacity_) n = capacity_;
  std::vector<uint32_t> tape;
  tape.reserve(n);
  int waits_left = 100;  // 200 us each, for all slots together
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t token = tokens_[i].load(std::memory_order_acquire);
    while (token == 0 && waits_left-- > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      token = tokens_[i].load(std::memory_order_acquire);
    }
    if (token != 0) tape.push_back(token);
  }
  // The loop starts no earlier than its first kernel: set-up before it
  // (parameters copied in) is not matched, and from there the marker is
  // matched as Observe matches it.
  size_t start = 0;
  while (start < tape.size() && !(IsCore(tape[start]) && (KindOfToken(tape[start]) == TokenKind::kLaunch ||
                                                         KindOfToken(tape[start]) == TokenKind::kGraph))) {
    ++start;
  }
  std::vector<size_t> at;
  uint32_t prev = 0;
  for (size_t i = start; i < tape.size(); ++i) {
    if (tape[i] == marker_.token && (marker_.prev == 0 || prev == marker_.prev)) at.push_back(i);
    if (IsCore(tape[i])) prev = tape[i];
  }
  if (at.size() < 2) return at.size();
  // The marker's first firing begins the loop's second iteration when the
  // loop's work came before it: a pair marker (the last event of one
  // iteration, the first of the next) cannot fire at the first iteration,
  // whose previous event is set-up, and a marker inside the iteration (an
  // optimizer kernel) fires after the first iteration's forward pass.
  return at.size() + (IterationBefore(tape, at[0], at[1]) ? 1 : 0);
}

uint32_t AutoStep::TapesLastCore() const {
  uint64_t n = count_.load(std::memory_order_acquire);
  if (n > capacity_) n = capacity_;
  // A few hundred events back at most: the pair's first event is the one
  // right before its second.
  for (uint64_t i = n, looked = 0; i > 0 && looked < 256; --i, ++looked) {
    uint32_t token = tokens_[i - 1].load(std::memory_order_acquire);
    if (token != 0 && IsCore(token)) return token;
  }
  return 0;
}

bool AutoStep::IterationBefore(const std::vector<uint32_t>& tape, size_t first, size_t second) {
  const size_t len = second - first;
  if (first == 0 || len == 0) return false;
  // Kinds of events, not counts: a first iteration does extra work of a few
  // kinds (an optimizer creating its state: a memset per parameter), which
  // must not hide the loop's kernels around it.
  std::unordered_set<uint32_t> iteration(tape.begin() + first, tape.begin() + second);
  std::unordered_set<uint32_t> before(tape.begin() + (first > len ? first - len : 0), tape.begin() + first);
  size_t shared = 0;
  for (uint32_t token : iteration) shared += before.count(token);
  return 2 * shared >= iteration.size();  // half of an iteration's kinds of work: the loop had begun
}

bool AutoStep::TimedOut(uint64_t now_ns, uint64_t timeout_ns, uint64_t start_ns) const {
  uint64_t first = first_event_ns();
  if (first == 0) first = start_ns;
  return state() == State::kDetecting && now_ns >= first && now_ns - first >= timeout_ns;
}

std::string AutoStep::Describe(uint64_t now_ns) const {
  const Detection& d = detection_;
  std::string what = name_of_ ? name_of_(d.marker.token) : fmt::format("event {:#x}", d.marker.token);
  std::string context = d.marker.context != 0 && name_of_ ? name_of_(d.marker.context) : "";
  std::string where;
  if (!context.empty()) where = fmt::format(" after {}", context);
  std::vector<std::string> parts;
  if (d.launches) parts.push_back(Plural(d.launches, "launch", "launches"));
  if (d.copies) parts.push_back(Plural(d.copies, "copy", "copies"));
  if (d.memsets) parts.push_back(Plural(d.memsets, "memset", "memsets"));
  if (d.syncs) parts.push_back(Plural(d.syncs, "sync", "syncs"));
  if (d.nvtx) parts.push_back(Plural(d.nvtx, "NVTX range", "NVTX ranges"));
  std::string per;
  for (size_t i = 0; i < parts.size(); ++i) per += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  uint64_t first = first_event_ns();
  double secs = first != 0 && now_ns > first ? static_cast<double>(now_ns - first) / 1e9 : 0.0;
  std::string note;
  if (d.boundary == Boundary::kAfterGap || d.boundary == Boundary::kPlain) note = fmt::format(" ({})", BoundaryName(d.boundary));
  return fmt::format("{}{}{}; {} per step; found after {} iterations, {:.1f} s", what, where, note,
                     per.empty() ? "no events" : per, d.iterations, secs);
}

std::string AutoStep::WhyNotFound() const {
  if (detection_.why_not.empty()) {
    uint64_t n = events_observed();
    if (n == 0) return "no CUDA launch, copy, synchronize or NVTX range reached the step logic";
    return fmt::format("{} CUDA events observed, too few to analyse", n);
  }
  return fmt::format("{} ({} events observed)", detection_.why_not, events_observed());
}

}  // namespace prof
