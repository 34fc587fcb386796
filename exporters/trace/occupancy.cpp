#include "exporters/trace/occupancy.h"

#include <algorithm>
#include <cstdint>

namespace prof {

bool ComputeOccupancy(const DeviceRecord& kernel, const DeviceProps& device, Occupancy* out) {
  *out = Occupancy{};
  int64_t blocks = int64_t{kernel.grid[0]} * kernel.grid[1] * kernel.grid[2];
  int64_t threads = int64_t{kernel.block[0]} * kernel.block[1] * kernel.block[2];
  if (blocks <= 0 || threads <= 0 || device.sm_count <= 0 || device.warp_size <= 0) return false;
  int64_t warps_per_block = (threads + device.warp_size - 1) / device.warp_size;
  out->blocks_per_sm = static_cast<double>(blocks) / device.sm_count;
  out->warps_per_sm = out->blocks_per_sm * static_cast<double>(warps_per_block);

  if (device.max_threads_per_sm <= 0) return true;
  // Resident blocks per SM: the tightest of each resource's limit.
  int64_t limit = device.max_threads_per_sm / (warps_per_block * device.warp_size);
  if (device.max_blocks_per_sm > 0) limit = std::min<int64_t>(limit, device.max_blocks_per_sm);
  int64_t regs_per_block = int64_t{kernel.registers_per_thread} * warps_per_block * device.warp_size;
  if (device.max_regs_per_sm > 0 && regs_per_block > 0) {
    limit = std::min<int64_t>(limit, device.max_regs_per_sm / regs_per_block);
  }
  int64_t shared = int64_t{kernel.static_shared_bytes} + kernel.dynamic_shared_bytes;
  if (device.max_shared_per_sm > 0 && shared > 0) {
    limit = std::min<int64_t>(limit, device.max_shared_per_sm / shared);
  }
  double max_warps = static_cast<double>(device.max_threads_per_sm) / device.warp_size;
  double resident_warps = std::min(out->warps_per_sm, static_cast<double>(limit * warps_per_block));
  out->achieved_percent = std::clamp(100.0 * resident_warps / max_warps, 0.0, 100.0);
  out->has_achieved = true;
  return true;
}

}  // namespace prof
