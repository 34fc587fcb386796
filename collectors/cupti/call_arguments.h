// A CUDA call that no wrapper recorded, as the host event a wrapper would
// have written: which calls (by CUPTI callback id) are recorded that way,
// and their arguments, read from CUPTI's functionParams (the toolkit's
// generated_cuda_runtime_api_meta.h / generated_cuda_meta.h structs).
#pragma once

#include <cstdint>

#include "model/api_ids.h"
#include "model/events.h"

namespace prof::cupti {

// The call of this runtime (runtime) or driver callback id as libprof's
// event model knows it (model/api_ids.h); ApiId::kCount when it is none
// (and for the registration calls).
ApiId HostApiOf(bool runtime, uint32_t cbid);

// What a wrapper of `id` fills from its arguments (interpose/*_wrappers.cpp):
// the pointer that matters, bytes, stream, cudaMemcpyKind, and the device
// where the arguments name it (peer copies, VMM allocations). `params` is
// the call's functionParams at its exit (out-parameters written), nullptr
// when CUPTI gives none; `ok`: the call succeeded.
void FillArguments(ApiId id, const void* params, bool ok, HostEvent* e);

// Whether a wrapper of `id` names the current device (an allocation on it).
bool NamesCurrentDevice(ApiId id);

// PROF_STEP=auto's detail of a copy (cudaMemcpyKind + 1), as a wrapper
// feeds it to the marker path; 0 for other calls or without params.
uint32_t CopyDetail(ApiId id, const void* params);

}  // namespace prof::cupti
