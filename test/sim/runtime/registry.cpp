#include "registry.h"

#include <fatbinary_section.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace simrt {
namespace {

struct FatBinary {
  void* fat_cubin;  // first member: the handle handed out is &fat_cubin (a void**)
  CUlibrary library = nullptr;
};

struct HostKernel {
  FatBinary* binary;
  std::string device_name;
  CUkernel kernel = nullptr;
};

std::mutex g_mutex;  // guards the maps; never held across a driver call (hooks may call back)
std::vector<std::unique_ptr<FatBinary>> g_binaries;   // kept after unregistration: stubs may outlive it
std::unordered_map<const void*, HostKernel> g_kernels;  // by host stub
std::unordered_map<CUkernel, std::string> g_kernel_names;

const void* Code(const FatBinary& binary) {
  const auto* wrapper = static_cast<const __fatBinC_Wrapper_t*>(binary.fat_cubin);
  return (wrapper && wrapper->magic == FATBINC_MAGIC) ? static_cast<const void*>(wrapper->data) : binary.fat_cubin;
}

}  // namespace

void** RegisterFatBinary(void* fat_cubin) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_binaries.push_back(std::make_unique<FatBinary>(FatBinary{fat_cubin}));
  return &g_binaries.back()->fat_cubin;
}

void RegisterFunction(void** fat_cubin_handle, const void* host_fun, const char* device_name) {
  if (!fat_cubin_handle || !host_fun || !device_name) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_kernels[host_fun] = HostKernel{reinterpret_cast<FatBinary*>(fat_cubin_handle), device_name};
}

void UnregisterFatBinary(void** fat_cubin_handle) {
  // Nothing to release: the sim's libraries own no device resources.
  (void)fat_cubin_handle;
}

const char* RegisteredName(const void* host_fun) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_kernels.find(host_fun);
  return it == g_kernels.end() ? nullptr : it->second.device_name.c_str();
}

const char* KernelName(CUkernel kernel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_kernel_names.find(kernel);
  return it == g_kernel_names.end() ? nullptr : it->second.c_str();
}

cudaError_t ResolveKernel(const void* host_fun, CUkernel* kernel) {
  FatBinary* binary = nullptr;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_kernels.find(host_fun);
    if (it == g_kernels.end()) return cudaErrorInvalidDeviceFunction;
    if (it->second.kernel) {
      *kernel = it->second.kernel;
      return cudaSuccess;
    }
    binary = it->second.binary;
    name = it->second.device_name;
  }
  // Two threads may both get here; the driver hands both the same objects.
  CUlibrary library = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    library = binary->library;
  }
  if (!library) {
    if (CUresult r = Driver().cuLibraryLoadData(&library, Code(*binary), nullptr, nullptr, 0, nullptr, nullptr, 0);
        r != CUDA_SUCCESS) {
      return FromDriver(r);
    }
  }
  CUkernel resolved = nullptr;
  if (CUresult r = Driver().cuLibraryGetKernel(&resolved, library, name.c_str()); r != CUDA_SUCCESS) {
    return FromDriver(r);
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  binary->library = library;
  g_kernels[host_fun].kernel = resolved;
  g_kernel_names[resolved] = name;
  *kernel = resolved;
  return cudaSuccess;
}

}  // namespace simrt
