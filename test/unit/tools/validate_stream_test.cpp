// x-nesting and flow-binding checked as each track streams (its slices in
// order, only the enclosing ones held) give the messages, counts and
// warnings of the check that holds and sorts every track, on random traces
// with nesting violations, cuda_sync slices, flows inside, outside and late,
// ties and tracks out of order.
#include <catch2/catch.hpp>
#include <random>

#include "tools/prof/trace/validate.h"

namespace prof::tool {
namespace {

using nlohmann::json;

json Slice(int pid, int tid, double ts, double dur, bool sync, int64_t n) {
  return {{"ph", "X"}, {"cat", sync ? "cuda_sync" : "cpu_op"}, {"name", "s" + std::to_string(n)}, {"pid", pid},
          {"tid", tid}, {"ts", ts}, {"dur", dur}};
}

json Flow(const char* ph, int pid, int tid, double ts, int64_t id) {
  return {{"ph", ph}, {"cat", "ac2g"}, {"name", "ac2g"}, {"id", id}, {"pid", pid}, {"tid", tid}, {"ts", ts}};
}

// Per track, slices in x-nesting order (by start, the longer first) unless
// `shuffle`; every few a slice that starts inside the open one and ends after
// it, a tie, or a cuda_sync slice. Flow starts follow their slice (inside it,
// just past its end, or past it), on some tracks a few come at the end of the
// track's events, and some have no finish. Tracks are interleaved at random.
json RandomTrace(uint64_t seed, bool strict) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  const int tracks[][2] = {{1, 1}, {1, 2}, {0, 7}, {0, 8}};
  std::vector<std::vector<json>> per_track;
  std::vector<json> finishes;
  int64_t flow_id = 1, n = 0;
  for (const auto& pt : tracks) {
    bool shuffle = pick(6) == 0, late_flows = pick(5) == 0, ties = pick(5) == 0;
    std::vector<json> slices, late;
    std::vector<std::pair<double, double>> open;  // the enclosing slices
    double t = 1000 + pick(50), prev_start = -1, prev_end = -1;
    for (int i = 0; i < 60; ++i) {
      while (!open.empty() && (open.back().second <= t || pick(3) == 0)) open.pop_back();
      double start = t, end;
      int64_t kind = pick(12);
      if (!open.empty() && kind == 0 && start > open.back().first) {
        end = open.back().second + 1 + pick(5);  // crosses the enclosing slice's end
      } else {
        double limit = open.empty() ? start + 40 : open.back().second;
        end = std::min(limit, start + 1 + pick(20));
      }
      // Starting with the previous slice: shorter, so the order is strict.
      if (start == prev_start && end >= prev_end) end = prev_end - 0.25;
      if (end <= start) continue;
      prev_start = start, prev_end = end;
      bool sync = pick(8) == 0;
      slices.push_back(Slice(pt[0], pt[1], start, end - start, sync, n++));
      if (kind == 1 && ties) slices.push_back(Slice(pt[0], pt[1], start, end - start, false, n++));  // a tie
      if (pick(3) == 0) {
        // Inside, past the end, or just past it (within the rules' slack).
        int64_t where = pick(6);
        double at = where == 0 ? end + 0.5 : where == 1 ? end + 0.0002 : start + (end - start) * 0.5;
        json f = Flow("s", pt[0], pt[1], at, flow_id);
        (late_flows && pick(10) == 0 ? late : slices).push_back(f);
        if (pick(6)) finishes.push_back(Flow("f", 0, 9, at + 3, flow_id));
        ++flow_id;
      }
      open.emplace_back(start, end);
      t = start + (pick(3) == 0 ? 0 : pick(8));  // some slices start together
    }
    if (shuffle) std::shuffle(slices.begin(), slices.end(), rng);
    slices.insert(slices.end(), late.begin(), late.end());
    per_track.push_back(std::move(slices));
  }
  // A flow start on a track without slices.
  per_track.back().push_back(Flow("s", 5, 5, 1100, flow_id));
  json events = json::array();
  std::vector<size_t> next(per_track.size());
  for (size_t left = 0;;) {
    left = 0;
    for (size_t k = 0; k < per_track.size(); ++k) left += per_track[k].size() - next[k];
    if (left == 0) break;
    size_t k = static_cast<size_t>(pick(per_track.size()));
    if (next[k] < per_track[k].size()) events.push_back(per_track[k][next[k]++]);
  }
  for (json& f : finishes) events.push_back(f);
  json trace = {{"distributedInfo", {{"rank", 0}}}, {"traceEvents", events}};
  if (strict) trace["libprof"] = {{"version", "test"}};
  return trace;
}

TEST_CASE("tracks checked as they stream give the messages of tracks held and sorted", "[validate]") {
  size_t nesting = 0, binding = 0, warned = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    for (bool strict : {false, true}) {
      std::string text = RandomTrace(seed, strict).dump();
      for (size_t max : {2, 1000}) {
        ValidateResult streamed, held;
        uint64_t events_a = 0, events_b = 0;
        std::string error;
        REQUIRE(ValidateBytes(text, &streamed, &events_a, &error, max, /*stream_tracks=*/true));
        REQUIRE(ValidateBytes(text, &held, &events_b, &error, max, /*stream_tracks=*/false));
        INFO("seed " << seed << (strict ? " strict" : "") << " max " << max);
        CHECK(streamed.errors == held.errors);
        CHECK(streamed.warnings == held.warnings);
        for (const std::string& e : held.errors) {
          nesting += e.rfind("rule x-nesting", 0) == 0;
          binding += e.rfind("rule flow-binding", 0) == 0;
        }
        warned += held.warnings.size();
      }
    }
  }
  // The traces reach what is compared.
  CHECK(nesting > 100);
  CHECK(binding > 100);
  CHECK(warned > 100);
}

}  // namespace
}  // namespace prof::tool
