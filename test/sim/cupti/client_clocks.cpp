// Per-subscriber clocks of the multi-subscriber release: CUPTI 13.2's
// CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK ("Get or set the timestamp callback
// function (for the specified subscriber) ... that CUPTI will use instead of
// its default CPU timer"). The process-wide client keeps the hub's reported
// clock (cuptiActivityRegisterTimestampCallback, the truth log's *_rep_ns);
// a subscriber's own client reports on its own callback's clock if it set
// one, else on CUPTI's default timer (the sim clock).
//
// The map from the sim clock to a client's is the hub's method in small
// (../README.md "Clocks"): reported(t) = knot_client + (t - knot_sim) * rate,
// the knot the tightest of three samples of the callback between two reads
// of the sim clock, the rate measured from the first sample to the knot
// (first from two samples 50 us apart at registration; 1 while the sim clock
// has not moved, as a test's hand-moved clock may not), new knots taken at
// API entry once the last is older than min(10 ms, its age since the first).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "internal.h"

namespace simcupti {
namespace {

struct Sample {
  uint64_t sim_ns = 0;
  uint64_t client = 0;
};

struct ClientClock {
  std::mutex mu;
  CUpti_TimestampCallbackFunc source = nullptr;  // under mu; also in sources[]
  Sample first;                                  // under mu
  Sample knot;                                   // under mu
  long double rate = 1.0L;                       // client units per sim ns, under mu
};

std::array<ClientClock, kMaxClients>& Clocks() {
  static auto* clocks = new std::array<ClientClock, kMaxClients>();  // never destroyed: used at exit
  return *clocks;
}
// Bit c: client c has its own clock. The API-entry path's only load while none has.
std::atomic<ClientMask> g_own_clocks{0};

constexpr uint64_t kMaxKnotAgeNs = 10000000;  // 10 ms

// The tightest of three (sim, client, sim) readings, dated at the middle.
Sample Take(CUpti_TimestampCallbackFunc source) {
  Sample best;
  uint64_t best_width = ~uint64_t{0};
  for (int i = 0; i < 3; ++i) {
    const uint64_t before = simhub_now_ns();
    const uint64_t client = source();
    const uint64_t after = simhub_now_ns();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, client};
    }
  }
  return best;
}

// Under clock.mu.
void Remeasure(ClientClock& clock, const Sample& knot) {
  clock.knot = knot;
  if (knot.sim_ns > clock.first.sim_ns) {
    clock.rate = static_cast<long double>(static_cast<int64_t>(knot.client - clock.first.client)) /
                 static_cast<long double>(knot.sim_ns - clock.first.sim_ns);
  }
}

}  // namespace

void SetClientClock(int client, CUpti_TimestampCallbackFunc source) {
  ClientClock& clock = Clocks()[static_cast<size_t>(client)];
  const ClientMask bit = ClientMask{1} << client;
  std::lock_guard<std::mutex> lock(clock.mu);
  clock.source = source;
  clock.rate = 1.0L;
  if (source == nullptr) {
    g_own_clocks.fetch_and(~bit);
    return;
  }
  clock.first = Take(source);
  clock.knot = clock.first;
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  Remeasure(clock, Take(source));
  g_own_clocks.fetch_or(bit);
}

CUpti_TimestampCallbackFunc ClientClockSource(int client) {
  ClientClock& clock = Clocks()[static_cast<size_t>(client)];
  std::lock_guard<std::mutex> lock(clock.mu);
  return clock.source;
}

uint64_t ReportedFor(int client, uint64_t sim_ns) {
  if (sim_ns == 0) return 0;
  if (client == kProcessClient) return simhub_to_reported_ns(sim_ns);
  if ((g_own_clocks.load(std::memory_order_acquire) >> client & 1) == 0) return sim_ns;  // CUPTI's default timer
  ClientClock& clock = Clocks()[static_cast<size_t>(client)];
  std::lock_guard<std::mutex> lock(clock.mu);
  const long double offset = static_cast<long double>(static_cast<int64_t>(sim_ns - clock.knot.sim_ns)) * clock.rate;
  return clock.knot.client + static_cast<int64_t>(offset);
}

void SampleClientClocks() {
  const ClientMask own = g_own_clocks.load(std::memory_order_relaxed);
  if (own == 0) return;
  const uint64_t now = simhub_now_ns();
  for (int client = 1; client < kMaxClients; ++client) {
    if ((own >> client & 1) == 0) continue;
    ClientClock& clock = Clocks()[static_cast<size_t>(client)];
    std::unique_lock<std::mutex> lock(clock.mu, std::try_to_lock);
    if (!lock.owns_lock() || clock.source == nullptr) continue;  // someone else is measuring it
    // Due once the knot is older than the span it was measured over (so
    // the baseline doubles), and at least every 10 ms.
    const uint64_t age = now - clock.knot.sim_ns;
    const uint64_t span = clock.knot.sim_ns - clock.first.sim_ns;
    if (age < std::min(kMaxKnotAgeNs, std::max<uint64_t>(span, 1))) continue;
    Remeasure(clock, Take(clock.source));
  }
}

void ResetClientClocks(int client) {
  if (client == kProcessClient) return;  // the hub's (cuptiFinalize resets it)
  SetClientClock(client, nullptr);
}

}  // namespace simcupti
