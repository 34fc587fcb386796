// Driver: streams, events and synchronisation. Synchronise calls really
// sleep until the sim clock has passed the end of the work they wait for.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "host_funcs.h"
#include "timing.h"

namespace sim {
namespace {

constexpr uint32_t kInvalidId = 0xffffffffu;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE

// One synchronisation op on `device`: from the call's start to its return.
void EmitSync(Device& device, int sync_type, uint32_t stream_id, uint32_t event_id, uint64_t start_ns,
              uint64_t waited_until_ns) {
  SimOp op{};
  op.kind = SIM_OP_SYNC;
  op.sync_type = sync_type;
  op.correlation_id = OuterCorrelationId();
  op.device_id = static_cast<uint32_t>(device.ordinal());
  op.context_id = device.ContextUid();
  op.stream_id = stream_id;
  op.event_id = event_id;
  op.launch_ns = op.start_ns = start_ns;
  op.end_ns = simhub_now_ns();
  op.waited_until_ns = waited_until_ns;
  EmitOp(op);
}

}  // namespace
}  // namespace sim

using sim::Device;
using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  cuStreamCreate_params params{phStream, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamCreate), "cuStreamCreate", &params, [&]() -> CUresult {
    if (!phStream || (Flags & ~CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    Device& device = Device::Get();  // a stream belongs to the current context's device
    device.RetainPrimaryContext();
    *phStream = device.CreateStream(Flags & CU_STREAM_NON_BLOCKING);
    return CUDA_SUCCESS;
  });
}

// Priorities are kept (cuStreamGetPriority) but not modelled: no preemption.
SIM_DRIVER_EXPORT CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  cuStreamCreateWithPriority_params params{phStream, flags, priority};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamCreateWithPriority), "cuStreamCreateWithPriority", &params,
                               [&]() -> CUresult {
                                 if (!phStream || (flags & ~CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
                                 Device& device = Device::Get();
                                 device.RetainPrimaryContext();
                                 *phStream = device.CreateStream(flags & CU_STREAM_NON_BLOCKING, priority);
                                 return CUDA_SUCCESS;
                               });
}

SIM_DRIVER_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  cuStreamDestroy_v2_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamDestroy_v2), "cuStreamDestroy_v2", &params, [&] {
    return Device::Of(hStream).DestroyStream(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  });
}

namespace sim {
namespace {

CUresult StreamQuery(CUstream stream) {
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CaptureCheckStream(stream); r != CUDA_SUCCESS) return r;
  uint64_t done = 0;
  if (!device.StreamDoneNsNow(stream, &done)) return CUDA_ERROR_NOT_READY;  // behind a waiting collective
  return simhub_now_ns() >= done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult StreamSynchronize(CUstream stream) {
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = CaptureCheckStream(stream); r != CUDA_SUCCESS) return r;
  const uint64_t start = simhub_now_ns();
  const uint64_t done = device.StreamDoneNs(stream);
  WaitUntilNs(done);
  const bool legacy = stream == nullptr || stream == CU_STREAM_LEGACY;
  // The legacy stream waits for the blocking streams too.
  WaitHostFuncs(device.ordinal(), legacy ? 0 : device.StreamId(stream));
  WaitUntilNs(SyncReturnNs(start, done, kStreamSyncIdleNs));
  EmitSync(device, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, device.StreamId(stream), kInvalidId, start,
           done);
  return CUDA_SUCCESS;
}

}  // namespace

// The stream and the event may belong to different devices (CUDA
// documents cudaStreamWaitEvent as the way devices synchronise with each
// other). An event of another device still waiting behind a collective is
// settled first: the host waits until its time is known.
void WaitOnEvent(CUstream stream, CUevent event) {
  Device& device = Device::Of(stream);
  Device& owner = Device::Of(event);
  if (&owner != &device) {
    const Device::EventState state = owner.SettledStateOf(event);
    if (state.valid && state.recorded) device.WaitForTime(stream, state.time_ns);
  } else {
    device.WaitEvent(stream, event);
  }
}

namespace {

// CU_EVENT_WAIT_EXTERNAL only inside a capture (an event wait node).
CUresult StreamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(stream);
  Device& owner = Device::Of(event);
  const Device::EventState state = owner.StateOf(event);
  if (!device.IsValid(stream) || !state.valid) return CUDA_ERROR_INVALID_HANDLE;
  const bool external = flags & CU_EVENT_WAIT_EXTERNAL;
  // Inside a capture the wait joins dependencies; no device work, no record.
  if (CUresult r = CUDA_SUCCESS; CaptureStreamWait(stream, event, external, &r)) return r;
  if (external) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t start = simhub_now_ns();
  WaitOnEvent(stream, event);
  // The host does not wait; the record says what the stream now waits for.
  // An event behind a collective still waiting for its peers has no time yet (0).
  EmitSync(device, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, device.StreamId(stream), state.id, start,
           state.recorded && state.time_ns != UINT64_MAX ? state.time_ns : 0);
  return CUDA_SUCCESS;
}

// The event and the stream must belong to one device (CUDA: "cudaEventRecord()
// will fail if the input event and input stream are associated to different
// devices"). Inside a capture a record only marks the stream's dependencies
// (CU_EVENT_RECORD_EXTERNAL, valid only there, adds an event record node).
CUresult EventRecord(CUevent event, CUstream stream, unsigned flags = 0) {
  Device& device = Device::Of(event);
  if (!device.IsValid(event) || !Device::Of(stream).IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (&Device::Of(stream) != &device) return CUDA_ERROR_INVALID_HANDLE;
  const bool external = flags & CU_EVENT_RECORD_EXTERNAL;
  if (CUresult r = CUDA_SUCCESS; CaptureEventRecord(event, stream, external, &r)) return r;
  if (external) return CUDA_ERROR_INVALID_VALUE;
  device.RecordEvent(event, stream);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace sim

SIM_DRIVER_EXPORT CUresult cuStreamQuery(CUstream hStream) {
  cuStreamQuery_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamQuery), "cuStreamQuery", &params,
                               [&] { return sim::StreamQuery(hStream); });
}

SIM_DRIVER_EXPORT CUresult cuStreamQuery_ptsz(CUstream hStream) {
  cuStreamQuery_ptsz_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamQuery_ptsz), "cuStreamQuery_ptsz", &params,
                               [&] { return sim::StreamQuery(sim::PerThread(hStream)); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  cuStreamSynchronize_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamSynchronize), "cuStreamSynchronize", &params,
                               [&] { return sim::StreamSynchronize(hStream); });
}

SIM_DRIVER_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  cuStreamSynchronize_ptsz_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamSynchronize_ptsz), "cuStreamSynchronize_ptsz", &params,
                               [&] { return sim::StreamSynchronize(sim::PerThread(hStream)); });
}

SIM_DRIVER_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  cuStreamWaitEvent_params params{hStream, hEvent, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamWaitEvent), "cuStreamWaitEvent", &params,
                               [&] { return sim::StreamWaitEvent(hStream, hEvent, Flags); });
}

SIM_DRIVER_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  cuStreamWaitEvent_ptsz_params params{hStream, hEvent, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamWaitEvent_ptsz), "cuStreamWaitEvent_ptsz", &params,
                               [&] { return sim::StreamWaitEvent(sim::PerThread(hStream), hEvent, Flags); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  cuEventRecord_params params{hEvent, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventRecord), "cuEventRecord", &params,
                               [&] { return sim::EventRecord(hEvent, hStream); });
}

SIM_DRIVER_EXPORT CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  cuEventRecord_ptsz_params params{hEvent, hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventRecord_ptsz), "cuEventRecord_ptsz", &params,
                               [&] { return sim::EventRecord(hEvent, sim::PerThread(hStream)); });
}

namespace sim {
namespace {
// The current context's device.
CUresult SynchronizeDevice(Device& device) {
  if (CUresult r = CaptureCheckDevice(device.ordinal()); r != CUDA_SUCCESS) return r;
  const uint64_t start = simhub_now_ns();
  const uint64_t done = device.DeviceDoneNs();
  WaitUntilNs(done);
  WaitHostFuncs(device.ordinal(), 0);
  WaitUntilNs(SyncReturnNs(start, done, kContextSyncIdleNs));
  EmitSync(device, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, kInvalidId, kInvalidId, start, done);
  return CUDA_SUCCESS;
}
}  // namespace
}  // namespace sim

SIM_DRIVER_EXPORT CUresult cuCtxSynchronize() {
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxSynchronize), "cuCtxSynchronize", nullptr,
                               [&] { return sim::SynchronizeDevice(Device::Get()); });
}

// CUDA 13: synchronise a given context (NULL: the current one): the work of
// its device (a created context shares its device's timeline).
SIM_DRIVER_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  cuCtxSynchronize_v2_params params{ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxSynchronize_v2), "cuCtxSynchronize_v2", &params, [&]() -> CUresult {
    if (!ctx) return sim::SynchronizeDevice(Device::Get());
    Device* owner = Device::PrimaryOwner(ctx);
    if (ctx != Device::CurrentContext() && !(owner && owner->PrimaryActive())) return CUDA_ERROR_INVALID_CONTEXT;
    return sim::SynchronizeDevice(*Device::At(ctx->device));
  });
}

SIM_DRIVER_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  cuEventCreate_params params{phEvent, Flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventCreate), "cuEventCreate", &params, [&]() -> CUresult {
    if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
    Device& device = Device::Get();  // an event belongs to the current context's device
    device.RetainPrimaryContext();
    *phEvent = device.CreateEvent(Flags);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuEventQuery(CUevent hEvent) {
  cuEventQuery_params params{hEvent};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventQuery), "cuEventQuery", &params, [&]() -> CUresult {
    const Device::EventState event = Device::Of(hEvent).StateOf(hEvent);
    if (!event.valid) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = sim::CaptureCheckEvent(hEvent); r != CUDA_SUCCESS) return r;
    return (!event.recorded || simhub_now_ns() >= event.time_ns) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  });
}

SIM_DRIVER_EXPORT CUresult cuEventSynchronize(CUevent hEvent) {
  cuEventSynchronize_params params{hEvent};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventSynchronize), "cuEventSynchronize", &params, [&]() -> CUresult {
    const uint64_t start = simhub_now_ns();
    Device& device = Device::Of(hEvent);
    if (!device.IsValid(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = sim::CaptureCheckEvent(hEvent); r != CUDA_SUCCESS) return r;
    const Device::EventState event = device.SettledStateOf(hEvent);  // behind a collective: waits for its peers
    if (!event.valid) return CUDA_ERROR_INVALID_HANDLE;
    const uint64_t done = event.recorded ? event.time_ns : 0;  // never recorded: nothing to wait for
    sim::WaitUntilNs(done);
    sim::WaitUntilNs(sim::SyncReturnNs(start, done, sim::kStreamSyncIdleNs));
    sim::EmitSync(device, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, sim::kInvalidId, event.id, start,
                  done);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  cuEventElapsedTime_v2_params params{pMilliseconds, hStart, hEnd};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventElapsedTime_v2), "cuEventElapsedTime_v2", &params, [&]() -> CUresult {
    if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
    Device& device = Device::Of(hStart);
    const Device::EventState start = device.StateOf(hStart);
    const Device::EventState end = device.StateOf(hEnd);  // events of two devices: not valid here
    if (!start.valid || !end.valid) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = sim::CaptureCheckEvent(hStart); r != CUDA_SUCCESS) return r;
    if (CUresult r = sim::CaptureCheckEvent(hEnd); r != CUDA_SUCCESS) return r;
    if ((start.flags | end.flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!start.recorded || !end.recorded) return CUDA_ERROR_INVALID_HANDLE;
    const uint64_t now = simhub_now_ns();
    if (now < start.time_ns || now < end.time_ns) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = static_cast<float>((static_cast<double>(end.time_ns) - static_cast<double>(start.time_ns)) / 1e6);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent) {
  cuEventDestroy_v2_params params{hEvent};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventDestroy_v2), "cuEventDestroy_v2", &params, [&] {
    if (!Device::Of(hEvent).DestroyEvent(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
    sim::CaptureForgetEvent(hEvent);
    return CUDA_SUCCESS;
  });
}

namespace {
CUresult StreamPriority(CUstream stream, int* priority) {
  if (!priority) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  *priority = device.StreamPriority(stream);
  return CUDA_SUCCESS;
}

// CU_EVENT_RECORD_EXTERNAL makes a capture record an event record node;
// documented as invalid outside a capture.
CUresult EventRecordWithFlags(CUevent event, CUstream stream, unsigned flags) {
  if (flags & ~static_cast<unsigned>(CU_EVENT_RECORD_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  return sim::EventRecord(event, stream, flags);
}
}  // namespace

SIM_DRIVER_EXPORT CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  cuStreamGetPriority_params params{hStream, priority};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetPriority), "cuStreamGetPriority", &params,
                               [&] { return StreamPriority(hStream, priority); });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  cuStreamGetPriority_ptsz_params params{hStream, priority};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetPriority_ptsz), "cuStreamGetPriority_ptsz", &params,
                               [&] { return StreamPriority(sim::PerThread(hStream), priority); });
}

SIM_DRIVER_EXPORT CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  cuEventRecordWithFlags_params params{hEvent, hStream, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventRecordWithFlags), "cuEventRecordWithFlags", &params,
                               [&] { return EventRecordWithFlags(hEvent, hStream, flags); });
}

SIM_DRIVER_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  cuEventRecordWithFlags_ptsz_params params{hEvent, hStream, flags};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuEventRecordWithFlags_ptsz), "cuEventRecordWithFlags_ptsz", &params,
                               [&] { return EventRecordWithFlags(hEvent, sim::PerThread(hStream), flags); });
}
