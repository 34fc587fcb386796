// CUPTI activity records -> prof::DeviceRecord (model/events.h), each kind
// read through the struct the loaded CUPTI delivers (record_layouts.h: CUDA
// 12.x Kernel9, Memcpy5/6, Synchronization/2, Memory3; CUDA 13.0 Kernel10,
// Memcpy6, Synchronization2, Memory4; 13.1 and 13.2 the same but Kernel11;
// MemcpyPtoP4, Memset4 and API throughout). Only fields of that struct are
// read; what it lacks stays 0.
#pragma once

#include <cupti.h>

#include "model/events.h"
#include "collectors/cupti/clock_map.h"
#include "collectors/cupti/name_table.h"
#include "collectors/cupti/record_layouts.h"

namespace prof::cupti {

enum class DecodeStatus {
  kRecord,       // *out holds a record
  kFiltered,     // a known kind deliberately not kept (e.g. a driver call that is not a launch)
  kNoTimestamp,  // CUPTI could not time it (start or end 0, or end < start); *out has its kind and correlation id
  kUnknownKind,  // a kind this decoder does not know: counted, not fatal
};

struct DecodeContext {
  NameTable* names;
  const ClockMap* clock;
  const RecordLayouts* layouts = nullptr;  // nullptr: CUDA 13.0's
};

DecodeStatus DecodeActivity(const CUpti_Activity& activity, const DecodeContext& context, DeviceRecord* out);

}  // namespace prof::cupti
