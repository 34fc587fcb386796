// Runtime: events, stream and device synchronisation, stream waits.
#include "runtime_state.h"

using simrt::Driver;
using simrt::DriverBackedCall;
using simrt::FromDriver;
using simrt::S;

namespace {

CUevent E(cudaEvent_t e) { return reinterpret_cast<CUevent>(e); }

cudaError_t StreamSynchronize(cudaStream_t stream, bool per_thread) {
  return FromDriver(Driver(per_thread).cuStreamSynchronize(S(stream)));
}

cudaError_t StreamQuery(cudaStream_t stream, bool per_thread) {
  return FromDriver(Driver(per_thread).cuStreamQuery(S(stream)));
}

cudaError_t StreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags, bool per_thread) {
  return FromDriver(Driver(per_thread).cuStreamWaitEvent(S(stream), E(event), flags));
}

cudaError_t EventRecord(cudaEvent_t event, cudaStream_t stream, bool per_thread) {
  return FromDriver(Driver(per_thread).cuEventRecord(E(event), S(stream)));
}

}  // namespace

SIM_RUNTIME_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaDeviceSynchronize_v3020), "cudaDeviceSynchronize", nullptr,
                          [&] { return FromDriver(Driver().cuCtxSynchronize()); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  cudaStreamSynchronize_v3020_params params{stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamSynchronize_v3020), "cudaStreamSynchronize", &params,
                          [&] { return StreamSynchronize(stream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  cudaStreamSynchronize_ptsz_v7000_params params{stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamSynchronize_ptsz_v7000), "cudaStreamSynchronize_ptsz", &params,
                          [&] { return StreamSynchronize(stream, true); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) {
  cudaStreamQuery_v3020_params params{stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamQuery_v3020), "cudaStreamQuery", &params,
                          [&] { return StreamQuery(stream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) {
  cudaStreamQuery_ptsz_v7000_params params{stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamQuery_ptsz_v7000), "cudaStreamQuery_ptsz", &params,
                          [&] { return StreamQuery(stream, true); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  cudaStreamWaitEvent_v3020_params params{stream, event, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamWaitEvent_v3020), "cudaStreamWaitEvent", &params,
                          [&] { return StreamWaitEvent(stream, event, flags, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  cudaStreamWaitEvent_ptsz_v7000_params params{stream, event, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaStreamWaitEvent_ptsz_v7000), "cudaStreamWaitEvent_ptsz", &params,
                          [&] { return StreamWaitEvent(stream, event, flags, true); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* event) {
  cudaEventCreate_v3020_params params{event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventCreate_v3020), "cudaEventCreate", &params, [&] {
    if (!event) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuEventCreate(reinterpret_cast<CUevent*>(event), CU_EVENT_DEFAULT));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  cudaEventCreateWithFlags_v3020_params params{event, flags};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventCreateWithFlags_v3020), "cudaEventCreateWithFlags", &params, [&] {
    if (!event) return cudaErrorInvalidValue;
    return FromDriver(Driver().cuEventCreate(reinterpret_cast<CUevent*>(event), flags));
  });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  cudaEventRecord_v3020_params params{event, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventRecord_v3020), "cudaEventRecord", &params,
                          [&] { return EventRecord(event, stream, false); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  cudaEventRecord_ptsz_v7000_params params{event, stream};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventRecord_ptsz_v7000), "cudaEventRecord_ptsz", &params,
                          [&] { return EventRecord(event, stream, true); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_RUNTIME_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  cudaEventQuery_v3020_params params{event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventQuery_v3020), "cudaEventQuery", &params,
                          [&] { return FromDriver(Driver().cuEventQuery(E(event))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  cudaEventSynchronize_v3020_params params{event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventSynchronize_v3020), "cudaEventSynchronize", &params,
                          [&] { return FromDriver(Driver().cuEventSynchronize(E(event))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  cudaEventElapsedTime_v12080_params params{ms, start, end};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventElapsedTime_v12080), "cudaEventElapsedTime", &params,
                          [&] { return FromDriver(Driver().cuEventElapsedTime(ms, E(start), E(end))); });
}

SIM_RUNTIME_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  cudaEventDestroy_v3020_params params{event};
  return DriverBackedCall(SIM_RUNTIME_CBID(cudaEventDestroy_v3020), "cudaEventDestroy", &params,
                          [&] { return FromDriver(Driver().cuEventDestroy(E(event))); });
}
