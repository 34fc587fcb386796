#include "collectors/cupti/record_layouts.h"

namespace prof::cupti {
namespace {

// CUPTI API versions (cupti_version.h of CUDA 13.0): v19 = CUDA 12.0,
// v20 = 12.2, v21 = 12.3, v22 = 12.4, v23 = 12.5, v24 = 12.6, v26 = 12.8,
// v27 = 12.9, v28 = 12.9 Update 1; from 13.0 the form is xxyyzz
// (130000 = 13.0, 130001 = 13.0 Update 1).
constexpr uint32_t kFirst12 = 19;
constexpr uint32_t kLast12 = 28;
constexpr uint32_t kFirst13 = 130000;
constexpr uint32_t kFirst131 = 130100;
// CUPTI 13.3 replaced CUpti_ActivityKernel11 by CUpti_ActivityKernel12
// (CUPTI Python 13.3.0 release notes), whose layout no header libprof is
// checked against describes: 13.3 and later are out of range until it is.
constexpr uint32_t kLast13 = 130299;
constexpr uint32_t kCuda124 = 22;
constexpr uint32_t kCuda128 = 26;
constexpr uint32_t kCuda122 = 20;

}  // namespace

bool LayoutsFor(uint32_t version, RecordLayouts* out) {
  const bool is12 = version >= kFirst12 && version <= kLast12;
  const bool is13 = version >= kFirst13 && version <= kLast13;
  if (!is12 && !is13) return false;
  RecordLayouts l;
  // Kernels: CUPTI release notes, "Updates in CUDA 12.0": CUpti_ActivityKernel8
  // deprecated and replaced by CUpti_ActivityKernel9 (the 12.8 API reference
  // still says kernels "are now reported using the CUpti_ActivityKernel9
  // activity record"); CUPTI Python 13.0.0 release notes: Kernel10 introduced,
  // Kernel9 dropped; CUPTI release notes, "Updates in CUDA 13.1": a new
  // `priority` field, "CUpti_ActivityKernel10 ... replaced by the new
  // CUpti_ActivityKernel11" (cupti_13_2.h: Kernel10 plus priority and
  // padding, as 13.2's cupti_activity.h lays it out). Every other kind
  // libprof decodes has the same struct in 13.2's header as in 13.0's.
  l.kernel = !is13                 ? KernelLayout::kKernel9
             : version >= kFirst131 ? KernelLayout::kKernel11
                                    : KernelLayout::kKernel10;
  // Copies and synchronizations: cupti_activity_deprecated.h (CUDA 13.0):
  // CUpti_ActivityMemcpy5 and CUpti_ActivitySynchronization "deprecated in
  // CUDA 12.8" (CUPTI Python 12.8.0: Memcpy6 and Synchronization2
  // introduced). Memcpy5 replaced Memcpy4 in 11.6 (same header).
  l.memcpy = is13 || version >= kCuda128 ? MemcpyLayout::kMemcpy6 : MemcpyLayout::kMemcpy5;
  l.sync = is13 || version >= kCuda128 ? SyncLayout::kSynchronization2 : SyncLayout::kSynchronization;
  // Memory (MEMORY2): CUpti_ActivityMemory4 is CUpti_ActivityMemory3 plus a
  // trailing `source`, and Memory3 is Memory2 plus a trailing `utilizedSize`
  // (both headers); the fields libprof reads sit at the same offsets in all
  // three (static_asserts in activity_decoder.cpp), so whichever 12.x
  // delivers, reading it as Memory3 never reads past the record.
  l.memory = is13 ? MemoryLayout::kMemory4 : MemoryLayout::kMemory3;
  // Overhead: CUPTI release notes, "Updates in CUDA 12.4": Overhead2
  // replaced by Overhead3; cupti_activity_deprecated.h: CUpti_ActivityOverhead
  // "Deprecated in CUDA 12.2".
  l.overhead = is13 || version >= kCuda124  ? OverheadLayout::kOverhead3
               : version >= kCuda122        ? OverheadLayout::kOverhead2
                                            : OverheadLayout::kOverhead;
  l.cuda12_runtime_names = is12;
  *out = l;
  return true;
}

const char* SupportedCuptiRange() {
  return "CUPTI API version 19 (CUDA 12.0) to 28 (CUDA 12.9 Update 1) and 130000 to 130299 (CUDA 13.0 to 13.2)";
}

std::string CuptiRelease(uint32_t version) {
  switch (version) {
    case 19: return "12.0/12.1";
    case 20: return "12.2";
    case 21: return "12.3";
    case 22: return "12.4";
    case 23: return "12.5";
    case 24: return "12.6";
    case 25: return "12.6/12.7";
    case 26: return "12.8";
    case 27: return "12.9";
    case 28: return "12.9 Update 1";
    default: break;
  }
  if (version >= 1 && version < kFirst12) return "11.8 or older";
  if (version >= 100000 && version < 1000000) {
    return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100);
  }
  return "";
}

std::string DescribeLayouts(const RecordLayouts& l) {
  std::string s = l.kernel == KernelLayout::kKernel9    ? "Kernel9"
                  : l.kernel == KernelLayout::kKernel10 ? "Kernel10"
                                                        : "Kernel11";
  s += l.memcpy == MemcpyLayout::kMemcpy5 ? ", Memcpy5" : ", Memcpy6";
  s += ", MemcpyPtoP4, Memset4";
  s += l.sync == SyncLayout::kSynchronization ? ", Synchronization" : ", Synchronization2";
  s += l.memory == MemoryLayout::kMemory3 ? ", Memory3" : ", Memory4";
  s += l.overhead == OverheadLayout::kOverhead   ? ", Overhead"
       : l.overhead == OverheadLayout::kOverhead2 ? ", Overhead2"
                                                  : ", Overhead3";
  return s;
}

}  // namespace prof::cupti
