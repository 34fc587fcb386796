#include "exporters/common/cuda_names.h"

namespace prof {

const char* MemcpyKindName(uint8_t copy_kind) {
  static constexpr const char* kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : "Unknown";
}

const char* MemoryKindName(uint8_t memory_kind) {
  static constexpr const char* kNames[] = {"Unknown", "Pageable", "Pinned",       "Device",
                                           "Array",   "Managed",  "Device Static", "Managed Static"};
  return memory_kind < std::size(kNames) ? kNames[memory_kind] : "Unknown";
}

std::string MemcpyName(const DeviceRecord& record) {
  return std::string("Memcpy ") + MemcpyKindName(record.copy_kind) + " (" + MemoryKindName(record.src_kind) +
         " -> " + MemoryKindName(record.dst_kind) + ")";
}

std::string MemsetName(const DeviceRecord& record) {
  return std::string("Memset (") + MemoryKindName(record.dst_kind) + ")";
}

const char* SyncKindName(uint32_t sync_type) {
  switch (sync_type) {
    case 1: return "Event Sync";
    case 2: return "Stream Wait Event";
    case 3: return "Stream Sync";
    case 4: return "Context Sync";
    default: return "Unknown Sync";
  }
}

}  // namespace prof
