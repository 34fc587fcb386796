// What a CUPTI release hands the decoder for each activity kind: the struct
// it writes (record_layouts.h's facts) and so the record's size. The fuzz
// target gives the decoder a heap block of exactly that size, so reading a
// field the release's struct lacks is an AddressSanitizer report; the seed
// generator (make_corpus.cpp) writes records of the same structs.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "collectors/cupti/record_layouts.h"

namespace fuzz {

// CUPTI API versions the input's first byte picks from (each supported
// release that changes a layout, and one past each end: out of range).
inline constexpr uint32_t kVersions[] = {19, 20, 22, 26, 28, 130000, 130001, 18, 130100};
inline constexpr size_t kVersionCount = sizeof(kVersions) / sizeof(kVersions[0]);

// Kinds a record byte picks from: those decoded, and two that are not.
inline constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_KERNEL,  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,  CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_NAME,             CUPTI_ACTIVITY_KIND_MARKER};
inline constexpr size_t kKindCount = sizeof(kKinds) / sizeof(kKinds[0]);

// Bytes of the record CUPTI writes for kind under layouts.
inline size_t DeliveredSize(CUpti_ActivityKind kind, const prof::cupti::RecordLayouts& l) {
  using namespace prof::cupti;
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return l.kernel == KernelLayout::kKernel9 ? sizeof(CUpti_ActivityKernel9) : sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return l.memcpy == MemcpyLayout::kMemcpy5 ? sizeof(CUpti_ActivityMemcpy5) : sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return l.sync == SyncLayout::kSynchronization ? sizeof(CUpti_ActivitySynchronization)
                                                    : sizeof(CUpti_ActivitySynchronization2);
    // A 12.x CUPTI may still deliver the smallest of Memory2/3/4 (the decoder
    // reads only their common prefix): the smallest is what is given.
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return l.memory == MemoryLayout::kMemory3 ? sizeof(CUpti_ActivityMemory2) : sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return l.overhead == OverheadLayout::kOverhead    ? sizeof(CUpti_ActivityOverhead)
             : l.overhead == OverheadLayout::kOverhead2 ? sizeof(CUpti_ActivityOverhead2)
                                                         : sizeof(CUpti_ActivityOverhead3);
    default: return sizeof(CUpti_Activity);  // an unknown kind: only its kind is read
  }
}

// Input format (little-endian):
//   u8 version index (mod kVersionCount), i64 clock offset (CUPTI -> agent, ns),
//   then records: u8 kind index (mod kKindCount), u8 name length (kernels:
//   the name the record's `name` points to; 0: NULL), the name's bytes, then
//   DeliveredSize bytes of the record (short input is zero-filled; the kind
//   field is set from the kind byte).
inline constexpr size_t kHeaderBytes = 9;

// Offset of the kernel record's `name` pointer (the same in Kernel9 and 10).
static_assert(offsetof(CUpti_ActivityKernel9, name) == offsetof(CUpti_ActivityKernel10, name));
inline constexpr size_t kKernelNameOffset = offsetof(CUpti_ActivityKernel10, name);

}  // namespace fuzz
