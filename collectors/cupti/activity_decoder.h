// CUPTI activity records -> prof::DeviceRecord (agent/events.h), from the
// structs of the headers libprof is built with (CUDA 13: Kernel10, Memcpy6,
// MemcpyPtoP4, Memset4, API, Synchronization2, Memory4, Overhead3).
#pragma once

#include <cupti.h>

#include "agent/events.h"
#include "collectors/cupti/clock_map.h"
#include "collectors/cupti/name_table.h"

namespace prof::cupti {

enum class DecodeStatus {
  kRecord,       // *out holds a record
  kFiltered,     // a known kind deliberately not kept (e.g. a driver call that is not a launch)
  kNoTimestamp,  // CUPTI could not time it (start or end 0, or end < start)
  kUnknownKind,  // a kind this decoder does not know: counted, not fatal
};

struct DecodeContext {
  NameTable* names;
  const ClockMap* clock;
};

DecodeStatus DecodeActivity(const CUpti_Activity& activity, const DecodeContext& context, DeviceRecord* out);

}  // namespace prof::cupti
