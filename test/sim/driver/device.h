// State of each simulated device (SIM_DEVICE_COUNT of them, default 1):
// its streams and their timelines, its events, its memory ("device memory"
// is host memory, so copies really move bytes) and its primary context.
// Each device is thread-safe with its own mutex, never held while sleeping
// or while calling a hook, and never held while another device's is taken.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "../hub.h"

// The opaque driver handle types of cuda.h, defined here.
namespace sim {
class Device;
}

struct CUstream_st {
  uint32_t id;        // CUPTI stream id (per device, as per context in CUDA)
  bool non_blocking;  // CU_STREAM_NON_BLOCKING: no implicit sync with the legacy stream
  uint64_t tail_ns;   // sim clock: previous work on this stream ends (or a waited event fires)
  bool destroyed;     // kept after cuStreamDestroy: its pending work still occupies the device
  uint32_t deferred = 0;  // entries of Device's deferred queue on this stream (not yet placed)
  int priority = 0;       // as created, clamped to the device's range (kept, not modelled)
  sim::Device* device = nullptr;  // the device it belongs to (the one current at creation)
};
struct CUevent_st {
  uint32_t id;
  unsigned flags;
  bool recorded;
  uint64_t time_ns;  // sim clock: when the work before the record completes
  bool pending = false;  // recorded behind deferred work: time_ns not known yet
  sim::Device* device = nullptr;  // the device current at creation
};
// CUfunction and CUkernel handles both point to one of these.
struct CUfunc_st {
  std::string name;       // mangled device name, as registered
  std::string demangled;
  std::atomic<int> max_dynamic_shared{48 * 1024};  // cuFuncSetAttribute (kernel_model.h's default)
};
struct CUctx_st {
  uint32_t uid;
  int device = 0;  // ordinal of the device it belongs to
};
// A memory pool (driver_pool.cpp): its attributes and what it holds.
struct CUmemPoolHandle_st {
  uint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  uint64_t used_bytes = 0;       // live allocations from this pool
  uint64_t used_high_bytes = 0;  // high-water mark since last reset
  int access_flags = 3;          // CU_MEM_ACCESS_FLAGS_PROT_READWRITE for its own device
  int device = 0;                // the device its memory is on
  uint32_t peer_access = 0;      // bit d: device d may read and write it (cuMemPoolSetAccess)
};

namespace sim {

// Where an op landed on the device timeline.
struct Placement {
  uint64_t launch_ns;
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t stream_id;
  uint32_t device_id = 0;    // the stream's device
  uint32_t context_uid = 0;  // the context its work carries (Device::ContextUid)
};

inline constexpr uint32_t kLegacyStreamId = 7;  // the id CUPTI gives the legacy default stream (on every device)
inline constexpr int kMaxDevices = 16;           // SIM_DEVICE_COUNT's upper bound
// Stream priorities as an H100 reports them (cuCtxGetStreamPriorityRange):
// lower numbers are higher priorities.
inline constexpr int kLeastStreamPriority = 0;
inline constexpr int kGreatestStreamPriority = -5;

class Device {
 public:
  explicit Device(int ordinal);

  // The device of the calling thread's current context (device 0 while the
  // thread has made none current, as a new thread starts on device 0).
  static Device& Get();
  // Device `ordinal`, or nullptr outside [0, Count()).
  static Device* At(int ordinal);
  // SIM_DEVICE_COUNT (1..kMaxDevices), read once; 1 when unset or invalid.
  static int Count();
  // The device a handle belongs to. The default streams (NULL, legacy,
  // per-thread) are the current device's; a handle no device knows answers
  // the current device, whose IsValid then says no.
  static Device& Of(CUstream stream);
  static Device& Of(CUevent event);
  int ordinal() const { return ordinal_; }

  // ---- streams. Handles: NULL and CU_STREAM_LEGACY are the legacy default
  // stream, CU_STREAM_PER_THREAD the caller's per-thread default stream.
  CUstream CreateStream(bool non_blocking, int priority = 0);
  int StreamPriority(CUstream stream);  // 0 for the default streams
  bool DestroyStream(CUstream stream);
  bool IsValid(CUstream stream);
  uint32_t StreamId(CUstream stream);
  // The stream a handle names on this device (the legacy stream for NULL),
  // nullptr if it is none of this device's.
  CUstream_st* Resolve(CUstream stream);
  // Puts duration_ns of work on the stream, enqueued now. Legacy semantics:
  // work on the legacy stream waits for all blocking streams, and work on a
  // blocking stream waits for the legacy stream.
  Placement Enqueue(CUstream stream, uint64_t duration_ns);
  // End of everything enqueued on the stream (the device) so far. Both wait
  // (host blocked) while that work is deferred behind a collective kernel
  // whose peers have not all arrived (simhub_gate_*).
  uint64_t StreamDoneNs(CUstream stream);
  uint64_t DeviceDoneNs();
  // StreamDoneNs without waiting: false while the stream's work is deferred.
  bool StreamDoneNsNow(CUstream stream, uint64_t* done_ns);

  // ---- deferred work (collective kernels, README "Collectives")
  // A kernel, or a copy or memset the host does not wait for: placed now
  // when nothing it depends on is deferred and it is not gated, else queued
  // and placed (and reported with EmitOp) once what it waits for is known.
  // `op` comes filled by Place (correlation, context, graph) except the
  // times. `gate` (kernels only) may be null. `effect` (a copy's or
  // memset's bytes) runs when the op is placed, under this device's lock, so
  // its bytes move in stream order: after a collective ahead of it wrote its
  // result (README "Collectives", data).
  void EnqueueOp(CUstream stream, uint64_t duration_ns, const SimOp& op, const char* api, SimGate* gate,
                 std::function<void()> effect = {});
  // A gate's peers have all arrived: its kernel ends at max(start, release) + transfer.
  void ReleaseGate(SimGate* gate, uint64_t release_ns);

  // ---- events
  CUevent CreateEvent(unsigned flags);
  bool DestroyEvent(CUevent event);
  bool IsValid(CUevent event);
  void RecordEvent(CUevent event, CUstream stream);
  // Later work on the stream starts after the event's time (if recorded).
  void WaitEvent(CUstream stream, CUevent event);
  // Later work on the stream starts after time_ns (another device's event,
  // already settled); the host waits while the stream's own work is deferred.
  void WaitForTime(CUstream stream, uint64_t time_ns);
  struct EventState {
    bool valid;
    bool recorded;
    unsigned flags;
    uint32_t id;
    uint64_t time_ns;
  };
  EventState StateOf(CUevent event);  // a consistent snapshot; a pending event reads as recorded at UINT64_MAX
  EventState SettledStateOf(CUevent event);  // waits (host blocked) until a pending event's time is known

  // ---- memory. memory_kind is CUpti_ActivityMemoryKind. One address space
  // for all devices (unified addressing): an allocation is made on this
  // device, and the lookups (KindOf, DeviceOf, ...) see every device's.
  void* Allocate(size_t bytes, int memory_kind);  // nullptr: out of memory
  // Forgets an allocation made by Allocate (on any device); false if ptr is not one.
  bool Release(void* ptr, int expected_kind, size_t* bytes);
  // Registers memory mapped by cuMemMap (not owned: Forget does not free it).
  void Register(void* ptr, size_t bytes, int memory_kind);
  void Forget(void* ptr);
  static int KindOf(const void* ptr);  // PAGEABLE when not ours
  // The device whose memory holds ptr (device, managed and static memory),
  // -1 for host memory and memory the sim does not know.
  static int DeviceOf(const void* ptr);
  // Whether ptr is where an allocation of this memory kind starts.
  static bool IsAllocationStart(const void* ptr, int memory_kind);
  // Whether [ptr, ptr + bytes) lies inside one allocation the sim knows
  // (device, managed, pinned or registered memory).
  static bool Holds(const void* ptr, size_t bytes);
  size_t DeviceBytesInUse();  // this device's
  static constexpr size_t kTotalMemBytes = 85520809984ull;  // 79.6 GiB, as an H100 80GB reports

  // ---- contexts
  CUcontext RetainPrimaryContext();  // creates it on first use (resource hook fires)
  void ResetPrimaryContext();        // destroys it (resource hook fires)
  bool PrimaryActive();              // created and not reset
  CUcontext Primary() { return &context_; }
  // The calling thread's current context: one it made current (cuCtxCreate,
  // cuCtxSetCurrent, cuCtxPushCurrent; a device's primary through
  // cudaSetDevice), else device 0's primary once it exists, else nullptr.
  static CUcontext CurrentContext();
  // The context work on this device carries when the calling thread
  // enqueues it: the thread's current context if it is on this device, else
  // this device's primary.
  uint32_t ContextUid();
  // `context` current on this thread (nullptr: back to device 0's primary).
  static void SetThreadContext(CUctx_st* context);
  static CUctx_st* ThreadContext();
  // The device whose primary context `context` is, else nullptr.
  static Device* PrimaryOwner(CUcontext context);
  bool IsPrimary(CUcontext context) { return context == &context_; }

  // ---- peer access (cuCtxEnablePeerAccess): from this device's contexts to `peer`'s memory
  bool PeerAccessEnabled(int peer);
  void SetPeerAccess(int peer, bool enabled);

 private:
  // One entry of the deferred queue, in enqueue order.
  struct Deferred {
    enum Kind { kKernel, kRecord, kWait } kind;
    CUstream_st* stream;
    CUevent_st* event;     // kRecord, kWait
    uint64_t enqueue_ns;
    uint64_t duration_ns;  // kKernel: the transfer time when gated
    SimOp op;              // kKernel
    const char* api;       // kKernel: the launching call's name (truth log)
    SimGate* gate;         // kKernel: null when not gated
    bool started;          // gated kernel: start placed and announced
    std::function<void()> effect;  // kKernel: a copy's or memset's bytes, moved when placed
  };
  struct ReadyOp {
    SimOp op;
    const char* api;
    SimGate* gate;  // freed once the op is reported
  };
  struct Ready {  // what ProcessLocked settled, reported after unlocking
    std::vector<ReadyOp> ops;
    std::vector<std::pair<SimGate*, uint64_t>> starts;
  };
  uint32_t ContextUidLocked();
  // Its effective tail depends on a deferred entry. Not reports under way:
  // placement must not wait for those (an event recorded beside a report
  // would be deferred with nothing left to place it); only the waits for
  // work done do (StreamDoneNs, DeviceDoneNs, SettledStateOf).
  bool UnsettledLocked(CUstream_st* s);
  void ProcessLocked(Ready* ready);
  void Report(Ready& ready);  // outside the lock
  void WaitSettledLocked(std::unique_lock<std::mutex>& lock, CUstream_st* s);
  CUstream_st* ResolveLocked(CUstream stream);
  uint64_t BlockingTailLocked();  // latest tail over all blocking streams
  uint64_t EffectiveTailLocked(CUstream_st* s);
  // Destroyed streams whose work has ended leave streams_ (their tails are
  // folded into retired_*), so a program that creates and destroys a stream
  // per thread or per request does not make every device-wide query slower.
  void RetireLocked(CUstream_st* s);

  const int ordinal_;
  std::mutex mutex_;  // guards everything below
  std::condition_variable settled_;  // signalled when deferred entries are placed
  std::deque<Deferred> deferred_;
  // Reports under way (Report, outside the lock): ops placed but not yet in
  // the truth log or CUPTI. Waits for work to be done wait for these too: a
  // program that saw its work done may exit before they are written.
  int reporting_ = 0;
  CUstream_st legacy_{kLegacyStreamId, false, 0, false};
  std::unordered_set<CUstream_st*> streams_;  // created + per-thread streams (not legacy), retired ones left out
  std::vector<CUstream_st*> destroyed_;        // destroyed, still in streams_ (work may be pending)
  uint64_t retired_tail_ns_ = 0;               // latest tail of the retired streams
  uint64_t retired_blocking_tail_ns_ = 0;      // the same over the blocking ones
  std::unordered_set<CUevent_st*> events_;
  size_t device_bytes_ = 0;
  uint32_t next_stream_id_ = 13;
  uint32_t next_event_id_ = 1;
  CUctx_st context_;
  bool context_alive_ = false;
  uint32_t peers_ = 0;  // bit d: peer access to device d enabled
};

// Ops enqueued on this thread belong to this executable graph and node
// (graph launch); 0, 0: none.
void SetGraphContext(uint32_t graph_id, uint64_t node_id);

// Fills what an op gets when it is enqueued: the outermost API call's
// correlation id, the current context, where the timeline put it, and the
// graph node running it if any.
void Place(SimOp* op, const Placement& at);

// cuCtxSetCurrent: a created context (driver_ctx.cpp) becomes the calling
// thread's current one; the primary or NULL makes the primary current again.
CUresult SetCurrent(CUcontext context);

// The gate armed on this thread for its next kernel launch (simhub_gate_arm), taken.
SimGate* TakeArmedGate();

// Sleeps until the sim clock has passed sim_ns.
void WaitUntilNs(uint64_t sim_ns);

// Later work on the stream waits for the event's last record, the two on
// the same device or not (driver_sync.cpp).
void WaitOnEvent(CUstream stream, CUevent event);

}  // namespace sim
