#include "collectors/cupti/api_classes.h"

#include <string_view>
#include <vector>

#include "model/observed_event.h"

namespace prof::cupti {
namespace {

struct CbidName {
  uint32_t cbid;
  const char* name;
};
#include "callback_names.inc"

ApiClass ClassifyName(std::string_view name) {
  // Runtime names first, then their driver equivalents.
  if (name.starts_with("cudaLaunchHostFunc") || name.starts_with("cuLaunchHostFunc")) return ApiClass::kOther;
  if (name.starts_with("cudaLaunch") || name.starts_with("__cudaLaunchKernel") || name.starts_with("cudaGraphLaunch") ||
      name.starts_with("cuLaunch") || name.starts_with("cuGraphLaunch")) {
    return ApiClass::kLaunch;
  }
  if (name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy")) return ApiClass::kMemcpy;
  if (name.starts_with("cudaMemset") || name.starts_with("cuMemset")) return ApiClass::kMemset;
  if (name == "cudaDeviceSynchronize" || name.starts_with("cudaStreamSynchronize") || name == "cudaEventSynchronize" ||
      name.starts_with("cudaStreamWaitEvent") || name == "cuCtxSynchronize" ||
      name.starts_with("cuStreamSynchronize") || name == "cuEventSynchronize" ||
      name.starts_with("cuStreamWaitEvent")) {
    return ApiClass::kSync;
  }
  if (name.starts_with("cudaMalloc") || name.starts_with("cudaFree") || name == "cudaHostAlloc" ||
      name.starts_with("cuMemAlloc") || name.starts_with("cuMemFree") || name == "cuMemCreate" ||
      name == "cuMemRelease") {
    return ApiClass::kMemory;
  }
  return ApiClass::kOther;
}

template <size_t N>
const char* Find(const CbidName (&table)[N], uint32_t cbid) {
  // The enums are dense and ordered; index first, search as a fallback.
  if (cbid < N && table[cbid].cbid == cbid) return table[cbid].name;
  if (cbid >= 1 && cbid - 1 < N && table[cbid - 1].cbid == cbid) return table[cbid - 1].name;
  for (const auto& entry : table) {
    if (entry.cbid == cbid) return entry.name;
  }
  return nullptr;
}

// Runtime ids whose name in CUDA 12.9 Update 1's cupti_runtime_cbid.h
// (CUPTI API version 28) differs from CUDA 13.0's: 13.0 dropped the _v2/_v3
// of the 12.x entry points. Every other id 1-486 has the same name in both,
// and the driver table (1-783) is identical; ids above those are new in 13.0.
// scripts/check-cbid-tables.py re-checks this against a 12.x header.
constexpr CbidName kCuda12RenamedRuntimeNames[] = {
    {393, "cudaSignalExternalSemaphoresAsync_v2"},
    {394, "cudaSignalExternalSemaphoresAsync_v2_ptsz"},
    {395, "cudaWaitExternalSemaphoresAsync_v2"},
    {396, "cudaWaitExternalSemaphoresAsync_v2_ptsz"},
    {440, "cudaGetDeviceProperties_v2"},
    {448, "cudaMemAdvise_v2"},
    {449, "cudaMemPrefetchAsync_v2"},
    {450, "cudaMemPrefetchAsync_v2_ptsz"},
    {455, "cudaGraphGetEdges_v2"},
    {456, "cudaGraphNodeGetDependencies_v2"},
    {457, "cudaGraphNodeGetDependentNodes_v2"},
    {458, "cudaGraphAddDependencies_v2"},
    {459, "cudaGraphRemoveDependencies_v2"},
    {460, "cudaGraphAddNode_v2"},
    {461, "cudaStreamGetCaptureInfo_v3"},
    {462, "cudaStreamGetCaptureInfo_v3_ptsz"},
    {463, "cudaStreamUpdateCaptureDependencies_v2"},
    {464, "cudaStreamUpdateCaptureDependencies_v2_ptsz"},
    {486, "cudaEventElapsedTime_v2"},
};

}  // namespace

const char* CallbackName(ApiDomain domain, uint32_t cbid, bool cuda12_names) {
  if (domain == ApiDomain::kDriver) return Find(kDriverCallbackNames, cbid);
  if (cuda12_names) {
    for (const auto& entry : kCuda12RenamedRuntimeNames) {
      if (entry.cbid == cbid) return entry.name;
    }
  }
  return Find(kRuntimeCallbackNames, cbid);
}

ApiClass ClassifyCallback(ApiDomain domain, uint32_t cbid) {
  // Called on every API enter while attached: classify each id once.
  // Tables are never destroyed: CUDA calls made while the process runs its
  // exit-time destructors still reach the callbacks.
  static const auto& runtime = *new std::vector<ApiClass>([] {
    std::vector<ApiClass> classes;
    for (const auto& entry : kRuntimeCallbackNames) {
      if (entry.cbid >= classes.size()) classes.resize(entry.cbid + 1, ApiClass::kOther);
      classes[entry.cbid] = ClassifyName(entry.name);
    }
    return classes;
  }());
  // The runtime table's construction, from the driver's names.
  static const auto& driver = *new std::vector<ApiClass>([] {
    std::vector<ApiClass> classes;
    for (const auto& entry : kDriverCallbackNames) {
      if (entry.cbid >= classes.size()) classes.resize(entry.cbid + 1, ApiClass::kOther);
      classes[entry.cbid] = ClassifyName(entry.name);
    }
    return classes;
  }());
  const std::vector<ApiClass>& classes = domain == ApiDomain::kRuntime ? runtime : driver;
  return cbid < classes.size() ? classes[cbid] : ApiClass::kOther;
}

const uint32_t* RuntimeCallbackIds() {
  static const auto& ids = *new std::vector<uint32_t>([] {
    std::vector<uint32_t> out;
    for (const auto& entry : kRuntimeCallbackNames) {
      // __cudaRegisterFunction: libprof's wrapper records it too, and needs
      // its correlation id so the call appears once (its CUPTI record is
      // then hidden behind the wrapper's event).
      std::string_view name = entry.name;
      // cudaProfilerStart/Stop: PROF_RANGE=cudaProfilerApi's range edges.
      if (ClassifyName(entry.name) != ApiClass::kOther || name == "cudaDeviceReset" || name == "__cudaRegisterFunction" ||
          name == "cudaProfilerStart" || name == "cudaProfilerStop") {
        out.push_back(entry.cbid);
      }
    }
    out.push_back(0);
    return out;
  }());
  return ids.data();
}

const uint32_t* DriverWorkCallbackIds() {
  static const auto& ids = *new std::vector<uint32_t>([] {
    std::vector<uint32_t> out;
    for (const auto& entry : kDriverCallbackNames) {
      ApiClass c = ClassifyName(entry.name);
      std::string_view name = entry.name;
      if (c != ApiClass::kOther || name == "cuMemMap" || name == "cuMemUnmap" || name == "cuProfilerStart" ||
          name == "cuProfilerStop") {
        out.push_back(entry.cbid);
      }
    }
    out.push_back(0);
    return out;
  }());
  return ids.data();
}

std::vector<uint32_t> CallbackIdsOfClasses(ApiDomain domain, uint32_t class_mask) {
  std::vector<uint32_t> out;
  const uint32_t* ids = domain == ApiDomain::kRuntime ? RuntimeCallbackIds() : DriverWorkCallbackIds();
  for (const uint32_t* id = ids; *id != 0; ++id) {
    if ((class_mask & ClassBit(ClassifyCallback(domain, *id))) != 0) out.push_back(*id);
  }
  return out;
}

uint32_t ClassesOfCallsNamed(std::string_view base) {
  uint32_t mask = 0;
  for (ApiDomain domain : {ApiDomain::kRuntime, ApiDomain::kDriver}) {
    const uint32_t* ids = domain == ApiDomain::kRuntime ? RuntimeCallbackIds() : DriverWorkCallbackIds();
    for (const uint32_t* id = ids; *id != 0; ++id) {
      const char* name = CallbackName(domain, *id);
      if (name != nullptr && BaseApiName(name) == base) mask |= ClassBit(ClassifyCallback(domain, *id));
    }
  }
  return mask;
}

}  // namespace prof::cupti
