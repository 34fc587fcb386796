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

// Never destroyed: atexit handlers and late threads may still launch.
struct Registry {
  std::mutex mutex;  // guards the maps; never held across a driver call (hooks may call back)
  std::vector<std::unique_ptr<FatBinary>> binaries;   // kept after unregistration: stubs may outlive it
  std::unordered_map<const void*, HostKernel> kernels;  // by host stub
  std::unordered_map<CUkernel, std::string> kernel_names;
  std::unordered_map<const void*, HostKernel> variables;  // by host shadow (kernel unused)
};
Registry& Get() {
  static Registry* registry = new Registry();
  return *registry;
}

const void* Code(const FatBinary& binary) {
  const auto* wrapper = static_cast<const __fatBinC_Wrapper_t*>(binary.fat_cubin);
  return (wrapper && wrapper->magic == FATBINC_MAGIC) ? static_cast<const void*>(wrapper->data) : binary.fat_cubin;
}

}  // namespace

void** RegisterFatBinary(void* fat_cubin) {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.binaries.push_back(std::make_unique<FatBinary>(FatBinary{fat_cubin}));
  return &r.binaries.back()->fat_cubin;
}

void RegisterFunction(void** fat_cubin_handle, const void* host_fun, const char* device_name) {
  if (!fat_cubin_handle || !host_fun || !device_name) return;
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.kernels[host_fun] = HostKernel{reinterpret_cast<FatBinary*>(fat_cubin_handle), device_name};
}

void UnregisterFatBinary(void** fat_cubin_handle) {
  // Nothing to release: the sim's libraries own no device resources.
  (void)fat_cubin_handle;
}

void RegisterVariable(void** fat_cubin_handle, const void* host_var, const char* device_name, size_t size) {
  if (!fat_cubin_handle || !host_var || !device_name) return;
  (void)size;  // the driver knows the variable's size from the image
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.variables[host_var] = HostKernel{reinterpret_cast<FatBinary*>(fat_cubin_handle), device_name};
}

namespace {

// The binary's library, loaded through the driver on first use.
cudaError_t LibraryOf(FatBinary* binary, CUlibrary* library) {
  Registry& registry = Get();
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    if (binary->library) {
      *library = binary->library;
      return cudaSuccess;
    }
  }
  // Unlocked: two threads may both load; the later one's library is kept.
  CUlibrary loaded = nullptr;
  const CUresult r = Driver().cuLibraryLoadData(&loaded, Code(*binary), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) return FromDriver(r);
  std::lock_guard<std::mutex> lock(registry.mutex);
  binary->library = loaded;
  *library = loaded;
  return cudaSuccess;
}

}  // namespace

cudaError_t ResolveSymbol(const void* symbol, CUdeviceptr* address, size_t* bytes) {
  Registry& registry = Get();
  FatBinary* binary = nullptr;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.variables.find(symbol);
    if (it == registry.variables.end()) return cudaErrorInvalidSymbol;
    binary = it->second.binary;
    name = it->second.device_name;
  }
  CUlibrary library = nullptr;
  if (cudaError_t e = LibraryOf(binary, &library); e != cudaSuccess) return e;
  const CUresult r = Driver().cuLibraryGetGlobal(address, bytes, library, name.c_str());
  return r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidSymbol : FromDriver(r);
}

const char* RegisteredName(const void* host_fun) {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(host_fun);
  return it == r.kernels.end() ? nullptr : it->second.device_name.c_str();
}

const char* KernelName(CUkernel kernel) {
  Registry& r = Get();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernel_names.find(kernel);
  return it == r.kernel_names.end() ? nullptr : it->second.c_str();
}

cudaError_t ResolveKernel(const void* host_fun, CUkernel* kernel) {
  Registry& registry = Get();
  FatBinary* binary = nullptr;
  CUlibrary library = nullptr;
  std::string name;
  {
    std::lock_guard<std::mutex> lock(registry.mutex);
    auto it = registry.kernels.find(host_fun);
    if (it == registry.kernels.end()) return cudaErrorInvalidDeviceFunction;
    if (it->second.kernel) {
      *kernel = it->second.kernel;
      return cudaSuccess;
    }
    binary = it->second.binary;
    library = binary->library;
    name = it->second.device_name;
  }
  // Unlocked: two threads may both get here, and the driver hands both the same kernel.
  if (!library) {
    if (cudaError_t e = LibraryOf(binary, &library); e != cudaSuccess) return e;
  }
  CUkernel resolved = nullptr;
  const CUresult found = Driver().cuLibraryGetKernel(&resolved, library, name.c_str());
  if (found != CUDA_SUCCESS) return FromDriver(found);
  std::lock_guard<std::mutex> lock(registry.mutex);
  registry.kernels[host_fun].kernel = resolved;
  registry.kernel_names[resolved] = name;
  *kernel = resolved;
  return cudaSuccess;
}

}  // namespace simrt
