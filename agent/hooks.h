// What the collectors (interpose, nvtx) call into the agent with. Each hook
// finds the installed Runtime and does nothing when there is none, so a
// wrapper running before the agent starts, after it is disabled, or in a
// benchmark without an agent is safe.
#pragma once

#include <cstdint>

#include "agent/api_ids.h"
#include "agent/events.h"

namespace prof::hooks {

// The calling thread's host event (recording only).
void RecordEvent(const HostEvent& event);

// The calling thread's Python stack id (recording only); 0 when none.
uint32_t CaptureStack();

// Step markers. Call-start markers come before the call's start_ns is taken,
// so the marking call belongs to the step it starts.
void OnCallStart(ApiId id, uint32_t name_id);
// Sync markers end a step when the synchronize returns.
void OnSyncReturn(ApiId id);
// NVTX range push/start with an interned name.
void OnNvtxRangeStart(uint32_t name_id);
// prof_step().
void ManualStep();

void TrackAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid, uint64_t ts_ns,
                bool keep_sample);
void TrackFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample);

// NVTX ranges (recording only).
void RecordNvtxRange(const NvtxRange& range);

// The memory kind an allocator call produces (kDevice for non-allocators).
MemKind MemKindOf(ApiId id);

}  // namespace prof::hooks
