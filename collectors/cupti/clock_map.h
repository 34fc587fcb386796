// CUPTI time -> agent time (base/clock.h). Preferred: CUPTI is handed a
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

  // Agent ns for a CUPTI ns; 0 stays 0 (CUPTI's "no timestamp"). Monotonic
  // and overflow-free for any input: a time before the agent's 0 maps to 0,
  // one past 2^64 - 1 to 2^64 - 1.
  uint64_t ToAgent(uint64_t cupti_ns) const {
    if (cupti_ns == 0) return 0;
    if (offset_ns_ >= 0) {
      uint64_t mapped = cupti_ns + static_cast<uint64_t>(offset_ns_);
      return mapped < cupti_ns ? ~uint64_t{0} : mapped;
    }
    uint64_t behind = 0 - static_cast<uint64_t>(offset_ns_);  // |offset|, also for INT64_MIN
    return cupti_ns > behind ? cupti_ns - behind : 0;
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
