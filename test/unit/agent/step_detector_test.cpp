// PROF_STEP=auto's detector on hand-built event streams with a known
// iteration structure: each generator records where its iterations truly
// begin, and a test replays the chosen marker over the stream exactly as
// the agent counts steps (token, and the previous event when the marker has
// one) and requires the steps to begin at the true iteration starts, no
// more and no fewer. The detector is fed growing prefixes, as the agent
// feeds it, and must decide within 50 iterations.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "agent/steps/auto_step.h"
#include "agent/steps/step_detector.h"

namespace prof {
namespace {

uint32_t K(uint32_t id) { return MakeToken(TokenKind::kLaunch, id); }
const uint32_t kH2D = MakeToken(TokenKind::kCopy, 1);
const uint32_t kD2H = MakeToken(TokenKind::kCopy, 2);
const uint32_t kD2D = MakeToken(TokenKind::kCopy, 8);
const uint32_t kMemset = MakeToken(TokenKind::kMemset, 1);
const uint32_t kSync = MakeToken(TokenKind::kSync, 1);
const uint32_t kDevSync = MakeToken(TokenKind::kSync, 2);
const uint32_t kNvtxTrain = MakeToken(TokenKind::kNvtx, 7);

struct Stream {
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> ticks;
  std::vector<size_t> starts;  // index of each true iteration's first event
  uint64_t now = 0;

  void Begin() { starts.push_back(tokens.size()); }
  void Add(uint32_t t, uint64_t gap = 1000) {
    now += gap;
    tokens.push_back(t);
    ticks.push_back(now);
  }
  void Add(std::initializer_list<uint32_t> ts) {
    for (uint32_t t : ts) Add(t);
  }
};

// Where the agent would start steps with this marker.
std::vector<size_t> Fire(const Stream& s, const StepMarker& m) {
  std::vector<size_t> out;
  uint32_t prev = 0;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    if (s.tokens[i] == m.token && (m.prev == 0 || prev == m.prev)) out.push_back(i);
    prev = s.tokens[i];
  }
  return out;
}

// Feeds prefixes at the agent's thresholds (AutoStep::IsThreshold) and
// returns the first decision and how many true iterations had begun by then.
Detection DecideLikeTheAgent(const Stream& s, size_t* iterations_seen) {
  for (size_t n = 1;; ++n) {
    if (!AutoStep::IsThreshold(n) && n < s.tokens.size()) continue;
    size_t len = std::min(n, s.tokens.size());
    Detection d = DetectPeriod(s.tokens.data(), s.ticks.data(), len);
    if (d.found || len == s.tokens.size()) {
      *iterations_seen = 0;
      for (size_t st : s.starts) *iterations_seen += st < len;
      return d;
    }
  }
}

TEST_CASE("the agent analyses at 64, 96, 128, 192, ... events", "[auto]") {
  std::vector<uint64_t> at;
  for (uint64_t n = 1; n <= 4096; ++n) {
    if (AutoStep::IsThreshold(n)) at.push_back(n);
  }
  CHECK(at == std::vector<uint64_t>{64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096});
}

// The marker fires at every true iteration start after the first few, and
// nowhere else.
void RequireStepsAreIterations(const Stream& s, const Detection& d, size_t skip = 3) {
  REQUIRE(d.found);
  std::vector<size_t> fired = Fire(s, d.marker);
  std::vector<size_t> truth(s.starts.begin() + skip, s.starts.end());
  std::vector<size_t> fired_after;
  for (size_t f : fired) {
    if (f >= truth.front()) fired_after.push_back(f);
  }
  CHECK(fired_after == truth);
}

void TrainIteration(Stream& s, int kernels, bool sync = true) {
  s.Begin();
  s.Add(kNvtxTrain);
  s.Add({kMemset, kH2D});
  for (int k = 0; k < kernels; ++k) s.Add(K(10 + k % 4));  // gemm, scale, relu, optimizer cycling
  s.Add({kD2D, kD2H});
  if (sync) s.Add(kSync);
}

TEST_CASE("the first threshold above a count is the next analysis point", "[auto]") {
  CHECK(AutoStep::NextThreshold(0) == 64);
  CHECK(AutoStep::NextThreshold(63) == 64);
  CHECK(AutoStep::NextThreshold(64) == 96);
  CHECK(AutoStep::NextThreshold(100) == 128);
  CHECK(AutoStep::NextThreshold(128) == 192);
  CHECK(AutoStep::NextThreshold(4095) == 4096);
  for (uint64_t n = 1; n < 5000; ++n) {
    uint64_t next = AutoStep::NextThreshold(n);
    REQUIRE(AutoStep::IsThreshold(next));
    for (uint64_t m = n + 1; m < next; ++m) REQUIRE_FALSE(AutoStep::IsThreshold(m));
  }
}

TEST_CASE("an analysis that runs late decides on the events an on-time one would have had", "[auto]") {
  // The agent thread woke only after 40 iterations (a loaded machine): the
  // decision is the one the 64-, 96-, ... event prefixes give, not one taken
  // on the whole tape, so the iterations it needed do not grow with the delay.
  Stream s;
  for (int i = 0; i < 200; ++i) TrainIteration(s, 6);
  size_t seen = 0;
  Detection on_time = DecideLikeTheAgent(s, &seen);
  REQUIRE(on_time.found);
  AutoStep late(1 << 12, nullptr, nullptr);
  for (size_t i = 0; i < 40 * 12; ++i) late.Observe(s.tokens[i]);
  REQUIRE(late.Analyze());
  CHECK(late.detection().iterations == on_time.iterations);
  CHECK(late.marker().token == on_time.marker.token);
  CHECK(late.detection().iterations <= 50);
}

TEST_CASE("a model's parameters moved in one by one are not a loop: the training loop after them is", "[auto]") {
  // PyTorch's model.to(device) on a model with 300 parameter tensors: a
  // pageable host-to-device copy and a stream synchronize per tensor, a
  // perfectly regular pair, then the training loop (each iteration loads its
  // batch, computes and synchronizes on the loss).
  Stream s;
  for (int p = 0; p < 300; ++p) s.Add({kH2D, kSync});
  for (int i = 0; i < 200; ++i) {
    s.Begin();
    s.Add({kH2D, kH2D});
    for (int k = 0; k < 20; ++k) s.Add(K(20 + k));
    s.Add({kD2H, kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(d.launches == 20);
  CHECK(seen <= 50);
  // One step per iteration of the loop and none in the set-up. The cut may
  // sit inside the batch's copies: (synchronize, copy) also closed every
  // set-up pair, so the pair of the batch's two copies is the one boundary
  // that is the loop's alone.
  std::vector<size_t> fired = Fire(s, d.marker);
  REQUIRE(fired.size() == s.starts.size());
  for (size_t i = 0; i < fired.size(); ++i) {
    size_t end = i + 1 < s.starts.size() ? s.starts[i + 1] : s.tokens.size();
    CHECK((fired[i] >= s.starts[i] && fired[i] < end));
  }
  // Copies and synchronizes alone, however regular, are never taken.
  Stream setup_only;
  for (int p = 0; p < 2000; ++p) setup_only.Add({kH2D, kSync});
  Detection none = DetectPeriod(setup_only.tokens.data(), setup_only.ticks.data(), setup_only.tokens.size());
  CHECK_FALSE(none.found);
}

TEST_CASE("the tape counts the loop's iterations from its first, set-up not included", "[auto]") {
  // Parameters moved in, then a loop whose marker pairs its first copy with
  // the previous iteration's last kernel: it cannot fire at iteration 0
  // (whose previous event is set-up), which still counts.
  Stream s;
  for (int p = 0; p < 40; ++p) s.Add({kH2D, kSync});
  const int ran = 30;
  for (int i = 0; i < ran; ++i) {
    s.Add({kH2D, kH2D});
    for (int k = 0; k < 8; ++k) s.Add(K(30 + k));
    s.Add(kMemset);
  }
  AutoStep a(1 << 12, nullptr, nullptr);
  for (uint32_t t : s.tokens) a.Observe(t);
  REQUIRE(a.Analyze());
  CHECK(a.iterations_before() == ran);
  // Set-up that is not an iteration's work does not count.
  std::vector<uint32_t> tape{kH2D, kSync, kH2D, kSync, K(1), K(2), K(3), kMemset, K(1), K(2), K(3), kMemset};
  CHECK_FALSE(AutoStep::IterationBefore(tape, 4, 8));
  CHECK(AutoStep::IterationBefore(tape, 8, 12));
  // A first iteration padded with work of one kind (an optimizer zeroing its
  // state, a memset per parameter) is still the loop's.
  std::vector<uint32_t> padded{kH2D, kSync, K(1), K(2), K(3), K(4), kMemset, kMemset, kMemset, kMemset,
                               K(5), K(6), K(7), K(8)};
  for (int k = 1; k <= 8; ++k) padded.push_back(K(k));
  CHECK(AutoStep::IterationBefore(padded, 14, 22));
}

TEST_CASE("a pair marker still fires when occasional work comes between its two events", "[auto]") {
  // A loop that reads its loss back every 10th iteration (a copy to the
  // host and a synchronize between the optimizer's last kernel and the next
  // batch's copies): the iteration still starts at every batch.
  Stream s;
  for (int i = 0; i < 120; ++i) {
    s.Begin();
    s.Add({kH2D, kH2D});
    for (int k = 0; k < 10; ++k) s.Add(K(40 + k % 5));
    s.Add(K(50), 40000);  // the optimizer, after the host's longest gap
    if (i % 10 == 0) s.Add({kD2H, kSync});
  }
  AutoStep a(1 << 14, nullptr, nullptr);
  for (uint32_t t : s.tokens) {
    if (a.state() == AutoStep::State::kDetecting) {
      a.Observe(t);
      a.Analyze();
    }
  }
  REQUIRE(a.state() == AutoStep::State::kDecided);
  // Replay the whole stream through the decided marker, as the agent matches it.
  AutoStep replay(1 << 14, nullptr, nullptr);
  for (size_t i = 0; i < 600 && replay.state() == AutoStep::State::kDetecting; ++i) {
    replay.Observe(s.tokens[i]);
    replay.Analyze();
  }
  REQUIRE(replay.marker().token == a.marker().token);
  std::vector<size_t> fired;
  for (size_t i = 600; i < s.tokens.size(); ++i) {
    if (replay.Observe(s.tokens[i])) fired.push_back(i);
  }
  std::vector<size_t> truth;
  for (size_t st : s.starts) {
    if (st >= 600) truth.push_back(st);
  }
  REQUIRE(fired.size() == truth.size());
  for (size_t i = 0; i + 1 < truth.size(); ++i) CHECK((fired[i] >= truth[i] && fired[i] < truth[i + 1]));
}

TEST_CASE("a pair marker fires at the first event after the decision when the decision fell between its two events",
          "[auto]") {
  // The tape the decision counts ends with the pair's first event (the
  // optimizer's kernel); the batch's copy right after it is the decided
  // path's first event, whose previous one is on the tape. Missed, every
  // step would be numbered one iteration short.
  // Every event occurs twice an iteration, so only a pair is unique: the
  // batch's first copy after the last kernel.
  Stream s;
  for (int i = 0; i < 200; ++i) {
    s.Begin();
    s.Add({kH2D, kH2D});
    for (int k = 0; k < 3; ++k) s.Add({K(40), K(41)});
  }
  AutoStep probe(1 << 14, nullptr, nullptr);
  size_t decided_at = 0;
  for (size_t i = 0; i < s.tokens.size() && probe.state() == AutoStep::State::kDetecting; ++i) {
    probe.Observe(s.tokens[i]);
    if (probe.Analyze()) decided_at = i;
  }
  REQUIRE(probe.state() == AutoStep::State::kDecided);
  REQUIRE(probe.marker().prev != 0);  // a pair marker
  // The same stream, the analysis run right after a pair's first event.
  size_t cut = decided_at;
  while (!(s.tokens[cut] == probe.marker().prev && s.tokens[cut + 1] == probe.marker().token)) ++cut;
  AutoStep a(1 << 14, nullptr, nullptr);
  for (size_t i = 0; i <= cut; ++i) a.Observe(s.tokens[i]);
  REQUIRE(a.Analyze());
  REQUIRE(a.marker().token == probe.marker().token);
  CHECK(a.Observe(s.tokens[cut + 1]));
}

TEST_CASE("a plain training loop is cut after its synchronize, at its NVTX range, within 50 iterations", "[auto]") {
  Stream s;
  for (int i = 0; i < 200; ++i) TrainIteration(s, 6);
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.marker.token == kNvtxTrain);
  CHECK(d.marker.prev == 0);  // the range name alone marks the iteration
  CHECK(d.marker.context == kSync);
  CHECK(d.boundary == Boundary::kAfterSync);
  CHECK(d.period_events == 12);
  CHECK(d.launches == 6);
  CHECK(d.copies == 3);
  CHECK(d.syncs == 1);
  CHECK(d.memsets == 1);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("a kernel that repeats inside the iteration needs the previous event to mark it", "[auto]") {
  // A B A C sync: A occurs twice, so a marker on A alone would double the steps.
  Stream s;
  for (int i = 0; i < 100; ++i) {
    s.Begin();
    s.Add({K(1), K(2), K(1), K(3), kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(d.marker.token == K(1));
  CHECK(d.marker.prev == kSync);
  CHECK(d.boundary == Boundary::kAfterSync);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("gradient accumulation x4: the period is the optimizer's iteration, not the micro-batch", "[auto]") {
  Stream s;
  for (int i = 0; i < 60; ++i) {
    s.Begin();
    for (int micro = 0; micro < 4; ++micro) {
      s.Add(kH2D);
      for (int k = 0; k < 5; ++k) s.Add(K(20 + k));   // forward
      for (int k = 0; k < 5; ++k) s.Add(K(30 + k));   // backward (accumulates)
    }
    s.Add({K(40), K(41), kSync});  // optimizer step, then the loss is read
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.period_events == 4 * 11 + 3);
  CHECK(d.marker.token == kH2D);
  CHECK(d.marker.prev == kSync);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("gradient accumulation without any synchronize still finds the optimizer's iteration", "[auto]") {
  // No synchronize, range or gap says where the iteration begins, so the
  // boundary may sit anywhere in it; each step must still hold exactly one
  // optimizer step and four micro-batches.
  Stream s;
  for (int i = 0; i < 80; ++i) {
    s.Begin();
    for (int micro = 0; micro < 4; ++micro) {
      for (int k = 0; k < 4; ++k) s.Add(K(20 + k));
    }
    s.Add({K(40), K(41)});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.period_events == 18);
  std::vector<size_t> fired = Fire(s, d.marker);
  REQUIRE(fired.size() > 50);
  for (size_t i = 1; i < fired.size(); ++i) {
    int optimizer = 0, micro_starts = 0;
    for (size_t p = fired[i - 1]; p < fired[i]; ++p) {
      optimizer += s.tokens[p] == K(40);
      micro_starts += s.tokens[p] == K(20);
    }
    CHECK(optimizer == 1);
    CHECK(micro_starts == 4);
  }
}

TEST_CASE("an evaluation pass every 10 iterations stays inside the iteration it follows", "[auto]") {
  Stream s;
  for (int i = 0; i < 80; ++i) {
    TrainIteration(s, 8);
    if (i % 10 == 9) {
      for (int k = 0; k < 3; ++k) s.Add(K(10 + k));  // forward on resident validation data
      s.Add({kD2H, kSync});
    }
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.period_events == 14);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("an evaluation pass that reuses the iteration's copy and sync does not become a step", "[auto]") {
  // The pass ends with the same D2H copy and synchronize as a training
  // iteration, so (copy, sync) comes more often than iterations do; cutting
  // there would make the pass a step of its own.
  Stream s;
  for (int i = 0; i < 90; ++i) {
    s.Begin();
    s.Add({kH2D, K(1), K(2), K(3), K(4), K(5), kD2H, kSync});
    if (i % 10 == 9) s.Add({K(1), K(2), K(1), K(2), kD2H, kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.marker.token == kH2D);
  CHECK(d.boundary == Boundary::kAfterSync);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("a data-dependent extra kernel in 10% of iterations is noise", "[auto]") {
  std::mt19937 rng(12);
  Stream s;
  for (int i = 0; i < 150; ++i) {
    s.Begin();
    s.Add({kH2D, K(1), K(2)});
    if (rng() % 10 == 0) s.Add(K(99));
    s.Add({K(3), K(4), kD2H, kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.period_events == 7);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("per-iteration varying launch counts (dynamic shapes) keep the iteration", "[auto]") {
  std::mt19937 rng(3);
  Stream s;
  for (int i = 0; i < 150; ++i) {
    s.Begin();
    s.Add({kNvtxTrain, kH2D, K(1)});
    int r = 3 + static_cast<int>(rng() % 5);
    for (int k = 0; k < r; ++k) s.Add(K(2));
    s.Add({K(3), kD2H, kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.marker.token == kNvtxTrain);
  RequireStepsAreIterations(s, d);
}

// The detection checks of the test above, on another stream of iterations.
TEST_CASE("warm-up iterations that differ (autotuning, a long first iteration) do not hide the loop", "[auto]") {
  Stream s;
  for (int i = 0; i < 120; ++i) {
    s.Begin();
    s.Add(kH2D);
    if (i == 0) {
      for (int k = 0; k < 300; ++k) s.Add(K(200 + k % 37), 50000);  // autotuning candidates, slow
    }
    if (i < 3) s.Add({K(90), K(91), kDevSync});  // caching-allocator growth, compile
    s.Add({K(1), K(2), K(3), kD2H, kSync});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.marker.token == kH2D);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("200 tiny launches and one synchronize are one iteration, not 200", "[auto]") {
  Stream s;
  for (int i = 0; i < 40; ++i) {
    s.Begin();
    s.Add(kH2D);
    for (int k = 0; k < 200; ++k) s.Add(K(5));
    s.Add(kSync);
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(seen <= 50);
  CHECK(d.period_events == 202);
  CHECK(d.marker.token == kH2D);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("without syncs or ranges the boundary is the first event after the host's longest gap", "[auto]") {
  Stream s;
  for (int i = 0; i < 100; ++i) {
    s.Begin();
    s.Add(K(3), 2'000'000);  // the data loader's wait
    s.Add({K(1), K(2), K(4), K(5)});
  }
  size_t seen = 0;
  Detection d = DecideLikeTheAgent(s, &seen);
  REQUIRE(d.found);
  CHECK(d.marker.token == K(3));
  CHECK(d.boundary == Boundary::kAfterGap);
  RequireStepsAreIterations(s, d);
}

TEST_CASE("a program without a loop is not given one, and says why", "[auto]") {
  std::mt19937 rng(7);
  Stream s;
  for (int i = 0; i < 20000; ++i) s.Add(K(rng() % 5000));
  Detection d = DetectPeriod(s.tokens.data(), s.ticks.data(), s.tokens.size());
  CHECK_FALSE(d.found);
  CHECK(d.why_not.find("no repeating sequence") != std::string::npos);
  CHECK(d.distinct_tokens > 3000);
}

// Random work from a small set: 32 kernels (or launches without names, as
// CUPTI alone reports them), a copy after 1 in 7 and a synchronize after 1
// in 11. Every kernel is in nearly every long stretch, so presence alone
// would call any frequent pair a loop; the stretches' lengths are what
// differ from an iteration (geometric, not about one length).
Stream RandomSmallAlphabet(uint32_t kernels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Stream s;
  for (int i = 0; i < 60000; ++i) {
    s.Add(K(rng() % kernels));
    if (rng() % 7 == 0) s.Add(kH2D);
    if (rng() % 11 == 0) s.Add(kSync);
  }
  return s;
}

TEST_CASE("random work from a small set of kernels is not a loop, however long it runs", "[auto]") {
  for (uint32_t kernels : {32u, 1u}) {
    for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u}) {
      Stream s = RandomSmallAlphabet(kernels, seed);
      size_t seen = 0;
      Detection d = DecideLikeTheAgent(s, &seen);
      INFO("kernels " << kernels << " seed " << seed << ": period " << d.period_events << " marker " << std::hex << d.marker.token << "/" << d.marker.prev << std::dec << " iterations " << d.iterations << " launches "
                      << d.launches);
      CHECK_FALSE(d.found);
    }
  }
}

TEST_CASE("a stream that alternates two unrelated halves at random is not periodic", "[auto]") {
  std::mt19937 rng(5);
  Stream s;
  for (int i = 0; i < 400; ++i) {
    if (rng() % 2) s.Add({K(1), K(2), kSync});
    else s.Add({K(3), K(4), K(5), K(6), K(7), K(8), kD2H, kSync});
  }
  Detection d = DetectPeriod(s.tokens.data(), s.ticks.data(), s.tokens.size());
  // Either no decision, or one whose steps are whole "halves": the stream
  // has no longer period, so no marker may cut inside a half.
  if (d.found) {
    std::vector<size_t> fired = Fire(s, d.marker);
    for (size_t f : fired) CHECK((f == 0 || s.tokens[f - 1] == kSync));
  }
}

TEST_CASE("too short a stream waits for more", "[auto]") {
  Stream s;
  for (int i = 0; i < 5; ++i) TrainIteration(s, 4);
  Detection d = DetectPeriod(s.tokens.data(), s.ticks.data(), s.tokens.size());
  CHECK_FALSE(d.found);
}

}  // namespace
}  // namespace prof
