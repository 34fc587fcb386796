// CUPTI time -> agent time (agent/clock.h). Preferred: CUPTI is handed a
// timestamp callback returning prof::NowNs(), and the map is the identity.
// Where that is unavailable, CUPTI's clock is sampled against the agent's
// in pairs (agent, cupti, agent) and the tightest pair gives the offset;
// re-sampling at each window keeps drift (e.g. NTP slewing CUPTI's default
// CLOCK_REALTIME) out of the result.
#pragma once

#include <cstdint>
#include <functional>

namespace prof::cupti {

class ClockMap {
 public:
  // The identity: CUPTI already reports agent time.
  ClockMap() = default;

  // Samples `pairs` times: agent_now() before, cupti_now() between,
  // agent_now() after; keeps the pair with the smallest bracket. Returns
  // false (map unchanged) when cupti_now fails every time.
  bool Calibrate(const std::function<uint64_t()>& agent_now, const std::function<bool(uint64_t*)>& cupti_now,
                 int pairs = 7);

  // Agent ns for a CUPTI ns; 0 stays 0 (CUPTI's "no timestamp").
  uint64_t ToAgent(uint64_t cupti_ns) const {
    if (cupti_ns == 0) return 0;
    int64_t mapped = static_cast<int64_t>(cupti_ns) + offset_ns_;
    return mapped < 0 ? 0 : static_cast<uint64_t>(mapped);
  }

  int64_t offset_ns() const { return offset_ns_; }
  uint64_t uncertainty_ns() const { return uncertainty_ns_; }  // half the best bracket
  bool identity() const { return identity_; }

 private:
  int64_t offset_ns_ = 0;  // agent - cupti
  uint64_t uncertainty_ns_ = 0;
  bool identity_ = true;
};

}  // namespace prof::cupti
