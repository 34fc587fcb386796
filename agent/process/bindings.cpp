#include "agent/process/bindings.h"

#include "agent/session/device_props.h"

#include "collectors/cupti/cupti_collector.h"
#include "collectors/interpose/real_functions.h"

namespace prof {

std::unique_ptr<DeviceCollector> MakeDeviceCollector() { return MakeCuptiCollector(); }

void EnrichWindow(Window* window) {
  using RuntimeVersion = int (*)(int*);
  using DriverVersion = int (*)(int*);
  // Only if the process loaded them: never load a CUDA library ourselves.
  if (auto fn = interpose::Real<RuntimeVersion>(interpose::Extra::kCudaRuntimeGetVersion)) {
    int v = 0;
    if (fn(&v) == 0) window->meta.cuda_runtime_version = v;
  }
  if (auto fn = interpose::Real<DriverVersion>(interpose::Extra::kCuDriverGetVersion)) {
    int v = 0;
    if (fn(&v) == 0) window->meta.cuda_driver_version = v;
  }
  if (window->devices.empty()) window->devices = QueryDeviceProps();
}

}  // namespace prof
