// The live agent of this process: configuration and the parts that hold
// state. Created once by agent/process/agent_start.cpp (or by a test or benchmark)
// and installed for the collectors to find through base/agent_hooks.h. It is
// never destroyed: wrappers, the writer and the exit path may run until the
// very end of the process.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "base/config.h"
#include "agent/session/alloc_tracker.h"
#include "agent/session/collective_store.h"
#include "base/device_collector.h"
#include "agent/session/event_buffers.h"
#include "agent/session/nvtx_store.h"
#include "agent/session/session.h"
#include "base/stack_source.h"
#include "base/tensor_memory_source.h"
#include "agent/session/writer.h"
#include "agent/steps/auto_step.h"
#include "agent/steps/marker_matcher.h"

namespace prof {

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
  std::unique_ptr<TensorMemorySource> tensor_memory;  // PyTorch's tensor memory; null when off
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
