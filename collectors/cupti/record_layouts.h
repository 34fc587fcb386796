// Which struct each activity kind arrives in, per CUPTI release.
//
// CUPTI writes the newest record struct of its own release, whatever headers
// the client was built with, so one libprof.so serving CUDA 12.0 through 13.2
// picks each kind's layout from cuptiGetVersion (record_layouts.cpp cites
// NVIDIA's documentation for each fact). A version outside the known range
// has no layout: the collector then runs interception-only.
#pragma once

#include <cstdint>
#include <string>

namespace prof::cupti {

enum class KernelLayout : uint8_t { kKernel9, kKernel10, kKernel11 };
enum class MemcpyLayout : uint8_t { kMemcpy5, kMemcpy6 };
enum class SyncLayout : uint8_t { kSynchronization, kSynchronization2 };
enum class MemoryLayout : uint8_t { kMemory3, kMemory4 };
enum class OverheadLayout : uint8_t { kOverhead, kOverhead2, kOverhead3 };

struct RecordLayouts {
  KernelLayout kernel = KernelLayout::kKernel10;
  MemcpyLayout memcpy = MemcpyLayout::kMemcpy6;
  SyncLayout sync = SyncLayout::kSynchronization2;
  MemoryLayout memory = MemoryLayout::kMemory4;
  OverheadLayout overhead = OverheadLayout::kOverhead3;
  // MEMCPY2 (MemcpyPtoP4), MEMSET (Memset4), RUNTIME/DRIVER (API) have one
  // layout over the whole supported range.
  // Runtime callback ids named as CUDA 12.x names them (api_classes.h).
  bool cuda12_runtime_names = false;
};

// The layouts of CUPTI API version `version` (cuptiGetVersion). False when
// the version is outside SupportedCuptiRange().
bool LayoutsFor(uint32_t version, RecordLayouts* out);

// "19 (CUDA 12.0) to 28 (CUDA 12.9 Update 1), 130000 to 130299 (CUDA 13.0 to 13.2)"
const char* SupportedCuptiRange();

// The CUDA release an API version belongs to ("12.4", "13.0"), or "" if unknown.
std::string CuptiRelease(uint32_t version);

// "Kernel9, Memcpy5, Synchronization, Memory3": for the log.
std::string DescribeLayouts(const RecordLayouts& layouts);

}  // namespace prof::cupti
