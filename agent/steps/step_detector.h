// PROF_STEP=auto's decision, as a pure function of a recorded event stream:
// which event opens each iteration of the program's loop. No clocks, no
// globals, no CUDA: the tape (agent/steps/auto_step.h) feeds it, tests feed it
// hand-built streams.
//
// An event is a token: its kind (launch of a named kernel, copy of a kind,
// memset, synchronize, NVTX range push) and an id within the kind. A
// candidate marker is a pair of consecutive tokens (prev, cur); its
// occurrences cut the stream into segments, one per iteration if the
// candidate is right. A candidate is accepted when its segments repeat the
// whole stream:
//   - core tokens (present in >= 75 % of segments) make up the iteration,
//     and they include a kernel or graph launch (copies and synchronizes
//     alone are data moved in: a model's parameters, one by one);
//     the other tokens are noise (a data-dependent extra kernel, an
//     evaluation pass now and then, warm-up work) and may be at most 25 % of
//     the events;
//   - no noise token comes back exactly every k-th segment for k <= 8: that
//     is an outer loop (gradient accumulation: micro-batches then one
//     optimizer step), and the outer iteration is the period;
//   - no segment holds less than half of the core tokens (the marker fired
//     inside an iteration), and none holds every core token twice or more
//     (the marker skipped an iteration);
//   - most segments are within 1.5x of the median segment's length: gaps
//     between a frequent pair of events in random work are geometric, an
//     iteration's length varies little.
// Among accepted candidates the shortest period wins; among those of the
// same period, the natural boundary: after a synchronization, at an NVTX
// range, after the host's longest gap, in that order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace prof {

// Token layout: kind in the top 4 bits, id in the low 28. 0 is no event.
enum class TokenKind : uint8_t { kNone = 0, kLaunch = 1, kGraph = 2, kCopy = 3, kMemset = 4, kSync = 5, kNvtx = 6 };
constexpr uint32_t kTokenIdBits = 28;
constexpr uint32_t MakeToken(TokenKind kind, uint32_t id) {
  return (static_cast<uint32_t>(kind) << kTokenIdBits) | (id & ((1u << kTokenIdBits) - 1));
}
constexpr TokenKind KindOfToken(uint32_t token) { return static_cast<TokenKind>(token >> kTokenIdBits); }
constexpr uint32_t IdOfToken(uint32_t token) { return token & ((1u << kTokenIdBits) - 1); }

// Where the chosen boundary sits, by preference.
enum class Boundary : uint8_t { kAfterSync, kNvtxRange, kAfterGap, kPlain };

// The step marker: each event `token` whose previous observed event is
// `prev` starts a step; prev == 0 means any previous event (the token
// occurs once per iteration on its own).
struct StepMarker {
  uint32_t token = 0;
  uint32_t prev = 0;
  uint32_t context = 0;  // the token before it in the stream (for the description), even when prev == 0
};

struct Detection {
  bool found = false;
  StepMarker marker;
  Boundary boundary = Boundary::kPlain;
  uint32_t period_events = 0;   // events in a typical iteration
  uint32_t launches = 0;        // per typical iteration, by kind
  uint32_t copies = 0;
  uint32_t memsets = 0;
  uint32_t syncs = 0;
  uint32_t nvtx = 0;
  uint32_t iterations = 0;      // marker occurrences seen in the analysed stream
  // The iteration's core tokens (in most of its segments). Once the loop
  // runs, a pair marker's `prev` is matched against the last core event
  // seen, so other work between the two (a loss read back every 10th
  // iteration: a copy and a synchronize) does not hide an iteration's start.
  std::vector<uint32_t> core;
  // When not found: why (for the fallback's log line).
  uint32_t distinct_tokens = 0;
  uint32_t distinct_pairs = 0;
  uint32_t candidates_tried = 0;
  std::string why_not;
};

struct DetectorParams {
  uint32_t min_segments = 8;      // iterations a candidate needs before it may be chosen
  double core_fraction = 0.75;    // present in this share of segments: part of the iteration
  double max_noise_share = 0.25;  // noise events over all events
  uint32_t max_outer = 8;         // a noise token every k <= this segments is an outer loop
  double regular_fraction = 0.85; // segments within 1.5x of the median length (random work's are not)
  uint32_t max_candidates = 48;   // evaluated per analysis (cost bound)
};

// tokens[i] with its host time ticks[i] (any monotonic unit; only compared
// with each other), in observed order; ticks may be null. Tokens 0 are
// skipped. Cost: O(n log n) for the pair census, O(n) per candidate tried.
Detection DetectPeriod(const uint32_t* tokens, const uint64_t* ticks, size_t n, const DetectorParams& params = {});

const char* BoundaryName(Boundary b);

}  // namespace prof
