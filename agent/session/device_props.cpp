#include "agent/session/device_props.h"

#include <cuda.h>  // types and attribute numbers only: the driver is never linked
#include <dlfcn.h>

#include <mutex>

namespace prof {
namespace {

struct Driver {
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
};

bool LoadDriver(Driver* d) {
  // RTLD_NOLOAD: only a driver the process loaded itself (even RTLD_LOCAL).
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  d->device_get_count = reinterpret_cast<decltype(d->device_get_count)>(dlsym(handle, "cuDeviceGetCount"));
  d->device_get = reinterpret_cast<decltype(d->device_get)>(dlsym(handle, "cuDeviceGet"));
  d->device_get_name = reinterpret_cast<decltype(d->device_get_name)>(dlsym(handle, "cuDeviceGetName"));
  d->device_total_mem = reinterpret_cast<decltype(d->device_total_mem)>(dlsym(handle, "cuDeviceTotalMem_v2"));
  d->device_get_attribute =
      reinterpret_cast<decltype(d->device_get_attribute)>(dlsym(handle, "cuDeviceGetAttribute"));
  dlclose(handle);  // drops only our reference; the process keeps the driver loaded
  return d->device_get_count && d->device_get && d->device_get_name && d->device_total_mem &&
         d->device_get_attribute;
}

std::vector<DeviceProps> Query() {
  std::vector<DeviceProps> devices;
  Driver d;
  int count = 0;
  if (!LoadDriver(&d) || d.device_get_count(&count) != CUDA_SUCCESS) return devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    CUdevice dev = 0;
    if (d.device_get(&dev, ordinal) != 0) continue;
    DeviceProps p;
    p.id = ordinal;
    char name[256] = {};
    if (d.device_get_name(name, sizeof(name) - 1, dev) == 0) p.name = name;
    size_t bytes = 0;
    if (d.device_total_mem(&bytes, dev) == 0) p.total_global_mem = bytes;
    auto attr = [&](CUdevice_attribute attribute, int* out) {
      int v = 0;
      if (d.device_get_attribute(&v, attribute, dev) == 0) *out = v;
    };
    attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &p.compute_major);
    attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &p.compute_minor);
    attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &p.sm_count);
    attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, &p.warp_size);
    attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &p.max_threads_per_block);
    attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &p.max_threads_per_sm);
    attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, &p.max_blocks_per_sm);
    attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &p.max_regs_per_block);
    attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &p.max_regs_per_sm);
    attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &p.max_shared_per_block);
    attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, &p.max_shared_per_sm);
    devices.push_back(std::move(p));
  }
  return devices;
}

}  // namespace

std::vector<DeviceProps> QueryDeviceProps() {
  // Never destroyed: the writer thread may still seal a window while the
  // process runs its exit-time destructors.
  static auto* mu = new std::mutex;
  static auto* cached = new std::vector<DeviceProps>;
  std::lock_guard<std::mutex> lock(*mu);
  if (cached->empty()) *cached = Query();
  return *cached;
}

}  // namespace prof
