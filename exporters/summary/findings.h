// Findings: what is wrong with a window, each with the numbers that
// triggered it. The thresholds are documented in docs/findings.md (and
// README.md, "Reading the summary"); change them together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/window.h"

namespace prof {

struct Summary;
class WindowIndex;
class CompactWindow;

// Thresholds (see README.md, "Reading the summary").
inline constexpr double kOverheadBusyPercent = 50.0;     // GPU busy below this ...
inline constexpr double kShortKernelNs = 20'000;         // ... and median kernel below 20 µs ...
inline constexpr double kLaunchWaitPercent = 50.0;       // ... and at least half the kernels waited for their launch,
inline constexpr double kLaunchWaitShortIdlePercent = 50.0;  // in waits (each < kIdleGapMinNs) of half the GPU's idle
                                                             // in stretches under kIdleGapMinNs ...
inline constexpr double kLaunchWaitIdlePercent = 10.0;   // ... and a tenth of all its idle
inline constexpr double kComputeBusyPercent = 80.0;      // GPU busy at or above this
inline constexpr double kCommunicationPercent = 20.0;    // GPU in collectives, nothing overlapping, at or above this
inline constexpr uint64_t kIdleGapMinNs = 1'000'000;     // idle gaps of 1 ms or more ...
inline constexpr double kIdleGapWindowPercent = 10.0;    // ... adding up to 10% of the window
inline constexpr double kLaunchLatencyNs = 50'000;       // median launch->GPU start above 50 µs ...
inline constexpr double kLaunchLatencyBusyPercent = 50.0;  // ... while the GPU is mostly idle
inline constexpr uint64_t kMemorySpikeMinBytes = 1 << 20;  // one allocation site live at the tensor peak with 1 MiB ...
inline constexpr double kMemorySpikeShareOfAdded = 0.5;    // ... half of what the window added there ...
inline constexpr double kMemorySpikeShareOfPeak = 0.25;    // ... and a quarter of the peak
inline constexpr double kAutogradCpuOverGpu = 3.0;   // autograd's threads' operator time at least 3x their work's GPU time ...
inline constexpr double kAutogradWindowShare = 0.1;  // ... and a tenth of the window
inline constexpr double kElementwisePerStep = 20.0;  // short elementwise kernels (< kShortKernelNs) per step from one
                                                     // module (or Python function) ...
inline constexpr double kElementwiseShareOfKernels = 0.25;  // ... and a quarter of the window's kernels

// WindowMeta::cupti_mode of a window read back from a trace libprof did not
// write (torch.profiler's): what CUPTI did there is not known.
inline constexpr const char* kNotLibprofCuptiMode = "unknown (not a libprof trace)";

struct Finding {
  std::string id;        // stable: "overhead-bound", "sync-in-step", ...
  std::string title;     // one line saying what is wrong
  std::string evidence;  // the numbers behind it
  std::string advice;    // what to try
};

std::vector<Finding> ComputeFindings(const Window& window, const Summary& summary);
// The same with the window's index already built (ComputeSummary shares its
// own: building one is a pass over every event).
std::vector<Finding> ComputeFindings(const Window& window, const Summary& summary, const WindowIndex& index);
std::vector<Finding> ComputeFindings(const CompactWindow& window, const Summary& summary, const WindowIndex& index);

}  // namespace prof
