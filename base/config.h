// The agent's configuration, parsed once at start from PROF_* variables (and
// PROF_CONFIG_FILE; the environment wins). Parsing lives in config.cpp; this
// struct is what every other part reads. Defaults are DESIGN.md's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/api_ids.h"

namespace prof {

// kAuto: agent/steps/auto_step.h finds the loop and then counts steps like one
// of the explicit sources would.
enum class StepSource : uint8_t { kTime, kKernel, kNvtx, kApi, kSync, kManual, kAuto };

// PROF_RANGE: windows from ranges the program marks (agent/steps/capture_range.h).
// kNone: windows follow the PROF_STEP schedule.
enum class RangeKind : uint8_t { kNone, kProfilerApi, kNvtx };

// PROF_TORCH_OPS: in a PyTorch process, PyTorch's own operator ranges
// (collectors/python/torch_ops.h) while a window warms up or records: names
// (the default), with their input shapes too (PyTorch's string formatting
// of the shapes triples the cost: docs/performance.md), or not at all.
enum class TorchOps : uint8_t { kOff, kNames, kShapes };

// Bits of PROF_ACTIVITIES.
enum ActivityBits : uint32_t {
  kActKernel = 1u << 0,
  kActMemcpy = 1u << 1,
  kActMemset = 1u << 2,
  kActRuntime = 1u << 3,
  kActDriver = 1u << 4,
  kActSync = 1u << 5,
  kActMemory = 1u << 6,
  kActNvtx = 1u << 7,
  kActOverhead = 1u << 8,
};
inline constexpr uint32_t kDefaultActivities =
    kActKernel | kActMemcpy | kActMemset | kActRuntime | kActSync | kActMemory | kActNvtx;

struct Config {
  bool enabled = true;
  std::string output_dir = "./prof-traces";

  StepSource step_source = StepSource::kAuto;
  uint64_t step_time_ns = 100'000'000;  // time:<d>, and auto's fallback
  uint64_t auto_timeout_ns = 60'000'000'000;  // PROF_AUTO_TIMEOUT: auto gives up after this much CUDA activity
  std::string step_pattern;             // kernel:/nvtx: regex source
  ApiId step_api = ApiId::kCount;       // api:<cudaFunction>

  // PROF_RANGE: each range is one window (PROF_REPEAT caps how many; the
  // skip_first/wait/warmup/active numbers do not apply), steps inside it
  // delimited by PROF_STEP.
  RangeKind range_kind = RangeKind::kNone;
  std::string range_pattern;  // nvtx:<regex> source

  // Defaults of the PROF_* variables: data, not logic.
  // torch.profiler.schedule, in steps; repeat == 0 repeats forever.
  uint64_t skip_first = 0;
  uint64_t wait = 30;
  uint64_t warmup = 2;
  uint64_t active = 5;
  uint64_t repeat = 1;

  uint32_t activities = kDefaultActivities;
  bool write_chrome = true;
  bool write_summary = true;
  bool write_html = true;     // <stem>.report.html
  bool write_stacks = false;  // <stem>.stacks.txt
  bool gzip = false;
  uint64_t buffer_bytes = 256ull << 20;  // PROF_BUFFER_MB
  std::string trigger_file;              // empty: schedule starts at once
  std::string name;                      // empty: <host>_<process>_<pid>
  int rank = -1;                         // -1: not a multi-process job
  int world_size = 1;                    // from WORLD_SIZE-like launcher variables
  std::string cupti_lib;                 // empty: search
  uint64_t flush_timeout_ns = 3'000'000'000;  // wait for a window's late device records
  bool python_stacks = true;              // PROF_PYTHON: auto (on in CPython processes) or 0
  int python_depth = 64;                  // PROF_PYTHON_DEPTH: frames kept per stack, 1..256
  std::string python_user;                // PROF_PYTHON_USER: comma list of path prefixes of user code
  TorchOps torch_ops = TorchOps::kNames;  // PROF_TORCH_OPS: PyTorch's operator ranges while recording
  bool torch_modules = true;              // PROF_TORCH_OPS=...,modules (the default): module paths
  bool torch_memory = true;               // PROF_TORCH_MEMORY: PyTorch's tensor allocations while recording

  // PROF_* keys as applied (after defaults and fixes), for the trace metadata.
  std::vector<std::pair<std::string, std::string>> Describe() const;
};

}  // namespace prof
