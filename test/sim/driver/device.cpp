#include "device.h"

#include <cupti_activity.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "../hub_internal.h"
#include "timing.h"

namespace sim {
namespace {

// The calling thread's per-thread default stream on each device.
thread_local CUstream_st* t_per_thread_stream[kMaxDevices] = {};
// The context the thread made current (nullptr: device 0's primary).
thread_local CUctx_st* t_context = nullptr;

constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee

size_t Rounded(size_t bytes) { return std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment); }

// Memory of every device (one address space, as with unified addressing).
// Leaf lock: never held while a device's mutex is taken.
struct Allocation {
  size_t bytes;
  int kind;
  bool owned;
  int device;  // -1: host memory
};
struct MemoryMap {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> by_start;
};
MemoryMap& Memory() {
  static MemoryMap* memory = new MemoryMap();  // never destroyed: atexit handlers still free
  return *memory;
}

bool OnDeviceKind(int kind) {
  return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC || kind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
}

// Primary context ids come from one counter over all devices (created
// contexts count from 1000, driver_ctx.cpp).
std::atomic<uint32_t> g_next_primary_uid{1};

int ReadDeviceCount() {
  const char* value = simhub_fault("DEVICE_COUNT");
  if (!value) return 1;
  char* end = nullptr;
  const long n = std::strtol(value, &end, 10);
  if (*end != '\0' || n < 1 || n > kMaxDevices) {
    std::fprintf(stderr, "sim: SIM_DEVICE_COUNT=%s is not a count in 1..%d; using 1\n", value, kMaxDevices);
    return 1;
  }
  return static_cast<int>(n);
}

struct Devices {
  int count;
  Device* at[kMaxDevices];
};
Devices& All() {
  // Never destroyed: atexit handlers still use them.
  static Devices* devices = [] {
    auto* d = new Devices{ReadDeviceCount(), {}};
    for (int i = 0; i < d->count; ++i) d->at[i] = new Device(i);
    return d;
  }();
  return *devices;
}

}  // namespace

thread_local uint32_t t_graph_id = 0;
thread_local uint64_t t_graph_node_id = 0;

void SetGraphContext(uint32_t graph_id, uint64_t node_id) {
  t_graph_id = graph_id;
  t_graph_node_id = node_id;
}

}  // namespace sim

struct SimGate {
  uint64_t transfer_ns;
  SimGateStart on_start;
  void* arg;
  bool released = false;  // guarded by the Device's mutex
  uint64_t release_ns = 0;
  sim::Device* device = nullptr;  // set when its kernel is enqueued (before on_start)
};

namespace sim {

void Place(SimOp* op, const Placement& at) {
  if (t_graph_id) {
    op->graph_id = t_graph_id;
    op->graph_node_id = t_graph_node_id;
  }
  op->correlation_id = OuterCorrelationId();
  op->device_id = at.device_id;
  op->context_id = at.context_uid ? at.context_uid : Device::Get().ContextUid();
  op->stream_id = at.stream_id;
  op->launch_ns = at.launch_ns;
  op->start_ns = at.start_ns;
  op->end_ns = at.end_ns;
}

Device::Device(int ordinal) : ordinal_(ordinal) {
  legacy_.device = this;
  context_.uid = 0;
  context_.device = ordinal;
}

int Device::Count() { return All().count; }

Device* Device::At(int ordinal) {
  Devices& d = All();
  return ordinal >= 0 && ordinal < d.count ? d.at[ordinal] : nullptr;
}

Device& Device::Get() {
  Devices& d = All();
  const int ordinal = t_context ? t_context->device : 0;
  return *d.at[ordinal >= 0 && ordinal < d.count ? ordinal : 0];
}

Device& Device::Of(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return Get();
  Devices& d = All();
  for (int i = 0; i < d.count; ++i) {
    Device* device = d.at[i];
    std::lock_guard<std::mutex> lock(device->mutex_);
    if (device->streams_.count(stream)) return *device;
  }
  return Get();
}

// Of(CUstream)'s search, over each device's events.
Device& Device::Of(CUevent event) {
  Devices& d = All();
  for (int i = 0; i < d.count; ++i) {
    Device* device = d.at[i];
    std::lock_guard<std::mutex> lock(device->mutex_);
    if (device->events_.count(event)) return *device;
  }
  return Get();
}

CUstream_st* Device::ResolveLocked(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY) return &legacy_;
  if (stream == CU_STREAM_PER_THREAD) {
    CUstream_st*& mine = t_per_thread_stream[ordinal_];
    if (!mine) {
      // The per-thread default stream synchronises with the legacy stream like
      // any blocking stream, but not with other streams.
      mine = new CUstream_st{next_stream_id_++, false, 0, false};
      mine->device = this;
      streams_.insert(mine);
    }
    return mine;
  }
  return (streams_.count(stream) && !stream->destroyed) ? stream : nullptr;
}

uint64_t Device::BlockingTailLocked() {
  uint64_t tail = std::max(legacy_.tail_ns, retired_blocking_tail_ns_);
  for (CUstream_st* s : streams_) {
    if (!s->non_blocking) tail = std::max(tail, s->tail_ns);
  }
  return tail;
}

uint64_t Device::EffectiveTailLocked(CUstream_st* s) {
  if (s == &legacy_) return BlockingTailLocked();
  if (s->non_blocking) return s->tail_ns;
  return std::max(s->tail_ns, legacy_.tail_ns);
}

CUstream Device::CreateStream(bool non_blocking, int priority) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* s = new CUstream_st{next_stream_id_++, non_blocking, 0, false};
  s->priority = std::clamp(priority, kGreatestStreamPriority, kLeastStreamPriority);
  s->device = this;
  streams_.insert(s);
  return s;
}

int Device::StreamPriority(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return 0;
  return streams_.count(stream) ? stream->priority : 0;
}

bool Device::DestroyStream(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return false;
  if (!streams_.count(stream) || stream->destroyed) return false;
  // Kept (not deleted): its pending work still counts for device synchronize.
  stream->destroyed = true;
  destroyed_.push_back(stream);
  // Those whose work has ended leave the set: the device-wide scans stay as
  // long as the streams alive, not all streams ever created.
  const uint64_t now = simhub_now_ns();
  std::erase_if(destroyed_, [&](CUstream_st* s) {
    if (s->deferred != 0 || s->tail_ns > now) return false;
    RetireLocked(s);
    return true;
  });
  return true;
}

void Device::RetireLocked(CUstream_st* s) {
  retired_tail_ns_ = std::max(retired_tail_ns_, s->tail_ns);
  if (!s->non_blocking) retired_blocking_tail_ns_ = std::max(retired_blocking_tail_ns_, s->tail_ns);
  // Not freed: the handle stays invalid (a new stream never reuses its address).
  streams_.erase(s);
}

bool Device::IsValid(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ResolveLocked(stream) != nullptr;
}

CUstream_st* Device::Resolve(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ResolveLocked(stream);
}

uint32_t Device::StreamId(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  return s ? s->id : 0;
}

Placement Device::Enqueue(CUstream stream, uint64_t duration_ns) {
  std::unique_lock<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s) s = &legacy_;
  // Behind a collective still waiting for its peers the host waits here
  // (README "Collectives": only kernels and event record/wait are queued).
  WaitSettledLocked(lock, s);
  const uint64_t now = simhub_now_ns();
  const uint64_t start = std::max(now + kLaunchLatencyNs, EffectiveTailLocked(s));
  s->tail_ns = start + duration_ns;
  return Placement{now, start, s->tail_ns, s->id, static_cast<uint32_t>(ordinal_), ContextUidLocked()};
}

uint64_t Device::StreamDoneNs(CUstream stream) {
  std::unique_lock<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s) return 0;
  // Work seen done has been reported too (its truth lines and CUPTI records
  // are written outside the lock): a program that saw it done may exit.
  settled_.wait(lock, [&] { return !UnsettledLocked(s) && reporting_ == 0; });
  return EffectiveTailLocked(s);
}

bool Device::StreamDoneNsNow(CUstream stream, uint64_t* done_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  *done_ns = 0;
  if (!s) return true;
  if (UnsettledLocked(s) || reporting_ > 0) return false;
  *done_ns = EffectiveTailLocked(s);
  return true;
}

uint64_t Device::DeviceDoneNs() {
  std::unique_lock<std::mutex> lock(mutex_);
  settled_.wait(lock, [&] { return deferred_.empty() && reporting_ == 0; });
  uint64_t tail = std::max(BlockingTailLocked(), retired_tail_ns_);
  for (CUstream_st* s : streams_) tail = std::max(tail, s->tail_ns);
  return tail;
}

// ---- deferred work

bool Device::UnsettledLocked(CUstream_st* s) {
  if (s == &legacy_) {
    if (legacy_.deferred) return true;
    for (CUstream_st* t : streams_) {
      if (!t->non_blocking && t->deferred) return true;
    }
    return false;
  }
  if (s->non_blocking) return s->deferred != 0;
  return s->deferred != 0 || legacy_.deferred != 0;
}

void Device::WaitSettledLocked(std::unique_lock<std::mutex>& lock, CUstream_st* s) {
  settled_.wait(lock, [&] { return !UnsettledLocked(s); });
}

void Device::EnqueueOp(CUstream stream, uint64_t duration_ns, const SimOp& op, const char* api, SimGate* gate,
                       std::function<void()> effect) {
  const uint64_t now = simhub_now_ns();
  Ready ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    CUstream_st* s = ResolveLocked(stream);
    if (!s) s = &legacy_;
    if (gate) gate->device = this;
    SimOp mine = op;
    mine.device_id = static_cast<uint32_t>(ordinal_);
    mine.context_id = ContextUidLocked();
    deferred_.push_back(Deferred{Deferred::kKernel, s, nullptr, now, duration_ns, mine, api, gate, false,
                                 std::move(effect)});
    ++s->deferred;
    ProcessLocked(&ready);
    if (!ready.ops.empty()) ++reporting_;
  }
  Report(ready);
}

void Device::ReleaseGate(SimGate* gate, uint64_t release_ns) {
  Ready ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    gate->released = true;
    gate->release_ns = release_ns;
    ProcessLocked(&ready);
    if (!ready.ops.empty()) ++reporting_;
  }
  Report(ready);
}

// Places, in enqueue order, every queued entry whose stream (and, through
// legacy-stream semantics, the streams it waits for) has no earlier entry
// still queued: the timeline is exactly what immediate placement would
// have given, only decided later.
void Device::ProcessLocked(Ready* ready) {
  std::unordered_set<CUstream_st*> blocked;  // streams with an earlier entry still queued
  bool progress = false;
  for (auto it = deferred_.begin(); it != deferred_.end();) {
    Deferred& e = *it;
    CUstream_st* s = e.stream;
    bool waits = blocked.count(s) != 0;
    if (!waits && s == &legacy_) {
      for (CUstream_st* t : blocked) waits = waits || !t->non_blocking;
    } else if (!waits && !s->non_blocking) {
      waits = blocked.count(&legacy_) != 0;
    }
    if (!waits && e.kind == Deferred::kWait && e.event->pending) waits = true;
    if (!waits && e.kind == Deferred::kKernel && e.gate && !e.started) {
      e.op.launch_ns = e.enqueue_ns;
      e.op.start_ns = std::max(e.enqueue_ns + kLaunchLatencyNs, EffectiveTailLocked(s));
      e.started = true;
      ready->starts.emplace_back(e.gate, e.op.start_ns);
    }
    if (!waits && e.kind == Deferred::kKernel && e.gate && !e.gate->released) waits = true;
    if (waits) {
      blocked.insert(s);
      ++it;
      continue;
    }
    switch (e.kind) {
      case Deferred::kKernel:
        if (e.gate) {
          e.op.end_ns = std::max(e.op.start_ns, e.gate->release_ns) + e.gate->transfer_ns;
        } else {
          e.op.launch_ns = e.enqueue_ns;
          e.op.start_ns = std::max(e.enqueue_ns + kLaunchLatencyNs, EffectiveTailLocked(s));
          e.op.end_ns = e.op.start_ns + e.duration_ns;
        }
        e.op.stream_id = s->id;
        s->tail_ns = e.op.end_ns;
        if (e.effect) e.effect();  // the bytes move in stream order
        ready->ops.push_back(ReadyOp{e.op, e.api, e.gate});
        break;
      case Deferred::kRecord:
        e.event->time_ns = std::max(e.enqueue_ns + kLaunchLatencyNs, EffectiveTailLocked(s));
        e.event->pending = false;
        break;
      case Deferred::kWait:
        s->tail_ns = std::max(s->tail_ns, e.event->time_ns);
        break;
    }
    --s->deferred;
    it = deferred_.erase(it);
    progress = true;
  }
  if (progress) settled_.notify_all();
}

void Device::Report(Ready& ready) {
  for (auto& [gate, start_ns] : ready.starts) {
    if (gate->on_start) gate->on_start(gate->arg, start_ns);
  }
  for (ReadyOp& r : ready.ops) {
    EmitOpAs(r.op, r.api);
    delete r.gate;  // its kernel is reported: nothing refers to it any more
  }
  if (!ready.ops.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    --reporting_;
    settled_.notify_all();
  }
}

CUevent Device::CreateEvent(unsigned flags) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* e = new CUevent_st{next_event_id_++, flags, false, 0};
  e->device = this;
  events_.insert(e);
  return e;
}

bool Device::DestroyEvent(CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!events_.erase(event)) return false;
  // A queued record or wait still refers to it: as in CUDA, its resources
  // go when that work is done (here: never; it is a few bytes).
  for (const Deferred& e : deferred_) {
    if (e.event == event) return true;
  }
  delete event;
  return true;
}

bool Device::IsValid(CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.count(event) != 0;
}

void Device::RecordEvent(CUevent event, CUstream stream) {
  const uint64_t now = simhub_now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s || !events_.count(event)) return;
  event->recorded = true;
  if (UnsettledLocked(s)) {  // behind a collective waiting for its peers: known later
    event->pending = true;
    deferred_.push_back(Deferred{Deferred::kRecord, s, event, now, 0, SimOp{}, nullptr, nullptr, false, {}});
    ++s->deferred;
    return;
  }
  // The event completes when the work before it does; on an idle stream it
  // completes as soon as the device sees it.
  event->time_ns = std::max(now + kLaunchLatencyNs, EffectiveTailLocked(s));
  event->pending = false;
}

void Device::WaitEvent(CUstream stream, CUevent event) {
  const uint64_t now = simhub_now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s || !events_.count(event) || !event->recorded) return;
  if (event->pending || UnsettledLocked(s)) {
    deferred_.push_back(Deferred{Deferred::kWait, s, event, now, 0, SimOp{}, nullptr, nullptr, false, {}});
    ++s->deferred;
    return;
  }
  s->tail_ns = std::max(s->tail_ns, event->time_ns);
}

void Device::WaitForTime(CUstream stream, uint64_t time_ns) {
  std::unique_lock<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s) return;
  WaitSettledLocked(lock, s);
  s->tail_ns = std::max(s->tail_ns, time_ns);
}

Device::EventState Device::StateOf(CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!events_.count(event)) return EventState{false, false, 0, 0, 0};
  return EventState{true, event->recorded, event->flags, event->id, event->pending ? UINT64_MAX : event->time_ns};
}

Device::EventState Device::SettledStateOf(CUevent event) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!events_.count(event)) return EventState{false, false, 0, 0, 0};
  settled_.wait(lock, [&] { return !events_.count(event) || (!event->pending && reporting_ == 0); });
  if (!events_.count(event)) return EventState{false, false, 0, 0, 0};
  return EventState{true, event->recorded, event->flags, event->id, event->time_ns};
}

void* Device::Allocate(size_t bytes, int memory_kind) {
  const size_t rounded = Rounded(bytes);
  const bool on_device = memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on_device && device_bytes_ + rounded > kTotalMemBytes) return nullptr;
    if (on_device) device_bytes_ += rounded;
  }
  void* p = aligned_alloc(kAlignment, rounded);
  if (!p) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on_device) device_bytes_ -= rounded;
    return nullptr;
  }
  const int device = OnDeviceKind(memory_kind) ? ordinal_ : -1;
  std::lock_guard<std::mutex> lock(Memory().mutex);
  Memory().by_start[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, memory_kind, true, device};
  return p;
}

bool Device::Release(void* ptr, int expected_kind, size_t* bytes) {
  Allocation freed{};
  {
    MemoryMap& memory = Memory();
    std::lock_guard<std::mutex> lock(memory.mutex);
    auto it = memory.by_start.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == memory.by_start.end() || !it->second.owned) return false;
    // cudaFree accepts managed memory too; cudaFreeHost only host allocations.
    const bool host = it->second.kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    if ((expected_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) != host) return false;
    freed = it->second;
    memory.by_start.erase(it);
  }
  if (bytes) *bytes = freed.bytes;
  if (freed.kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    Device* owner = At(freed.device);  // freeing another device's memory is allowed (cudaFree)
    if (owner) {
      std::lock_guard<std::mutex> lock(owner->mutex_);
      owner->device_bytes_ -= Rounded(freed.bytes);
    }
  }
  free(ptr);
  return true;
}

void Device::Register(void* ptr, size_t bytes, int memory_kind) {
  const int device = OnDeviceKind(memory_kind) ? ordinal_ : -1;
  std::lock_guard<std::mutex> lock(Memory().mutex);
  Memory().by_start[reinterpret_cast<uintptr_t>(ptr)] = Allocation{bytes, memory_kind, false, device};
}

void Device::Forget(void* ptr) {
  MemoryMap& memory = Memory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto it = memory.by_start.find(reinterpret_cast<uintptr_t>(ptr));
  if (it != memory.by_start.end() && !it->second.owned) memory.by_start.erase(it);
}

namespace {
// The allocation holding address, or nullptr (the memory map's lock held).
const Allocation* Holding(uintptr_t address) {
  auto& by_start = Memory().by_start;
  auto it = by_start.upper_bound(address);
  if (it == by_start.begin()) return nullptr;
  --it;
  return address < it->first + std::max<size_t>(it->second.bytes, 1) ? &it->second : nullptr;
}
}  // namespace

int Device::KindOf(const void* ptr) {
  std::lock_guard<std::mutex> lock(Memory().mutex);
  const Allocation* a = Holding(reinterpret_cast<uintptr_t>(ptr));
  return a ? a->kind : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

int Device::DeviceOf(const void* ptr) {
  std::lock_guard<std::mutex> lock(Memory().mutex);
  const Allocation* a = Holding(reinterpret_cast<uintptr_t>(ptr));
  return a ? a->device : -1;
}

bool Device::IsAllocationStart(const void* ptr, int memory_kind) {
  MemoryMap& memory = Memory();
  std::lock_guard<std::mutex> lock(memory.mutex);
  auto it = memory.by_start.find(reinterpret_cast<uintptr_t>(ptr));
  return it != memory.by_start.end() && it->second.kind == memory_kind;
}

bool Device::Holds(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(Memory().mutex);
  const uintptr_t start = reinterpret_cast<uintptr_t>(ptr);
  auto& by_start = Memory().by_start;
  auto it = by_start.upper_bound(start);
  if (it == by_start.begin()) return false;
  --it;  // the allocation starting at or before ptr
  const size_t offset = start - it->first;
  return offset < it->second.bytes && bytes <= it->second.bytes - offset;
}

size_t Device::DeviceBytesInUse() {
  std::lock_guard<std::mutex> lock(mutex_);
  return device_bytes_;
}

CUcontext Device::RetainPrimaryContext() {
  bool created = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!context_alive_) {
      context_alive_ = true;
      context_.uid = g_next_primary_uid.fetch_add(1);
      created = true;
    }
  }
  if (created) {
    // API calls of threads that made no context current report device 0's.
    if (ordinal_ == 0) SetCurrentContext(&context_, context_.uid);
    FireResourceHook(/*is_destroy=*/0, &context_, context_.uid, static_cast<uint32_t>(ordinal_));
  }
  return &context_;
}

void Device::ResetPrimaryContext() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!context_alive_) return;
    context_alive_ = false;
    peers_ = 0;
  }
  FireResourceHook(/*is_destroy=*/1, &context_, context_.uid, static_cast<uint32_t>(ordinal_));
  if (ordinal_ == 0) SetCurrentContext(nullptr, 0);
}

bool Device::PrimaryActive() {
  std::lock_guard<std::mutex> lock(mutex_);
  return context_alive_;
}

Device* Device::PrimaryOwner(CUcontext context) {
  if (!context) return nullptr;
  Devices& d = All();
  for (int i = 0; i < d.count; ++i) {
    if (d.at[i]->IsPrimary(context)) return d.at[i];
  }
  return nullptr;
}

void Device::SetThreadContext(CUctx_st* context) {
  // Device 0's primary is the thread's default: kept as nullptr, so API
  // calls report it through the process-wide context the hub keeps.
  if (context && At(0)->IsPrimary(context)) context = nullptr;
  t_context = context;
  SetThreadApiContext(context, context ? context->uid : 0);
}

CUctx_st* Device::ThreadContext() { return t_context; }

CUcontext Device::CurrentContext() {
  if (t_context) {
    Device* owner = PrimaryOwner(t_context);
    return (!owner || owner->PrimaryActive()) ? t_context : nullptr;
  }
  Device* first = At(0);
  return first->PrimaryActive() ? first->Primary() : nullptr;
}

uint32_t Device::ContextUid() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ContextUidLocked();
}

uint32_t Device::ContextUidLocked() {
  if (t_context && t_context->device == ordinal_) return t_context->uid;
  return context_.uid;
}

bool Device::PeerAccessEnabled(int peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  return peer >= 0 && peer < kMaxDevices && (peers_ >> peer) & 1u;
}

void Device::SetPeerAccess(int peer, bool enabled) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (peer < 0 || peer >= kMaxDevices) return;
  if (enabled) {
    peers_ |= 1u << peer;
  } else {
    peers_ &= ~(1u << peer);
  }
}

void WaitUntilNs(uint64_t sim_ns) {
  // Like CUDA's default (spin) wait: the last stretch is a busy-wait, so a
  // short synchronize does not give up the CPU and pay the scheduler's wake-up
  // latency (milliseconds on a loaded machine). Longer waits sleep first;
  // CLOCK_MONOTONIC_RAW cannot be slept on, so each sleep is re-checked.
  constexpr uint64_t kSpinNs = 200000;
  for (uint64_t now = simhub_now_ns(); now < sim_ns; now = simhub_now_ns()) {
    const uint64_t left = sim_ns - now;
    if (left > kSpinNs) {
      const uint64_t sleep_ns = left - kSpinNs;
      timespec ts{static_cast<time_t>(sleep_ns / 1000000000ull), static_cast<long>(sleep_ns % 1000000000ull)};
      nanosleep(&ts, nullptr);
    } else {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }
}

}  // namespace sim

extern "C" __attribute__((visibility("default"))) int simhub_stream_id(void* stream, int per_thread, uint32_t* id) {
  if (!id) return 0;
  CUstream s = static_cast<CUstream>(stream);
  if (!s && per_thread) s = CU_STREAM_PER_THREAD;
  sim::Device& device = sim::Device::Of(s);
  if (!device.IsValid(s)) return 0;
  *id = device.StreamId(s);
  return 1;
}

namespace sim {
namespace {
thread_local SimGate* t_armed_gate = nullptr;
}  // namespace
SimGate* TakeArmedGate() {
  SimGate* gate = t_armed_gate;
  t_armed_gate = nullptr;
  return gate;
}
}  // namespace sim

extern "C" __attribute__((visibility("default"))) SimGate* simhub_gate_create(uint64_t transfer_ns,
                                                                              SimGateStart on_start, void* arg) {
  return new SimGate{transfer_ns, on_start, arg};
}

extern "C" __attribute__((visibility("default"))) void simhub_gate_arm(SimGate* gate) { sim::t_armed_gate = gate; }

extern "C" __attribute__((visibility("default"))) void simhub_gate_release(SimGate* gate, uint64_t release_ns) {
  // The gate's device: its kernel was enqueued (and announced its start) before any release.
  if (gate) (gate->device ? *gate->device : sim::Device::Get()).ReleaseGate(gate, release_ns);
}

extern "C" __attribute__((visibility("default"))) int simhub_memory_holds(const void* ptr, size_t bytes) {
  return ptr && sim::Device::Holds(ptr, bytes) ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) int simhub_device_count(void) { return sim::Device::Count(); }

extern "C" __attribute__((visibility("default"))) int simhub_current_device(void) {
  return sim::Device::Get().ordinal();
}
