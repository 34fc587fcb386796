// The live agent of this process: configuration and the parts that hold
// state. Created once by agent/agent_start.cpp (or by a test or benchmark)
// and installed for the collectors to find through agent/hooks.h. It is
// never destroyed: wrappers, the writer and the exit path may run until the
// very end of the process.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>

#include "agent/alloc_tracker.h"
#include "agent/auto_step.h"
#include "agent/collective_store.h"
#include "agent/config.h"
#include "agent/device_collector.h"
#include "agent/event_buffers.h"
#include "agent/nvtx_store.h"
#include "agent/session.h"
#include "agent/stack_source.h"
#include "agent/writer.h"

namespace prof {

// Whether an interned name (kernel or NVTX range) is a step marker, decided
// once per name: the regex runs off the per-call path.
class MarkerMatcher {
 public:
  MarkerMatcher() = default;
  // demangle: kernel names are matched in demangled form.
  void Configure(const std::string& pattern, bool demangle);
  bool Matches(uint32_t name_id);
  bool MatchesText(std::string_view name);  // uncached
  // The cached answer for name_id was no (a cache hit of the current id
  // epoch); false when it matched or is not cached. Lock-free.
  bool KnownNoMatch(uint32_t name_id) const;
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  // Direct-mapped by id, tagged with it: (id << 2) | state, state 1 no, 2 yes
  // (0: empty). NVTX names get fresh ids over time (agent/strings.h), so any
  // id may be cached; emptied when the table's ids start over (id_epoch).
  static constexpr uint32_t kCached = 1u << 18;
  std::optional<std::regex> regex_;
  bool demangle_ = false;
  std::mutex mu_;  // regex evaluation (std::regex is not reentrant-safe to share freely)
  std::unique_ptr<std::atomic<uint32_t>[]> cache_;
  std::atomic<uint32_t> cache_epoch_{0};
};

struct Runtime {
  Config config;
  EventBuffers buffers;
  AllocTracker allocs;
  NvtxStore nvtx;
  CollectiveStore collectives;  // NCCL calls and communicators (collectors/nccl)
  MarkerMatcher markers;
  MarkerMatcher range_markers;  // PROF_RANGE=nvtx:<regex>
  std::unique_ptr<DeviceCollector> collector;
  std::unique_ptr<StackSource> python;  // Python stacks (collectors/python); may be null
  std::unique_ptr<WriterThread> writer;
  std::unique_ptr<Session> session;
  std::unique_ptr<AutoStep> auto_step;  // PROF_STEP=auto only
  // Collective and point-to-point operations this process launched
  // (hooks::NoteCollective): multi-rank jobs number their steps by it.
  std::atomic<uint64_t> collectives_launched{0};
};

// nullptr until a runtime is installed (or when the agent is disabled).
Runtime* CurrentRuntime();
void InstallRuntime(Runtime* runtime);

}  // namespace prof
