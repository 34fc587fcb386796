// What the collectors (interpose, nccl, nvtx, cupti) call into the agent
// with: declared here, on the ground floor, and defined by the agent
// (agent/runtime/hooks.cpp), so no collector includes the agent. Direct
// calls, not virtual ones: the wrappers' hot path pays nothing for the seam.
// Each hook finds the installed Runtime and does nothing when there is none,
// so a wrapper running before the agent starts, after it is disabled, or in
// a benchmark without an agent is safe.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/kernel_registry.h"
#include "model/api_ids.h"
#include "model/events.h"
#include "model/observed_event.h"

namespace prof {

// Set by an interposed wrapper while it feeds the marker path for the call
// it is making (from before the call-enter event to after the call-return
// event): the CUPTI callbacks of that call must not feed it again.
inline thread_local bool tls_wrapper_feeds_markers = false;

namespace internal {
// PROF_STEP=api:<fn>: 1 for <fn> and its _ptsz/_ptds flavours, by ApiId.
// Filled (ArmApiMarker) before kHotApiMarker is set; relaxed like the hot bits.
inline std::atomic<uint8_t> g_api_marker_calls[kApiCount] = {};
}  // namespace internal

// Whether a wrapper must feed the marker path for this call under
// kHotApiMarker (PROF_STEP=api:<fn>).
inline bool IsArmedApiMarker(ApiId id) {
  return internal::g_api_marker_calls[static_cast<size_t>(id)].load(std::memory_order_relaxed) != 0;
}

}  // namespace prof

namespace prof::hooks {

// The calling thread's host event (recording only).
void RecordEvent(const HostEvent& event);

// The calling thread's Python stack id (recording only); 0 when none.
// now_ns: the call's time; launch: it launches a kernel.
uint32_t CaptureStack(uint64_t now_ns, bool launch);

// The marker path (the agent's steps decide): every call, NVTX range and
// prof_step() that may end a step, from whichever feed saw it. Call-enter
// events come before the call's start time is taken, so the marking call
// belongs to the step it starts; sync markers end a step when it returns.
// Returns true when the event was a step marker (a step ended at it).
bool Observe(const ObservedEvent& event);

// PROF_STEP=kernel:<regex> (no PROF_RANGE): false when a launch of this
// interned kernel name is already known not to match, so Observe could not
// mark at it (the matcher's cache answered no before). True otherwise,
// including names not matched yet: those go through Observe, which caches
// the answer. A wrapper skips Observe on false.
bool LaunchMayMark(uint32_t name_id);

// PROF_STEP=kernel:<regex> alone (no PROF_RANGE): whether a launch of this
// interned kernel name marks a step, for the kernel registry to keep beside
// the name (KernelRegistry::SetVerdict); kUnknown under any other
// configuration, or for a name that is not a kernel's (0, dropped).
KernelRegistry::Verdict LaunchVerdict(uint32_t name_id);

// Whether NVTX range ends matter on the marker path: PROF_RANGE=nvtx only.
bool RangeEndsWanted();

// A CUDA call entered while recording, seen by CUPTI's callback (calls a
// wrapper records are noted by RecordEvent): PROF_RANGE's step edges
// (Session::NoteRangeCall). Cheap: a load and a branch once noted.
void NoteCall();

void TrackAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid, uint64_t ts_ns,
                bool keep_sample);
void TrackFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample);

// One collective or point-to-point operation launched (each operation of
// an NCCL group counts): a relaxed increment, called once per operation
// by whichever path saw it (the NCCL wrappers or the profiler plugin,
// never both). Multi-rank jobs number their steps by this count
// (Session::AnchorToCollectives).
void NoteCollective();

// Whether an agent runs in this process (not disabled, not idle): NCCL's
// profiler plugin takes no events otherwise.
bool AgentRunning();

// NCCL (collectors/nccl): a collective or point-to-point call (recording
// only), a communicator this process joined, the NCCL version.
void RecordCollective(const CollectiveCall& call);
void RegisterComm(const CommInfo& comm);
void SetNcclVersion(int version);

// CUDA's driver initialized (an interposed cuInit returned): a step source
// that counts calls watches them from now on (Session::WatchCallsIfCuda).
void NoteCudaInitialized();

// NVTX ranges (recording only).
void RecordNvtxRange(const NvtxRange& range);

// The memory kind an allocator call produces (kDevice for non-allocators).
MemKind MemKindOf(ApiId id);

}  // namespace prof::hooks
