// Driver: initialisation, versions, device queries, primary context, errors.
#define __CUDA_API_VERSION_INTERNAL 1  // exact entry-point names, as the driver itself is built
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "device.h"
#include "device_attributes.h"
#include "driver_call.h"
#include "personality.h"

namespace sim {
namespace {
// 0: cuInit not called, 1: succeeded, 2: failed (SIM_NO_DRIVER),
// 3: this is a forked child of a process that had initialised the driver.
std::atomic<int> g_init_state{0};

// CUDA does not survive fork: a child of an initialised process gets
// initialization errors from every call (NVIDIA: use of CUDA between fork
// and exec is undefined; in practice calls fail with error 3).
void MarkForkedChild() {
  if (g_init_state.load() == 1) g_init_state.store(3);
}
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &MarkForkedChild);

constexpr char kDeviceName[] = "NVIDIA H100 80GB HBM3 (simulated)";

// Data, not logic: each simulated library answers from its own table of its own enum.
struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* FindError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

// What NVIDIA's driver does for tools: on the first successful cuInit, load
// the library named by CUDA_INJECTION64_PATH and call its
// InitializeInjection(). A missing library or entry point is ignored, as
// the real driver carries on without the tool.
void LoadInjectionLibrary() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return;
  using InitFn = int (*)();
  if (auto init = reinterpret_cast<InitFn>(dlsym(handle, "InitializeInjection"))) init();
}

}  // namespace

bool DriverInitialized() { return g_init_state.load(std::memory_order_acquire) == 1; }

}  // namespace sim

using sim::DriverCall;
using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuInit(unsigned int Flags) {
  cuInit_params params{Flags};
  const CUresult result = DriverCall(SIM_DRIVER_CBID(cuInit), "cuInit", &params, [&]() -> CUresult {
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (sim::g_init_state.load() == 3) return CUDA_ERROR_NOT_INITIALIZED;
    // A machine without a usable driver: cuInit reports no device, and stays failed.
    if (simhub_fault("NO_DRIVER")) {
      sim::g_init_state.store(2);
      return CUDA_ERROR_NO_DEVICE;
    }
    sim::g_init_state.store(1, std::memory_order_release);
    return CUDA_SUCCESS;
  });
  static std::once_flag injection_once;
  if (result == CUDA_SUCCESS) std::call_once(injection_once, sim::LoadInjectionLibrary);
  return result;
}

SIM_DRIVER_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  cuDriverGetVersion_params params{driverVersion};
  return DriverCall(SIM_DRIVER_CBID(cuDriverGetVersion), "cuDriverGetVersion", &params, [&]() -> CUresult {
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = SIM_CUDA_VERSION;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDeviceGetCount(int* count) {
  cuDeviceGetCount_params params{count};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetCount), "cuDeviceGetCount", &params, [&]() -> CUresult {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = sim::Device::Count();
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  cuDeviceGet_params params{device, ordinal};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGet), "cuDeviceGet", &params, [&]() -> CUresult {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  cuDeviceGetName_params params{name, len, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetName), "cuDeviceGetName", &params, [&]() -> CUresult {
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, static_cast<size_t>(len), "%s", sim::kDeviceName);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  cuDeviceTotalMem_v2_params params{bytes, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceTotalMem_v2), "cuDeviceTotalMem_v2", &params, [&]() -> CUresult {
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = sim::Device::kTotalMemBytes;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  cuDeviceGetAttribute_params params{pi, attrib, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetAttribute), "cuDeviceGetAttribute", &params, [&]() -> CUresult {
    if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pi = sim::DeviceAttribute(attrib, dev);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  cuDevicePrimaryCtxRetain_params params{pctx, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain", &params, [&]() -> CUresult {
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pctx = sim::Device::At(dev)->RetainPrimaryContext();
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  cuDevicePrimaryCtxReset_v2_params params{dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDevicePrimaryCtxReset_v2), "cuDevicePrimaryCtxReset_v2", &params, [&]() -> CUresult {
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    sim::WaitUntilNs(sim::Device::At(dev)->DeviceDoneNs());
    sim::Device::At(dev)->ResetPrimaryContext();
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  cuCtxGetCurrent_params params{pctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxGetCurrent), "cuCtxGetCurrent", &params, [&]() -> CUresult {
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = sim::Device::CurrentContext();
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  cuGetErrorString_params params{error, pStr};
  return DriverCall(SIM_DRIVER_CBID(cuGetErrorString), "cuGetErrorString", &params, [&]() -> CUresult {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    const sim::ErrorText* e = sim::FindError(error);
    *pStr = e ? e->text : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

SIM_DRIVER_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  cuGetErrorName_params params{error, pStr};
  return DriverCall(SIM_DRIVER_CBID(cuGetErrorName), "cuGetErrorName", &params, [&]() -> CUresult {
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    const sim::ErrorText* e = sim::FindError(error);
    *pStr = e ? e->name : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
// The current context's device (a thread that made none current is on
// device 0's primary, once it exists: the runtime retains it on first use).
SIM_DRIVER_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  cuCtxGetDevice_params params{device};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxGetDevice), "cuCtxGetDevice", &params, [&]() -> CUresult {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    CUcontext current = sim::Device::CurrentContext();
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *device = current->device;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  cuCtxSetCurrent_params params{ctx};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuCtxSetCurrent), "cuCtxSetCurrent", &params, [&]() -> CUresult {
    // A created context becomes this thread's current; the primary (or NULL,
    // which the sim treats as the primary) clears it.
    return sim::SetCurrent(ctx);
  });
}

SIM_DRIVER_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  cuDevicePrimaryCtxRelease_v2_params params{dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDevicePrimaryCtxRelease_v2), "cuDevicePrimaryCtxRelease_v2", &params,
                               [&] { return sim::Device::At(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; });
}

// The bus id as "domain:bus:device.function" from the device's PCI
// attributes, as lspci and nvidia-smi print it.
SIM_DRIVER_EXPORT CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  cuDeviceGetPCIBusId_params params{pciBusId, len, dev};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuDeviceGetPCIBusId), "cuDeviceGetPCIBusId", &params, [&]() -> CUresult {
    if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::Device::At(dev)) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(pciBusId, static_cast<size_t>(len), "%08x:%02x:%02x.0",
                  sim::DeviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev),
                  sim::DeviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev),
                  sim::DeviceAttribute(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev));
    return CUDA_SUCCESS;
  });
}
