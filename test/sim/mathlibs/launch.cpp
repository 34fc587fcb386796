// The driver link of launch.h: resolved once, on first use, like the
// driver table NVIDIA's libraries build when they first need the device.
#include "launch.h"

#include <cuda_runtime_api.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <generated_cuda_runtime_api_meta.h>
#include <unistd.h>

#include "../hub.h"

#include <map>
#include <mutex>

namespace simmath {
namespace {

struct Driver {
  bool ok = false;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*, void**,
                                unsigned);
  CUresult (*cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  // The hub's API bracket: the library's launches are runtime calls of the
  // runtime NVIDIA links into it (README "Math libraries").
  void (*api_enter)(SimApiSite*);
  void (*api_exit)(SimApiSite*);
};

// test/sim/nccl/comm.cpp finds the driver the same way: each simulated library is a .so with no shared code.
Driver LoadDriver() {
  Driver d{};
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return d;
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) return d;
  auto get = [&](const char* name, int version, auto* slot) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status;
    if (get_proc(name, &fn, version, 0, &status) != CUDA_SUCCESS || !fn) return false;
    *slot = reinterpret_cast<decltype(*slot)>(fn);
    return true;
  };
  bool ok = get("cuInit", 2000, &d.cuInit) && get("cuCtxGetCurrent", 4000, &d.cuCtxGetCurrent) &&
            get("cuCtxSetCurrent", 4000, &d.cuCtxSetCurrent) &&
            get("cuDevicePrimaryCtxRetain", 7000, &d.cuDevicePrimaryCtxRetain) &&
            get("cuLibraryLoadData", 12000, &d.cuLibraryLoadData) &&
            get("cuLibraryGetKernel", 12000, &d.cuLibraryGetKernel) &&
            get("cuLaunchKernelEx", 11060, &d.cuLaunchKernelEx);
  d.api_enter = reinterpret_cast<void (*)(SimApiSite*)>(dlsym(lib, "simhub_api_enter"));
  d.api_exit = reinterpret_cast<void (*)(SimApiSite*)>(dlsym(lib, "simhub_api_exit"));
  d.ok = ok && d.api_enter && d.api_exit && d.cuInit(0) == CUDA_SUCCESS;
  return d;
}

const Driver& TheDriver() {
  static const Driver driver = LoadDriver();
  return driver;
}

// The sim hub's truth-log writer, found without initialising the driver
// (an unsupported call must not have cuInit as a side effect); NULL under
// another driver.
using TruthFn = void (*)(const char*);
TruthFn TruthSink() {
  static const TruthFn sink = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    return lib ? reinterpret_cast<TruthFn>(dlsym(lib, "simhub_truth_line")) : nullptr;
  }();
  return sink;
}

// One loaded library per kernel name, kept for the life of the process
// (kernels stay valid while streams may still hold launches of them).
class KernelCache {
 public:
  CUresult Get(const Driver& d, const std::string& name, CUkernel* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(name);
    if (it != kernels_.end()) {
      *out = it->second;
      return CUDA_SUCCESS;
    }
    // The PTX only names the kernel: the sim's driver runs nothing.
    std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry " + name +
                      "(\n.param .align 8 .b8 params[512]\n)\n{\nret;\n}\n";
    CUlibrary library = nullptr;
    CUresult r = d.cuLibraryLoadData(&library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (r != CUDA_SUCCESS) return r;
    CUkernel kernel = nullptr;
    r = d.cuLibraryGetKernel(&kernel, library, name.c_str());
    if (r != CUDA_SUCCESS) return r;
    kernels_[name] = kernel;
    *out = kernel;
    return CUDA_SUCCESS;
  }

 private:
  std::mutex mutex_;                         // guards kernels_
  std::map<std::string, CUkernel> kernels_;  // name -> kernel, never erased
};

KernelCache& Kernels() {
  static KernelCache* cache = new KernelCache();  // never destroyed: used until exit
  return *cache;
}

}  // namespace

bool DriverReady() { return TheDriver().ok; }

CUresult LaunchKernel(const Launch& launch) {
  const Driver& d = TheDriver();
  if (!d.ok) return CUDA_ERROR_NOT_FOUND;
  CUcontext ctx = nullptr;
  if (d.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx) {
    CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, 0);
    if (r == CUDA_SUCCESS) r = d.cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS) return r;
  }
  CUkernel kernel = nullptr;
  CUresult r = Kernels().Get(d, launch.kernel, &kernel);
  if (r != CUDA_SUCCESS) return r;
  CUlaunchConfig config{};
  // The geometry field by field into the driver's struct: assignments, not logic.
  config.gridDimX = launch.grid[0];
  config.gridDimY = launch.grid[1];
  config.gridDimZ = launch.grid[2];
  config.blockDimX = launch.block[0];
  config.blockDimY = launch.block[1];
  config.blockDimZ = launch.block[2];
  config.hStream = launch.stream;
  // NVIDIA's libraries launch through the CUDA runtime linked into them:
  // CUPTI sees a runtime cudaLaunchKernel (named by the kernel) with the
  // driver's launch nested inside, and the kernel carries the runtime
  // call's correlation id, as the real libraries' kernels do in Kineto's
  // traces. The function pointer is the library's handle for the kernel.
  cudaLaunchKernel_v7000_params params{kernel,
                                       dim3(launch.grid[0], launch.grid[1], launch.grid[2]),
                                       dim3(launch.block[0], launch.block[1], launch.block[2]),
                                       nullptr, 0, reinterpret_cast<cudaStream_t>(launch.stream)};
  cudaError_t status = cudaSuccess;
  SimApiSite site{};
  site.domain = 2;  // CUPTI_CB_DOMAIN_RUNTIME_API
  site.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  site.function_name = "cudaLaunchKernel";
  site.symbol_name = launch.kernel.c_str();
  site.params = &params;
  site.return_value = &status;
  d.api_enter(&site);
  r = d.cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(kernel), nullptr, nullptr);
  status = r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure;
  d.api_exit(&site);
  return r;
}

void TruthLine(const std::string& members) {
  const TruthFn sink = TruthSink();
  if (!sink) return;
  std::string line = "{\"type\":\"math\",\"pid\":" + std::to_string(getpid()) + "," + members + "}";
  sink(line.c_str());
}

void TruthUnsupported(const char* entry_point) {
  const TruthFn sink = TruthSink();
  if (!sink) return;
  std::string line = "{\"type\":\"math_unsupported\",\"pid\":" + std::to_string(getpid()) +
                     ",\"name\":" + Quoted(entry_point) + "}";
  sink(line.c_str());
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

}  // namespace simmath
