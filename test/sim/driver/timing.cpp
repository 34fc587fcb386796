#include "timing.h"

#include <cupti_activity.h>

#include <cstdlib>
#include <mutex>
#include <utility>
#include <vector>

#include "../hub.h"

namespace sim {
namespace {

using KernelTable = std::vector<std::pair<std::string, uint64_t>>;

// SIM_KERNEL_NS is parsed once; malformed entries are ignored (and listed
// nowhere: the tests that use the table check the resulting durations).
const KernelTable& Table() {
  static const KernelTable table = [] {
    KernelTable parsed;
    const char* spec = simhub_fault("KERNEL_NS");
    std::string text = spec ? spec : "";
    size_t pos = 0;
    while (pos <= text.size() && !text.empty()) {
      size_t comma = text.find(',', pos);
      std::string entry = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      size_t eq = entry.rfind('=');
      if (eq != std::string::npos && eq > 0) {
        char* end = nullptr;
        unsigned long long ns = strtoull(entry.c_str() + eq + 1, &end, 10);
        if (end && *end == '\0' && eq + 1 < entry.size()) parsed.emplace_back(entry.substr(0, eq), ns);
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
    return parsed;
  }();
  return table;
}

uint64_t Transfer(uint64_t bytes, uint64_t latency_ns, uint64_t bytes_per_ns) {
  return latency_ns + (bytes + bytes_per_ns - 1) / bytes_per_ns;
}

}  // namespace

uint64_t KernelDurationNs(const std::string& mangled, const std::string& demangled, uint64_t blocks) {
  for (const auto& [substring, ns] : Table()) {
    if (mangled.find(substring) != std::string::npos || demangled.find(substring) != std::string::npos) return ns;
  }
  return kKernelBaseNs + kKernelPerBlockNs * blocks;
}

uint64_t CopyDurationNs(uint64_t bytes, int copy_kind, int src_kind, int dst_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return Transfer(bytes, kCopyLatencyNs,
                      src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ? kPinnedBytesPerNs : kPageableBytesPerNs);
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return Transfer(bytes, kCopyLatencyNs,
                      dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED ? kPinnedBytesPerNs : kPageableBytesPerNs);
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return Transfer(bytes, kCopyLatencyNs, kDeviceBytesPerNs);
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return Transfer(bytes, kCopyLatencyNs, kPeerBytesPerNs);
    default:
      return Transfer(bytes, kCopyLatencyNs, kPageableBytesPerNs);
  }
}

uint64_t MemsetDurationNs(uint64_t bytes) { return Transfer(bytes, kMemsetLatencyNs, kMemsetBytesPerNs); }

}  // namespace sim
