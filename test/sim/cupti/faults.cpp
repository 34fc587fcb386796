// SIM_* fault switches, read through the hub (it owns the environment).
#include <cstdlib>
#include <cstring>

#include "internal.h"

namespace simcupti {
namespace {

bool IsOne(const char* value) { return value != nullptr && std::strcmp(value, "1") == 0; }

}  // namespace

Faults CurrentFaults() {
  Faults faults;
  if (const char* name = simhub_fault("CUPTI_SUBSCRIBER"); name != nullptr && *name != '\0') {
    faults.other_subscriber = name;
  }
  if (const char* mode = simhub_fault("CUPTI_SUBSCRIBERS"); mode != nullptr) {
    faults.multi_subscribers = std::strcmp(mode, "multi") == 0;
  }
  faults.init_fail = IsOne(simhub_fault("CUPTI_INIT_FAIL"));
  faults.null_buffers = IsOne(simhub_fault("CUPTI_NULL_BUFFERS"));
  if (const char* late = simhub_fault("CUPTI_LATE_MS"); late != nullptr) {
    char* end = nullptr;
    unsigned long long ms = std::strtoull(late, &end, 10);
    if (end != late) faults.late_ns = static_cast<uint64_t>(ms) * 1000000ull;
  }
  faults.no_driver = IsOne(simhub_fault("NO_DRIVER"));
  faults.check_zeroed = IsOne(simhub_fault("CUPTI_CHECK_ZEROED"));
  return faults;
}

}  // namespace simcupti
