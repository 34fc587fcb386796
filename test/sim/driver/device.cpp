#include "device.h"

#include <cupti_activity.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>

#include "../hub_internal.h"
#include "timing.h"

namespace sim {
namespace {

thread_local CUstream_st* t_per_thread_stream = nullptr;
thread_local CUctx_st* t_context = nullptr;  // a created context current on this thread

constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee

}  // namespace

thread_local uint32_t t_graph_id = 0;
thread_local uint64_t t_graph_node_id = 0;

void SetGraphContext(uint32_t graph_id, uint64_t node_id) {
  t_graph_id = graph_id;
  t_graph_node_id = node_id;
}

void Place(SimOp* op, const Placement& at) {
  if (t_graph_id) {
    op->graph_id = t_graph_id;
    op->graph_node_id = t_graph_node_id;
  }
  op->correlation_id = OuterCorrelationId();
  op->context_id = Device::Get().ContextUid();
  op->stream_id = at.stream_id;
  op->launch_ns = at.launch_ns;
  op->start_ns = at.start_ns;
  op->end_ns = at.end_ns;
}

Device& Device::Get() {
  static Device* device = new Device();  // never destroyed: atexit handlers still use it
  return *device;
}

CUstream_st* Device::ResolveLocked(CUstream stream) {
  if (stream == nullptr || stream == CU_STREAM_LEGACY) return &legacy_;
  if (stream == CU_STREAM_PER_THREAD) {
    if (!t_per_thread_stream) {
      // The per-thread default stream synchronises with the legacy stream like
      // any blocking stream, but not with other streams.
      t_per_thread_stream = new CUstream_st{next_stream_id_++, false, 0, false};
      streams_.insert(t_per_thread_stream);
    }
    return t_per_thread_stream;
  }
  return (streams_.count(stream) && !stream->destroyed) ? stream : nullptr;
}

uint64_t Device::BlockingTailLocked() {
  uint64_t tail = legacy_.tail_ns;
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

CUstream Device::CreateStream(bool non_blocking) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* s = new CUstream_st{next_stream_id_++, non_blocking, 0, false};
  streams_.insert(s);
  return s;
}

bool Device::DestroyStream(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) return false;
  if (!streams_.count(stream) || stream->destroyed) return false;
  // Kept (not deleted): its pending work still counts for device synchronize.
  stream->destroyed = true;
  return true;
}

bool Device::IsValid(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ResolveLocked(stream) != nullptr;
}

uint32_t Device::StreamId(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  return s ? s->id : 0;
}

Placement Device::Enqueue(CUstream stream, uint64_t duration_ns) {
  const uint64_t now = simhub_now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s) s = &legacy_;
  const uint64_t start = std::max(now + kLaunchLatencyNs, EffectiveTailLocked(s));
  s->tail_ns = start + duration_ns;
  return Placement{now, start, s->tail_ns, s->id};
}

uint64_t Device::StreamDoneNs(CUstream stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  return s ? EffectiveTailLocked(s) : 0;
}

uint64_t Device::DeviceDoneNs() {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t tail = BlockingTailLocked();
  for (CUstream_st* s : streams_) tail = std::max(tail, s->tail_ns);
  return tail;
}

CUevent Device::CreateEvent(unsigned flags) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* e = new CUevent_st{next_event_id_++, flags, false, 0};
  events_.insert(e);
  return e;
}

bool Device::DestroyEvent(CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!events_.erase(event)) return false;
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
  // The event completes when the work before it does; on an idle stream it
  // completes as soon as the device sees it.
  event->time_ns = std::max(now + kLaunchLatencyNs, EffectiveTailLocked(s));
  event->recorded = true;
}

void Device::WaitEvent(CUstream stream, CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  CUstream_st* s = ResolveLocked(stream);
  if (!s || !events_.count(event) || !event->recorded) return;
  s->tail_ns = std::max(s->tail_ns, event->time_ns);
}

Device::EventState Device::StateOf(CUevent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!events_.count(event)) return EventState{false, false, 0, 0, 0};
  return EventState{true, event->recorded, event->flags, event->id, event->time_ns};
}

void* Device::Allocate(size_t bytes, int memory_kind) {
  const size_t rounded = std::max<size_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  std::lock_guard<std::mutex> lock(mutex_);
  const bool on_device = memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  if (on_device && device_bytes_ + rounded > kTotalMemBytes) return nullptr;
  void* p = aligned_alloc(kAlignment, rounded);
  if (!p) return nullptr;
  allocations_[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, memory_kind, true};
  if (on_device) device_bytes_ += rounded;
  return p;
}

bool Device::Release(void* ptr, int expected_kind, size_t* bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == allocations_.end() || !it->second.owned) return false;
  // cudaFree accepts managed memory too; cudaFreeHost only host allocations.
  const int kind = it->second.kind;
  const bool host = kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  if ((expected_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED) != host) return false;
  if (bytes) *bytes = it->second.bytes;
  if (kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    device_bytes_ -= std::max<size_t>(kAlignment, (it->second.bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  allocations_.erase(it);
  free(ptr);
  return true;
}

void Device::Register(void* ptr, size_t bytes, int memory_kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[reinterpret_cast<uintptr_t>(ptr)] = Allocation{bytes, memory_kind, false};
}

void Device::Forget(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it != allocations_.end() && !it->second.owned) allocations_.erase(it);
}

int Device::KindOf(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.upper_bound(address);
  if (it == allocations_.begin()) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  --it;
  if (address < it->first + std::max<size_t>(it->second.bytes, 1)) return it->second.kind;
  return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

bool Device::IsAllocationStart(const void* ptr, int memory_kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(ptr));
  return it != allocations_.end() && it->second.kind == memory_kind;
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
      context_.uid = next_context_uid_++;
      created = true;
    }
  }
  if (created) {
    SetCurrentContext(&context_, context_.uid);
    FireResourceHook(/*is_destroy=*/0, &context_, context_.uid, kDeviceId);
  }
  return &context_;
}

void Device::ResetPrimaryContext() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!context_alive_) return;
    context_alive_ = false;
  }
  FireResourceHook(/*is_destroy=*/1, &context_, context_.uid, kDeviceId);
  SetCurrentContext(nullptr, 0);
}

void Device::SetThreadContext(CUctx_st* context) {
  t_context = context;
  SetThreadApiContext(context, context ? context->uid : 0);
}

CUctx_st* Device::ThreadContext() { return t_context; }

CUcontext Device::CurrentContext() {
  if (t_context) return t_context;
  std::lock_guard<std::mutex> lock(mutex_);
  return context_alive_ ? &context_ : nullptr;
}

uint32_t Device::ContextUid() {
  if (t_context) return t_context->uid;
  std::lock_guard<std::mutex> lock(mutex_);
  return context_.uid;
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
  sim::Device& device = sim::Device::Get();
  if (!device.IsValid(s)) return 0;
  *id = device.StreamId(s);
  return 1;
}
