// PROF_STEP=auto while the process runs: a tape of event tokens that
// application threads append to while the loop is being looked for, the
// analysis (agent/steps/step_detector.h) run on the agent thread, and, once
// decided, the chosen marker that application threads match.
//
// Phases (state_, only ever forward):
//   kDetecting  wrappers of launches, copies, memsets and synchronizes leave
//               the fast path and Observe() appends one token and one tick
//               to the tape: a fetch_add and two relaxed stores. At event
//               counts 64, 96, 128, 192, ... (IsThreshold) the agent
//               thread is woken to analyse the tape, off the application's
//               threads; when the tape is full and no loop was
//               found it starts over (warm-up is forgotten).
//   kDecided    Observe() compares the token with the marker (and, for a
//               pair marker, the previous observed token); only the kinds the
//               marker needs leave the fast path.
//   kFallback   no loop within PROF_AUTO_TIMEOUT of CUDA activity: time
//               steps; Observe() is no longer called (no hot bit asks).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/api_ids.h"
#include "agent/steps/step_detector.h"
#include "agent/steps/step_markers.h"

namespace prof {

// The token of a call, or 0 for calls auto does not watch. detail: the
// kernel's interned name for launches, the cudaMemcpyKind + 1 for copies.
uint32_t TokenForCall(ApiId id, uint32_t detail);
// The token of a synchronize that returned (0 for calls that do not block the host).
uint32_t TokenForSyncReturn(ApiId id);
inline uint32_t TokenForNvtxRange(uint32_t name_id) { return MakeToken(TokenKind::kNvtx, name_id); }
// The token of an event on the marker path (agent/steps/step_markers.h), from any feed.
uint32_t TokenForEvent(const ObservedEvent& event);

class AutoStep {
 public:
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };

  enum class State : uint8_t { kDetecting, kDecided, kFallback };

  // capacity: tape length in events (rounded up to a power of two).
  // wake: asks the agent thread to call Analyze() soon (any thread).
  // name_of: human name of a token, for the log line.
  AutoStep(size_t capacity, std::function<void()> wake, std::function<std::string(uint32_t)> name_of);

  // Any application thread. True when this event is a step marker (decided only).
  bool Observe(uint32_t token) {
    State s = state_.load(std::memory_order_acquire);
    if (s == State::kDetecting) {
      Append(token);
      return false;
    }
    if (s != State::kDecided) return false;
    bool fire = token == marker_.token && (marker_.prev == 0 || PreviousCore() == marker_.prev);
    if (marker_.prev != 0 && IsCore(token)) last_.store(token, std::memory_order_relaxed);
    return fire;
  }

  // Multi-rank jobs: choose the boundary from the events alone, never from
  // the host's longest gap, which differs between ranks (a slow rank's own
  // delay), so that every rank running the same loop picks the same marker.
  // Call before the first Analyze().
  void IgnoreHostGaps() { ignore_gaps_ = true; }
  // Called on the application thread of the first event observed (the
  // provisional window opens there). Call before any event.
  void OnFirstEvent(std::function<void()> first) { first_ = std::move(first); }

  // Agent thread. Analyses the tape if new events arrived since the last
  // try; returns true when it has just decided (marker() is then valid).
  bool Analyze();
  // Agent thread: true when detecting for longer than timeout_ns of CUDA
  // activity: since the first observed event, or since start_ns (the agent's
  // start) when none was observed (nothing reaches the step logic, as under
  // CUDA_INJECTION64_PATH until the CUPTI callbacks feed it).
  bool TimedOut(uint64_t now_ns, uint64_t timeout_ns, uint64_t start_ns) const;
  void GiveUp() { state_.store(State::kFallback, std::memory_order_release); }

  State state() const { return state_.load(std::memory_order_acquire); }
  const StepMarker& marker() const { return marker_; }
  const Detection& detection() const { return detection_; }
  // Iterations of the loop that had begun when it was found (from the
  // marker's occurrences on the tape); 0 when the tape was started over (its
  // earlier iterations are not known). Agent thread, after Analyze decided.
  uint64_t iterations_before() const { return iterations_before_; }
  uint64_t first_event_ns() const { return first_event_ns_.load(std::memory_order_relaxed); }
  uint64_t events_observed() const { return observed_total_.load(std::memory_order_relaxed) + count_.load(std::memory_order_relaxed); }

  // Whether the loop had begun before `first`: the stretch of the same
  // length before it holds half the kinds of events of the iteration
  // [first, second).
  static bool IterationBefore(const std::vector<uint32_t>& tape, size_t first, size_t second);

  // "launch of `optimizer_step` after `cudaStreamSynchronize`; 6 launches and 1 sync per step; found after 24
  // iterations, 3.2 s" (now_ns: when decided).
  std::string Describe(uint64_t now_ns) const;
  // "no repeating sequence: ..." for the fallback line.
  std::string WhyNotFound() const;

  // When the agent thread is woken to analyse: at 64, 96, 128, 192, 256,
  // 384, ... events (half a power of two apart), so a decision comes at most
  // 50 % later than the data allows and all analyses together cost at most
  // three times the last one.
  static bool IsThreshold(uint64_t n) {
    if (n < 64) return false;
    uint64_t half = (uint64_t{1} << (63 - __builtin_clzll(n))) >> 1;
    return (n & (half - 1)) == 0;
  }
  // The first threshold above n.
  static uint64_t NextThreshold(uint64_t n) {
    if (n < 64) return 64;
    uint64_t pow2 = uint64_t{1} << (63 - __builtin_clzll(n));
    return pow2 + pow2 / 2 > n ? pow2 + pow2 / 2 : 2 * pow2;
  }

 private:
  void Append(uint32_t token);
  // The core event before this one, for a pair marker: the last one
  // observed since the decision or, before any (the decision fell between
  // the pair's two events), the tape's last.
  uint32_t PreviousCore() const {
    uint32_t last = last_.load(std::memory_order_relaxed);
    return last != 0 ? last : TapesLastCore();
  }
  uint32_t TapesLastCore() const;
  // Whether token is one of the iteration's core tokens (Detection::core);
  // every token is when there were too many to keep. Decided only.
  bool IsCore(uint32_t token) const {
    if (!core_filter_) return true;
    for (uint32_t i = (token * 2654435761u) >> 24;; i = (i + 1) & (kCoreSlots - 1)) {
      if (core_[i] == token) return true;
      if (core_[i] == 0) return false;
    }
  }
  void KeepCore(const std::vector<uint32_t>& core);
  uint64_t CountMarkers();  // iterations begun on the tape (0 if it was started over)

  const size_t capacity_;
  std::unique_ptr<std::atomic<uint32_t>[], FreeDeleter> tokens_;  // calloc'd: untouched until appended to
  std::unique_ptr<std::atomic<uint64_t>[], FreeDeleter> ticks_;
  std::atomic<uint64_t> count_{0};           // events appended to this tape (may pass capacity_)
  std::atomic<uint64_t> observed_total_{0};  // events of tapes started over
  std::atomic<uint64_t> first_event_ns_{0};
  std::atomic<State> state_{State::kDetecting};
  std::atomic<uint32_t> last_{0};  // previous observed token (pair markers)
  uint64_t analysed_count_ = 0;    // agent thread only
  bool ignore_gaps_ = false;       // set before the agent thread starts
  StepMarker marker_;              // written before state_ becomes kDecided (release)
  static constexpr uint32_t kCoreSlots = 256;  // open addressing, at most 3/4 full
  std::array<uint32_t, kCoreSlots> core_{};    // written before state_ becomes kDecided (release)
  bool core_filter_ = false;
  uint64_t iterations_before_ = 0; // agent thread, at the decision
  Detection detection_;            // agent thread; read after the decision
  std::function<void()> wake_;
  std::function<void()> first_;
  std::function<std::string(uint32_t)> name_of_;
};

}  // namespace prof
