// Driver: host functions on streams (see host_funcs.h).
#define __CUDA_API_VERSION_INTERNAL 1
#include <pthread.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "host_funcs.h"

namespace sim {
namespace {

struct Pending {
  uint64_t ready_ns;  // the slot's start on the sim clock
  uint64_t sequence;  // FIFO among equal ready times
  HostFuncRunner run;
  void* fn;
  void* data;
  CUstream stream;
  uint32_t device;
  uint32_t stream_id;
  uint32_t correlation_id;
  bool operator>(const Pending& o) const {
    return ready_ns != o.ready_ns ? ready_ns > o.ready_ns : sequence > o.sequence;
  }
};

// Leaf lock; never held while a host function runs.
struct HostFuncs {
  std::mutex mutex;
  std::condition_variable changed;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> queue;
  std::map<uint64_t, uint64_t> outstanding;  // per Key(device, stream id): enqueued, not yet returned
  std::map<uint32_t, uint64_t> device_outstanding;  // per device
  uint64_t next_sequence = 0;
  bool worker_started = false;
};
// Stream ids are per device.
uint64_t Key(uint32_t device, uint32_t stream_id) { return (static_cast<uint64_t>(device) << 32) | stream_id; }

HostFuncs& State() {
  static HostFuncs* state = new HostFuncs();  // never destroyed: the worker outlives main
  return *state;
}

void Worker() {
  HostFuncs& s = State();
  for (;;) {
    Pending next;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.changed.wait(lock, [&] { return !s.queue.empty(); });
      next = s.queue.top();
      s.queue.pop();
    }
    WaitUntilNs(next.ready_ns);
    const uint64_t started = simhub_now_ns();
    next.run(next.fn, next.data, next.stream);
    const uint64_t returned = simhub_now_ns();
    std::string line = "{\"type\":\"host_func\",\"pid\":" + std::to_string(getpid()) +
                       ",\"correlation\":" + std::to_string(next.correlation_id) +
                       ",\"device\":" + std::to_string(next.device) +
                       ",\"stream\":" + std::to_string(next.stream_id) + ",\"ready_ns\":" + std::to_string(next.ready_ns) +
                       ",\"start_ns\":" + std::to_string(started) + ",\"end_ns\":" + std::to_string(returned) + "}";
    simhub_truth_line(line.c_str());
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      --s.outstanding[Key(next.device, next.stream_id)];
      --s.device_outstanding[next.device];
    }
    s.changed.notify_all();
  }
}

// A forked child has no worker thread: start one again on first use.
void ForgetWorker() {
  HostFuncs& s = State();
  new (&s) HostFuncs();  // the parent's lock state and queue do not carry over
}
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &ForgetWorker);

}  // namespace

CUresult EnqueueHostFunc(CUstream stream, HostFuncRunner run, void* fn, void* data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  const Placement at = device.Enqueue(stream, kHostFuncSlotNs);
  HostFuncs& s = State();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.queue.push(Pending{at.start_ns, s.next_sequence++, run, fn, data, stream, at.device_id, at.stream_id,
                         OuterCorrelationId()});
    ++s.outstanding[Key(at.device_id, at.stream_id)];
    ++s.device_outstanding[at.device_id];
    if (!s.worker_started) {
      s.worker_started = true;
      std::thread(Worker).detach();
    }
  }
  s.changed.notify_all();
  return CUDA_SUCCESS;
}

void WaitHostFuncs(int device, uint32_t stream_id) {
  HostFuncs& s = State();
  const auto d = static_cast<uint32_t>(device);
  std::unique_lock<std::mutex> lock(s.mutex);
  s.changed.wait(lock, [&] {
    return stream_id == 0 ? s.device_outstanding[d] == 0 : s.outstanding[Key(d, stream_id)] == 0;
  });
}

}  // namespace sim

namespace {

void RunHostFn(void* fn, void* data, CUstream) { reinterpret_cast<CUhostFn>(fn)(data); }
// A stream callback also gets its stream and the stream's status (always
// success: the sim has no sticky device errors).
void RunStreamCallback(void* fn, void* data, CUstream stream) {
  reinterpret_cast<CUstreamCallback>(fn)(stream, CUDA_SUCCESS, data);
}

// cuLaunchHostFunc into a capturing stream is a host node of the graph.
CUresult LaunchHostFunc(CUstream stream, CUhostFn fn, void* data) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (!sim::Device::Of(stream).IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CUDA_SUCCESS; sim::CaptureHostFunc(stream, fn, data, &r)) return r;
  return sim::EnqueueHostFunc(stream, RunHostFn, reinterpret_cast<void*>(fn), data);
}

// A stream callback is not captured (the sim refuses it on a capturing stream).
CUresult AddCallback(CUstream stream, CUstreamCallback callback, void* data, unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;  // reserved
  if (!callback) return CUDA_ERROR_INVALID_VALUE;
  if (!sim::Device::Of(stream).IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CUDA_SUCCESS; sim::CaptureUnsupported(stream, &r)) return r;
  return sim::EnqueueHostFunc(stream, RunStreamCallback, reinterpret_cast<void*>(callback), data);
}

}  // namespace

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  cuLaunchHostFunc_params params{hStream, fn, userData};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLaunchHostFunc), "cuLaunchHostFunc", &params,
                               [&] { return LaunchHostFunc(hStream, fn, userData); });
}

SIM_DRIVER_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  cuLaunchHostFunc_ptsz_params params{hStream, fn, userData};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLaunchHostFunc_ptsz), "cuLaunchHostFunc_ptsz", &params,
                               [&] { return LaunchHostFunc(sim::PerThread(hStream), fn, userData); });
}

// Flags are reserved and must be 0.
SIM_DRIVER_EXPORT CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData,
                                               unsigned int flags) {
  cuStreamAddCallback_params params{hStream, callback, userData, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamAddCallback), "cuStreamAddCallback", &params,
                               [&] { return AddCallback(hStream, callback, userData, flags); });
}

SIM_DRIVER_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData,
                                                    unsigned int flags) {
  cuStreamAddCallback_ptsz_params params{hStream, callback, userData, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamAddCallback_ptsz), "cuStreamAddCallback_ptsz", &params,
                               [&] { return AddCallback(sim::PerThread(hStream), callback, userData, flags); });
}
