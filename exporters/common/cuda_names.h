// Names Kineto (and nsys) give to CUPTI's enumerations, so our traces and
// summaries read like theirs. Values follow cupti_activity.h; only
// collectors/cupti includes that header, so the numbers are repeated here.
#pragma once

#include <cstdint>
#include <string>

#include "model/events.h"

namespace prof {

// CUpti_ActivityMemcpyKind: "HtoD", "DtoH", ...
const char* MemcpyKindName(uint8_t copy_kind);
// CUpti_ActivityMemoryKind: "Pageable", "Pinned", "Device", ...
const char* MemoryKindName(uint8_t memory_kind);
// "Memcpy HtoD (Pageable -> Device)", as Kineto names copies.
std::string MemcpyName(const DeviceRecord& record);
// "Memset (Device)".
std::string MemsetName(const DeviceRecord& record);
// CUpti_ActivitySynchronizationType: "Stream Sync", "Context Sync", ...
const char* SyncKindName(uint32_t sync_type);

inline constexpr uint8_t kCuptiMemcpyHtoD = 1;
inline constexpr uint8_t kCuptiMemcpyDtoH = 2;
inline constexpr uint8_t kCuptiMemcpyDtoD = 8;
inline constexpr uint8_t kCuptiMemoryPageable = 1;
inline constexpr uint8_t kCuptiMemoryPinned = 2;
// CUPTI's "no stream" value in synchronization records.
inline constexpr uint32_t kCuptiInvalidStream = 0xFFFFFFFFu;

}  // namespace prof
