// The simulated device's timing model: how long each kind of device work
// takes. Pure and deterministic; the numbers are documented in README.md.
#pragma once

#include <stdint.h>

#include <string>

namespace sim {

// The model's constants: numbers, not logic.
// Work never starts earlier than this after the API call that enqueued it.
inline constexpr uint64_t kLaunchLatencyNs = 2000;

// Kernels without an entry in SIM_KERNEL_NS: base + per-block cost.
inline constexpr uint64_t kKernelBaseNs = 2000;
inline constexpr uint64_t kKernelPerBlockNs = 10;

// Copies: fixed latency + bytes / bandwidth (bytes per ns == GB/s).
inline constexpr uint64_t kCopyLatencyNs = 1500;
inline constexpr uint64_t kPinnedBytesPerNs = 25;    // H2D / D2H from page-locked memory
inline constexpr uint64_t kPageableBytesPerNs = 10;  // H2D / D2H from pageable memory, H2H
inline constexpr uint64_t kDeviceBytesPerNs = 1000;  // D2D
inline constexpr uint64_t kPeerBytesPerNs = 50;      // P2P

// Memset: fixed latency + bytes at device bandwidth.
inline constexpr uint64_t kMemsetLatencyNs = 1000;
inline constexpr uint64_t kMemsetBytesPerNs = 2000;

// Synchronize calls (cuStreamSynchronize, cuEventSynchronize,
// cuCtxSynchronize) return no earlier than the driver's own cost after the
// call began, and no earlier than a wake-up delay after the work they waited
// for ended: return = max(start + idle cost, work end + wake-up). Calibrated
// on the Kineto traces in shared/data/kineto-traces (see README.md).
inline constexpr uint64_t kStreamSyncIdleNs = 8000;    // stream and event syncs
inline constexpr uint64_t kContextSyncIdleNs = 14000;  // device (context) syncs
inline constexpr uint64_t kSyncWakeNs = 5000;
inline uint64_t SyncReturnNs(uint64_t start_ns, uint64_t work_end_ns, uint64_t idle_ns) {
  return start_ns + idle_ns > work_end_ns + kSyncWakeNs ? start_ns + idle_ns : work_end_ns + kSyncWakeNs;
}

// Duration of a kernel. SIM_KERNEL_NS="substring=ns,..." entries win (first
// one whose substring occurs in the mangled or demangled name).
uint64_t KernelDurationNs(const std::string& mangled, const std::string& demangled, uint64_t blocks);

// copy_kind / memory kinds are CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind.
uint64_t CopyDurationNs(uint64_t bytes, int copy_kind, int src_kind, int dst_kind);
uint64_t MemsetDurationNs(uint64_t bytes);

}  // namespace sim
