// How every simulated driver entry point is shaped: bracketed with
// simhub_api_enter/exit (CUPTI driver domain, its cbid and params struct),
// and refusing to work before a successful cuInit, as the real driver does.
#pragma once

#include <cuda.h>
#include <cupti_driver_cbid.h>
#include <generated_cuda_meta.h>

#include "../api_call.h"
#include "../hub.h"

#define SIM_DRIVER_EXPORT extern "C" __attribute__((visibility("default")))
#define SIM_DRIVER_CBID(name) CUPTI_DRIVER_TRACE_CBID_##name

namespace sim {

inline constexpr int kDriverDomain = 1;  // CUPTI_CB_DOMAIN_DRIVER_API

bool DriverInitialized();  // cuInit succeeded in this process

// The _ptsz/_ptds entry points: stream 0 means the per-thread default stream.
inline CUstream PerThread(CUstream stream) { return stream ? stream : CU_STREAM_PER_THREAD; }

template <typename Body>
CUresult DriverCall(uint32_t cbid, const char* name, const void* params, Body&& body,
                    const char* symbol_name = nullptr) {
  return BracketApiCall<CUresult>(kDriverDomain, cbid, name, params, symbol_name, std::forward<Body>(body),
                                  [](CUresult) {});
}

// The same for calls that need cuInit first.
template <typename Body>
CUresult InitializedDriverCall(uint32_t cbid, const char* name, const void* params, Body&& body,
                               const char* symbol_name = nullptr) {
  return DriverCall(
      cbid, name, params,
      [&]() -> CUresult { return DriverInitialized() ? body() : CUDA_ERROR_NOT_INITIALIZED; }, symbol_name);
}

}  // namespace sim
