// How the sim describes every kernel, for the runtime's and the driver's
// attribute and occupancy queries alike. The sim does not parse device code,
// so every kernel is the model's: 32 registers per thread, no static shared,
// local or constant memory, sm_90 binary and PTX. Occupancy follows the
// H100's per-SM limits (2048 threads, 32 blocks, 65536 registers, 228 KiB
// shared memory of which 1 KiB is reserved per block).
#pragma once

#include <stddef.h>

#include <algorithm>

namespace sim {

// The model's constants: numbers, not logic.
inline constexpr int kRegistersPerThread = 32;
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr int kWarpSize = 32;
inline constexpr int kMaxWarpsPerSm = 64;
inline constexpr int kMaxBlocksPerSm = 32;
inline constexpr int kRegistersPerSm = 65536;
inline constexpr size_t kSharedPerSm = 233472;          // 228 KiB
inline constexpr size_t kReservedSharedPerBlock = 1024;  // reserved by the driver per block (sm_80+)
inline constexpr int kDefaultMaxDynamicShared = 48 * 1024;
inline constexpr int kOptInMaxShared = 232448;           // 227 KiB
inline constexpr int kBinaryVersion = 90;                // sm_90 binary and PTX

// Active blocks of `block_size` threads per SM (0 when the block cannot run)
// for a kernel allowed `max_dynamic_shared` bytes of dynamic shared memory.
inline int ActiveBlocksPerSm(int block_size, size_t dynamic_shared, int max_dynamic_shared) {
  if (block_size <= 0 || block_size > kMaxThreadsPerBlock) return 0;
  if (dynamic_shared > static_cast<size_t>(max_dynamic_shared)) return 0;
  const int warps = (block_size + kWarpSize - 1) / kWarpSize;
  int blocks = std::min(kMaxBlocksPerSm, kMaxWarpsPerSm / warps);
  blocks = std::min(blocks, kRegistersPerSm / (warps * kWarpSize * kRegistersPerThread));
  const size_t shared = dynamic_shared + kReservedSharedPerBlock;
  return std::min(blocks, static_cast<int>(kSharedPerSm / shared));
}

}  // namespace sim
