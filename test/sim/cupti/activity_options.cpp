// Activity options NVIDIA's libcupti.so.13 has beyond the core API
// (activity_api.cpp): switches the sim accepts and stores because its
// records already satisfy them, and the ones the simulated H100 cannot
// honour, answered as documented.
#include <atomic>

#include "internal.h"

namespace simcupti {
namespace {

struct Options {
  std::atomic<bool> all_sync_records{false};
  std::atomic<bool> allocation_source{false};
  std::atomic<bool> cuda_event_device_timestamps{false};
  std::atomic<bool> device_graph{false};
  std::atomic<bool> launch_attributes{false};
};
Options& TheOptions() {
  static Options* options = new Options();
  return *options;
}

}  // namespace
}  // namespace simcupti

using simcupti::Status;

// Every synchronisation the sim models already gets a record.
CUptiResult CUPTIAPI cuptiActivityEnableAllSyncRecords(uint8_t enable) {
  simcupti::TheOptions().all_sync_records.store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableAllocationSource(uint8_t enable) {
  simcupti::TheOptions().allocation_source.store(enable != 0);
  return CUPTI_SUCCESS;
}

// Device timestamps of CUDA_EVENT records: the sim writes no CUDA_EVENT
// records (README "Not simulated"), so the switch only changes state.
CUptiResult CUPTIAPI cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable) {
  simcupti::TheOptions().cuda_event_device_timestamps.store(enable != 0);
  return CUPTI_SUCCESS;
}

// One setter per cuptiActivityEnable* switch: the API's entry points, each storing its own option.
// Graph-level records instead of node-level ones: not simulated; the switch
// is stored and node-level records keep coming, as with a device that does
// not support it.
CUptiResult CUPTIAPI cuptiActivityEnableDeviceGraph(uint8_t enable) {
  simcupti::TheOptions().device_graph.store(enable != 0);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnableLaunchAttributes(uint8_t enable) {
  simcupti::TheOptions().launch_attributes.store(enable != 0);
  return CUPTI_SUCCESS;
}

// Documented: "only available on Blackwell"; the simulated device is a Hopper.
CUptiResult CUPTIAPI cuptiActivityEnableHWTrace(uint8_t enable) {
  if (CUptiResult r = simcupti::EnsureInitialized(); r != CUPTI_SUCCESS) return Status(r);
  return enable ? Status(CUPTI_ERROR_NOT_SUPPORTED) : CUPTI_SUCCESS;
}

// Unified-memory counters: nothing migrates in the sim, so a valid
// configuration is accepted and never produces a record.
CUptiResult CUPTIAPI cuptiActivityConfigureUnifiedMemoryCounter(CUpti_ActivityUnifiedMemoryCounterConfig* config,
                                                                uint32_t count) {
  if (config == nullptr || count == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  for (uint32_t i = 0; i < count; ++i) {
    if (config[i].kind <= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_UNKNOWN ||
        config[i].kind >= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT) {
      return Status(CUPTI_ERROR_INVALID_PARAMETER);
    }
    if (config[i].scope != CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE &&
        config[i].scope != CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_ALL_DEVICES) {
      return Status(CUPTI_ERROR_INVALID_PARAMETER);
    }
  }
  return CUPTI_SUCCESS;
}
