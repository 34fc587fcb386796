// What CUPTI says about the device: support checks, chip name,
// virtualization. The simulated H100 (GH100, compute capability 9.0) runs
// no counters, so the counter-based profilers answer "unsupported" through
// the documented query (cuptiProfilerDeviceSupported) and their other entry
// points (unsupported.cpp) CUPTI_ERROR_NOT_SUPPORTED.
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "internal.h"

using simcupti::Status;

// CUDA 13's CUPTI supports compute capability 7.5 and newer.
CUptiResult CUPTIAPI cuptiComputeCapabilitySupported(int major, int minor, int* support) {
  if (support == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  *support = (major > 7 || (major == 7 && minor >= 5)) ? 1 : 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceSupported(CUdevice dev, int* support) {
  if (support == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  if (dev != 0) return Status(CUPTI_ERROR_INVALID_DEVICE);
  *support = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceVirtualizationMode(CUdevice dev, CUpti_DeviceVirtualizationMode* mode) {
  if (mode == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  if (dev != 0) return Status(CUPTI_ERROR_INVALID_DEVICE);
  *mode = CUPTI_DEVICE_VIRTUALIZATION_MODE_NONE;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* params) {
  if (params == nullptr || params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  if (params->deviceIndex != 0) return Status(CUPTI_ERROR_INVALID_DEVICE);
  params->pChipName = "GH100";
  return CUPTI_SUCCESS;
}

// Documented: CUPTI_ERROR_NOT_SUPPORTED when the device has no auto boost.
CUptiResult CUPTIAPI cuptiGetAutoBoostState(CUcontext context, CUpti_ActivityAutoBoostState* state) {
  if (context == nullptr || state == nullptr) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return Status(CUPTI_ERROR_NOT_SUPPORTED);
}

// The host-side part of the profiler API initialises on any machine.
CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params* params) {
  if (params == nullptr || params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params* params) {
  if (params == nullptr || params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  return CUPTI_SUCCESS;
}

// The documented way to ask whether profiling and PC sampling work: not on
// the simulated device, whose architecture has no performance counters.
CUptiResult CUPTIAPI cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params* params) {
  if (params == nullptr || params->structSize == 0) return Status(CUPTI_ERROR_INVALID_PARAMETER);
  if (params->cuDevice != 0) return Status(CUPTI_ERROR_INVALID_DEVICE);
  params->architecture = CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED;
  params->sli = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  params->vGpu = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  params->confidentialCompute = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  params->cmp = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  params->wsl = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
  params->isSupported = CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED;
  return CUPTI_SUCCESS;
}
