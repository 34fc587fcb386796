// Driver: libraries, kernels and launches. A library's code is not parsed:
// any kernel name can be looked up, and launching it occupies the device for
// the modelled duration without computing anything.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "modules.h"
#include "graph_internal.h"
#include "timing.h"

namespace sim {
namespace {

// Kernels by mangled name. Never destroyed (nor are the maps): ops carry
// pointers to their names, and atexit handlers may still launch or flush.
struct KernelTable {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<CUfunc_st>> by_name;
};
KernelTable& Kernels() {
  static KernelTable* table = new KernelTable();
  return *table;
}

}  // namespace

CUfunc_st* KernelNamed(const char* name) {
  KernelTable& kernels = Kernels();
  std::lock_guard<std::mutex> lock(kernels.mutex);
  auto& slot = kernels.by_name[name];
  if (!slot) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    slot.reset(new CUfunc_st{name, status == 0 && demangled ? demangled : name});
    free(demangled);
  }
  return slot.get();
}

bool IsKernel(const CUfunc_st* f) {
  if (!f) return false;
  KernelTable& kernels = Kernels();
  std::lock_guard<std::mutex> lock(kernels.mutex);
  auto it = kernels.by_name.find(f->name);
  return it != kernels.by_name.end() && it->second.get() == f;
}

CUresult KernelOp(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                  unsigned shared_bytes, SimOp* out, uint64_t* duration_ns) {
  if (!IsKernel(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<uint64_t>(bx) * by * bz > 1024 || bz > 64 || gy > 65535 || gz > 65535) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t blocks = static_cast<uint64_t>(gx) * gy * gz;
  *duration_ns = KernelDurationNs(f->name, f->demangled, blocks);
  SimOp op{};
  op.kind = SIM_OP_KERNEL;  // device, context and stream: where it is enqueued
  op.name = f->name.c_str();  // static storage: kernels live for the process
  op.grid[0] = static_cast<int>(gx);
  op.grid[1] = static_cast<int>(gy);
  op.grid[2] = static_cast<int>(gz);
  op.block[0] = static_cast<int>(bx);
  op.block[1] = static_cast<int>(by);
  op.block[2] = static_cast<int>(bz);
  op.registers_per_thread = 32;
  op.dynamic_shared_bytes = shared_bytes;
  *out = op;
  return CUDA_SUCCESS;
}

namespace {

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared_bytes, CUstream stream) {
  SimGate* gate = TakeArmedGate();  // a collective's kernel (simhub_gate_arm)
  SimOp op{};
  uint64_t duration_ns = 0;
  if (CUresult r = KernelOp(f, gx, gy, gz, bx, by, bz, shared_bytes, &op, &duration_ns); r != CUDA_SUCCESS) return r;
  // CUDA: "a kernel launch will fail if it is issued to a stream that is not
  // associated to the current device".
  Device& device = Device::Of(stream);
  if (!device.IsValid(stream) || &device != &Device::Get()) return CUDA_ERROR_INVALID_HANDLE;
  // Into a capturing stream: a graph node now, run by cuGraphLaunch.
  if (CUresult r = CUDA_SUCCESS; CaptureKernel(stream, op, duration_ns, &r)) return r;
  // Placed now, or queued behind (or as) a collective waiting for its peers.
  Place(&op, Placement{});
  device.EnqueueOp(stream, duration_ns, op, OuterFunctionName(), gate);
  return CUDA_SUCCESS;
}

const char* NameOf(CUfunction f) { return f ? f->name.c_str() : nullptr; }

// The kernel name CUPTI's callbacks carry for a launch (symbolName): none
// for a handle that is not one of ours.
const char* LaunchedName(CUfunction f) { return IsKernel(f) ? NameOf(f) : nullptr; }

// cuLaunchKernel, cuLaunchCooperativeKernel and their _ptsz forms: the
// geometry comes as arguments, which each of their _params structs names
// alike. per_thread: the _ptsz form, whose stream 0 is the calling thread's
// default stream.
template <typename Params>
CUresult LaunchWithArguments(uint32_t cbid, const char* api, const Params& p, bool per_thread) {
  return InitializedDriverCall(
      cbid, api, &p,
      [&] {
        return Launch(p.f, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                      p.sharedMemBytes, per_thread ? PerThread(p.hStream) : p.hStream);
      },
      LaunchedName(p.f));
}

// cuLaunchKernelEx and its _ptsz form: the geometry comes in a
// CUlaunchConfig.
template <typename Params>
CUresult LaunchWithConfig(uint32_t cbid, const char* api, const Params& p, bool per_thread) {
  return InitializedDriverCall(
      cbid, api, &p,
      [&]() -> CUresult {
        const CUlaunchConfig* c = p.config;
        if (!c) return CUDA_ERROR_INVALID_VALUE;
        return Launch(p.f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                      c->sharedMemBytes, per_thread ? PerThread(c->hStream) : c->hStream);
      },
      LaunchedName(p.f));
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  cuKernelGetName_params params{name, hfunc};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuKernelGetName), "cuKernelGetName", &params, [&]() -> CUresult {
    auto* f = reinterpret_cast<CUfunction>(hfunc);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::IsKernel(f)) return CUDA_ERROR_INVALID_HANDLE;
    *name = sim::NameOf(f);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  cuFuncGetName_params params{name, hfunc};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuFuncGetName), "cuFuncGetName", &params, [&]() -> CUresult {
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    if (!sim::IsKernel(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
    *name = sim::NameOf(hfunc);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                          unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                          void** kernelParams, void** extra) {
  const cuLaunchKernel_params params{f,         gridDimX,  gridDimY,       gridDimZ, blockDimX,    blockDimY,
                                     blockDimZ, sharedMemBytes, hStream, kernelParams, extra};
  return sim::LaunchWithArguments(SIM_DRIVER_CBID(cuLaunchKernel), "cuLaunchKernel", params, /*per_thread=*/false);
}

SIM_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                     unsigned int gridDimZ, unsigned int blockDimX,
                                                     unsigned int blockDimY, unsigned int blockDimZ,
                                                     unsigned int sharedMemBytes, CUstream hStream,
                                                     void** kernelParams) {
  const cuLaunchCooperativeKernel_params params{f,         gridDimX,  gridDimY,       gridDimZ, blockDimX,
                                                blockDimY, blockDimZ, sharedMemBytes, hStream,  kernelParams};
  return sim::LaunchWithArguments(SIM_DRIVER_CBID(cuLaunchCooperativeKernel), "cuLaunchCooperativeKernel", params,
                                  /*per_thread=*/false);
}

SIM_DRIVER_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                            void** extra) {
  const cuLaunchKernelEx_params params{config, f, kernelParams, extra};
  return sim::LaunchWithConfig(SIM_DRIVER_CBID(cuLaunchKernelEx), "cuLaunchKernelEx", params, /*per_thread=*/false);
}

// ---- per-thread default stream flavours (cuGetProcAddress with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).

SIM_DRIVER_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                               unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                               void** kernelParams, void** extra) {
  const cuLaunchKernel_ptsz_params params{f,         gridDimX,  gridDimY,       gridDimZ, blockDimX,    blockDimY,
                                          blockDimZ, sharedMemBytes, hStream, kernelParams, extra};
  return sim::LaunchWithArguments(SIM_DRIVER_CBID(cuLaunchKernel_ptsz), "cuLaunchKernel_ptsz", params,
                                  /*per_thread=*/true);
}

// The per-thread-stream flavour: the same wrapper with its own exported symbol and cbid.
SIM_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                          unsigned int gridDimZ, unsigned int blockDimX,
                                                          unsigned int blockDimY, unsigned int blockDimZ,
                                                          unsigned int sharedMemBytes, CUstream hStream,
                                                          void** kernelParams) {
  const cuLaunchCooperativeKernel_ptsz_params params{f,         gridDimX,  gridDimY,       gridDimZ, blockDimX,
                                                     blockDimY, blockDimZ, sharedMemBytes, hStream,  kernelParams};
  return sim::LaunchWithArguments(SIM_DRIVER_CBID(cuLaunchCooperativeKernel_ptsz), "cuLaunchCooperativeKernel_ptsz",
                                  params, /*per_thread=*/true);
}

SIM_DRIVER_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                                 void** extra) {
  const cuLaunchKernelEx_ptsz_params params{config, f, kernelParams, extra};
  return sim::LaunchWithConfig(SIM_DRIVER_CBID(cuLaunchKernelEx_ptsz), "cuLaunchKernelEx_ptsz", params,
                               /*per_thread=*/true);
}
