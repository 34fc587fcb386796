#include "test/bench/harness.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace prof::bench {
namespace {

uint64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Nearest-rank percentile of sorted samples.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = p * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = static_cast<size_t>(std::ceil(rank));
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

Stats Summarize(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.median = Percentile(samples, 0.5);
  s.p10 = Percentile(samples, 0.1);
  s.p90 = Percentile(samples, 0.9);
  return s;
}

uint64_t WallNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

Samples Interleave(const std::vector<Variant>& variants, int rounds, uint64_t iterations) {
  Samples samples(variants.size());
  const size_t n = variants.size();
  for (int round = -1; round < rounds; ++round) {  // round -1: warm-up, not kept
    for (size_t k = 0; k < n; ++k) {
      size_t v = (k + static_cast<size_t>(round < 0 ? 0 : round)) % n;
      const Variant& variant = variants[v];
      if (variant.reset) variant.reset();
      // CPU time of this thread: time spent preempted by the other jobs on
      // a shared machine is not counted against either variant.
      uint64_t t0 = ThreadCpuNs();
      variant.run(iterations);
      uint64_t t1 = ThreadCpuNs();
      if (round >= 0) samples[v].push_back(static_cast<double>(t1 - t0) / static_cast<double>(iterations));
    }
  }
  return samples;
}

Stats Difference(const Samples& s, size_t a, size_t b) {
  std::vector<double> d;
  for (size_t r = 0; r < s[a].size() && r < s[b].size(); ++r) d.push_back(s[b][r] - s[a][r]);
  return Summarize(std::move(d));
}

Stats Ratio(const Samples& s, size_t a, size_t b) {
  std::vector<double> d;
  for (size_t r = 0; r < s[a].size() && r < s[b].size(); ++r) {
    if (s[a][r] > 0) d.push_back(s[b][r] / s[a][r]);
  }
  return Summarize(std::move(d));
}

int PinToOneCpu(bool pin) {
  if (!pin) return -1;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpu = c;
  }
  if (cpu < 0) return -1;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0 ? cpu : -1;
}

void EmitFigure(const std::string& id, const Stats& stats, const std::string& unit, const std::string& note) {
  std::printf("{\"figure\":%s,\"value\":%.6g,\"p10\":%.6g,\"p90\":%.6g,\"n\":%zu,\"unit\":%s,\"note\":%s}\n",
              JsonString(id).c_str(), stats.median, stats.p10, stats.p90, stats.n, JsonString(unit).c_str(),
              JsonString(note).c_str());
  std::fflush(stdout);
}

void EmitValue(const std::string& id, double value, const std::string& unit, const std::string& note) {
  Stats s;
  s.median = s.p10 = s.p90 = value;
  s.n = 1;
  EmitFigure(id, s, unit, note);
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--smoke") {
      o.smoke = true;
    } else if (arg == "--pin") {
      o.pin = true;
    } else if (arg == "--rounds" && i + 1 < argc) {
      o.rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--pin] [--rounds N]\n", argv[0]);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace prof::bench
