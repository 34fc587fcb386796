#include "agent/process/bindings.h"

#include "agent/session/device_props.h"

#include "collectors/cupti/cupti_collector.h"
#include "collectors/interpose/real_functions.h"
#include "exporters/window_files.h"

namespace prof {

std::unique_ptr<DeviceCollector> MakeDeviceCollector() { return MakeCuptiCollector(); }

WindowSink MakeWindowSink(const Config& config) {
  OutputOptions options;
  options.output_dir = config.output_dir;
  options.chrome = config.write_chrome;
  options.summary = config.write_summary;
  options.html = config.write_html;
  options.stacks = config.write_stacks;
  options.gzip = config.gzip;
  return [options](const Window& window, std::string* error) { return WriteWindowFiles(window, options, error); };
}

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
