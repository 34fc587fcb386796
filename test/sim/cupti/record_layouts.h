// The activity record structs this personality's CUPTI delivers, per kind.
// CUPTI always writes the newest struct of its own release, so a client must
// know which one that is from cuptiGetVersion; the sim delivers exactly the
// structs of the release named in ../personality.h.
//
// Sources (NVIDIA): CUPTI release notes, "Updates in CUDA 12.0": Kernel8 ->
// Kernel9; cupti_activity_deprecated.h (CUDA 13.0): Memcpy5 and
// Synchronization "deprecated in CUDA 12.8" (-> Memcpy6, Synchronization2),
// MemcpyPtoP3 and Memset3 "deprecated in CUDA 11.6" (-> PtoP4, Memset4);
// CUPTI Python 13.0.0 release notes: Kernel10 introduced, Kernel9 dropped.
// Memory records: Memory3 for 12.x, Memory4 (Memory3 plus a trailing
// `source`) for 13.x.
//
// The CUDA 13 personality's CUPTI reports 13.0 unless told otherwise
// (../personality.h); reporting 13.1 or 13.2 (the multi-subscriber release,
// or SIM_CUPTI_API_VERSION) it writes kernels as CUpti_ActivityKernel11,
// the only record of those releases that differs from 13.0's here: the
// cupti_activity.h of CUPTI 13.2 (130202) shows Kernel11 = Kernel10 plus a
// trailing `int32_t priority; uint32_t padding4;` (its other records
// Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, Memory4, API and
// ExternalCorrelation are 13.0's).
#pragma once

#include <cupti.h>

#include <cstddef>

#include "personality.h"

namespace simcupti {

#if SIM_CUDA_MAJOR >= 13
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using SyncRecord = CUpti_ActivitySynchronization2;
using MemoryRecord = CUpti_ActivityMemory4;
#else  // CUDA 12.4
using KernelRecord = CUpti_ActivityKernel9;
using MemcpyRecord = CUpti_ActivityMemcpy5;
using SyncRecord = CUpti_ActivitySynchronization;
using MemoryRecord = CUpti_ActivityMemory3;
#endif
#if SIM_CUDA_MAJOR >= 13
// CUpti_ActivityKernel11 of CUPTI 13.2, which the toolkit's 13.0 headers
// lack: Kernel10's fields, then the launch priority.
START_PACKED_ALIGNMENT
struct PACKED_ALIGNMENT Kernel11Record {
  CUpti_ActivityKernel10 v10;  // every field of Kernel10, at its offset
  int32_t priority;            // the stream's priority (the sim's streams all have the default, 0)
  uint32_t padding4;
};
END_PACKED_ALIGNMENT
static_assert(sizeof(CUpti_ActivityKernel10) == 216, "CUPTI 13.0 Kernel10");
static_assert(offsetof(Kernel11Record, priority) == 216, "CUPTI 13.2: priority at 216");
static_assert(sizeof(Kernel11Record) == 224, "CUPTI 13.2: sizeof(CUpti_ActivityKernel11)");
#endif
using PeerRecord = CUpti_ActivityMemcpyPtoP4;
using MemsetRecord = CUpti_ActivityMemset4;

// Fields only the newer structs have.
inline void SetCopyCount(CUpti_ActivityMemcpy6& r, uint64_t n) { r.copyCount = n; }
inline void SetCopyCount(CUpti_ActivityMemcpy5&, uint64_t) {}
inline void SetEventSyncId(CUpti_ActivitySynchronization2& r, uint64_t id) { r.cudaEventSyncId = id; }
inline void SetEventSyncId(CUpti_ActivitySynchronization&, uint64_t) {}

// Whether this personality's CUPTI knows a callback id. CUDA 12.9 Update 1's
// cupti_runtime_cbid.h ends at id 486 and cupti_driver_cbid.h at 783; the
// ids above are new in 13.0 (__cudaLaunchKernel, __cudaRegisterFunction_v13000,
// __cudaPushCallConfiguration_v13000, ...; scripts/check-cbid-tables.py). A
// 12.x CUPTI has neither callbacks nor API records for them. (12.4's tables
// end lower still; 12.9's end is the bound known from NVIDIA's headers.)
inline bool CbidKnownToRelease(uint32_t domain, uint32_t cbid) {
#if SIM_CUDA_MAJOR >= 13
  (void)domain;
  (void)cbid;
  return true;
#else
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return cbid <= 486;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return cbid <= 783;
  return true;
#endif
}

}  // namespace simcupti
