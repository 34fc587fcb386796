// What a runtime or driver API call is, by CUPTI callback id: its name (from
// the toolkit's cbid headers) and whether it puts work on the device that
// must produce an activity record (launches, copies, memsets).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace prof::cupti {

enum class ApiClass : uint8_t {
  kOther,   // no device record expected (cudaGetDevice, cudaStreamCreate, ...)
  kLaunch,  // kernel launch or graph launch: >= 1 kernel record
  kMemcpy,  // >= 1 memcpy record
  kMemset,  // >= 1 memset record
  kSync,    // synchronize / wait: a SYNCHRONIZATION record where supported
  kMemory,  // allocator call: a MEMORY2 record where supported
};

enum class ApiDomain : uint8_t { kRuntime, kDriver };

// "cudaMalloc" / "cuLaunchKernel"; nullptr for an id these headers do not know.
// The ids are append-only from CUDA 12.0 to 13.0, but 13.0 renamed 19
// runtime ids: CUDA 12's CUPTI reports id 440 as cudaGetDeviceProperties_v2
// (the symbol 12.x programs call), 13.0's as cudaGetDeviceProperties. With
// `cuda12_names` (a 12.x CUPTI is loaded) those ids keep their 12.x names.
const char* CallbackName(ApiDomain domain, uint32_t cbid, bool cuda12_names = false);

// The class of a call, derived from its name.
ApiClass ClassifyCallback(ApiDomain domain, uint32_t cbid);

// Runtime callback ids the collector subscribes to: every call that
// enqueues work, synchronizes or allocates (the calls libprof's wrappers
// stamp with a correlation id), __cudaRegisterFunction (its wrapper stamps
// one too) and cudaDeviceReset (flush first). Other
// runtime calls (cudaGetDevice, cudaGetLastError: PyTorch makes many) cost
// no callback; their RUNTIME records are placed by their own start time.
// Ends with 0.
const uint32_t* RuntimeCallbackIds();

// Driver callback ids worth a callback even when DRIVER records are off:
// launches, copies/memsets, syncs and the allocator calls libprof's wrappers
// stamp (cuMemAlloc_v2, cuMemCreate, cuMemMap, ...), so work a library
// launches through the driver API gets a launch time and driver wrappers a
// correlation id. Ends with 0.
const uint32_t* DriverWorkCallbackIds();

// A set of ApiClass values: bit (1 << class) for each.
constexpr uint32_t ClassBit(ApiClass c) { return 1u << static_cast<uint32_t>(c); }

// The ids of RuntimeCallbackIds() (kRuntime) or DriverWorkCallbackIds()
// (kDriver) whose class is in class_mask: what a step source that counts
// calls needs while no window records (collectors/cupti/README.md).
std::vector<uint32_t> CallbackIdsOfClasses(ApiDomain domain, uint32_t class_mask);

// The classes of the ids, runtime and driver, named `base` or `base` with a
// _ptsz/_ptds suffix (PROF_STEP=api:<base>); 0 when none is subscribed to.
uint32_t ClassesOfCallsNamed(std::string_view base);

}  // namespace prof::cupti
