// A small benchmark harness for a shared, noisy machine.
//
// Every figure is a difference or a ratio against a baseline measured in the
// same process, interleaved with it: round r runs variant A, then B, then C,
// then round r+1 (the order rotates each round), so a compile job that starts
// on the other core slows every variant alike. Each round gives one sample
// per variant; the figure is the median over rounds of the per-round
// difference (or ratio), with the 10th-90th percentile as its spread.
//
// Results are printed as one JSON object per line ("figure" lines), which
// test/bench/report.py turns into the table scripts/bench.sh prints.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace prof::bench {

// Plain result fields: data, not logic.
// Median and spread of a set of samples.
struct Stats {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
  size_t n = 0;
};
Stats Summarize(std::vector<double> samples);

// One variant of an interleaved measurement: run(iterations) does the work
// and returns nothing; its time is taken around the call.
struct Variant {
  std::string name;
  std::function<void(uint64_t iterations)> run;
  // Optional, untimed, before each timed run (e.g. empty the buffers).
  std::function<void()> reset;
};

// samples[v][r]: nanoseconds per iteration of variant v in round r.
using Samples = std::vector<std::vector<double>>;

// Runs `rounds` rounds of every variant (rotating order), each run doing
// `iterations` iterations, after one untimed warm-up round. Runs are timed
// on the thread's CPU clock, so preemption is not counted; keep runs short
// (well under a scheduler slice, ~1 ms) and rounds many, so most runs are
// not disturbed at all and the median ignores the ones that are.
Samples Interleave(const std::vector<Variant>& variants, int rounds, uint64_t iterations);

// Per-round b - a, and per-round b / a.
Stats Difference(const Samples& s, size_t a, size_t b);
Stats Ratio(const Samples& s, size_t a, size_t b);

// Nanoseconds on CLOCK_MONOTONIC / on this thread's CPU clock.
uint64_t WallNs();
uint64_t ThreadCpuNs();

// Pins the calling thread to one CPU (the last one) when `pin` is true.
// Returns the CPU or -1.
int PinToOneCpu(bool pin);

// Prints one figure line:
// {"figure":id,"value":v,"p10":..,"p90":..,"n":..,"unit":u,"note":...}
void EmitFigure(const std::string& id, const Stats& stats, const std::string& unit, const std::string& note = "");
// A plain number (no spread).
void EmitValue(const std::string& id, double value, const std::string& unit, const std::string& note = "");

// Command line shared by the bench binaries: --smoke (tiny sizes, for CI),
// --rounds N, --pin.
struct Options {
  bool smoke = false;
  bool pin = false;
  int rounds = 0;  // 0: the binary's default
};
Options ParseOptions(int argc, char** argv);

// Keeps the compiler from dropping a value.
template <typename T>
inline void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

}  // namespace prof::bench
