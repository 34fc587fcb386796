#include "collectors/cupti/api_classes.h"

#include <string_view>
#include <vector>

namespace prof::cupti {
namespace {

struct CbidName {
  uint32_t cbid;
  const char* name;
};
#include "callback_names.inc"

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

ApiClass ClassifyName(std::string_view name) {
  // Runtime names first, then their driver equivalents.
  if (StartsWith(name, "cudaLaunchHostFunc") || StartsWith(name, "cuLaunchHostFunc")) return ApiClass::kOther;
  if (StartsWith(name, "cudaLaunch") || StartsWith(name, "__cudaLaunchKernel") || StartsWith(name, "cudaGraphLaunch") ||
      StartsWith(name, "cuLaunch") || StartsWith(name, "cuGraphLaunch")) {
    return ApiClass::kLaunch;
  }
  if (StartsWith(name, "cudaMemcpy") || StartsWith(name, "cuMemcpy")) return ApiClass::kMemcpy;
  if (StartsWith(name, "cudaMemset") || StartsWith(name, "cuMemset")) return ApiClass::kMemset;
  if (name == "cudaDeviceSynchronize" || StartsWith(name, "cudaStreamSynchronize") || name == "cudaEventSynchronize" ||
      StartsWith(name, "cudaStreamWaitEvent") || name == "cuCtxSynchronize" ||
      StartsWith(name, "cuStreamSynchronize") || name == "cuEventSynchronize" ||
      StartsWith(name, "cuStreamWaitEvent")) {
    return ApiClass::kSync;
  }
  if (StartsWith(name, "cudaMalloc") || StartsWith(name, "cudaFree") || name == "cudaHostAlloc" ||
      StartsWith(name, "cuMemAlloc") || StartsWith(name, "cuMemFree") || name == "cuMemCreate" ||
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

}  // namespace

const char* CallbackName(ApiDomain domain, uint32_t cbid) {
  return domain == ApiDomain::kRuntime ? Find(kRuntimeCallbackNames, cbid) : Find(kDriverCallbackNames, cbid);
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
      if (ClassifyName(entry.name) != ApiClass::kOther || std::string_view(entry.name) == "cudaDeviceReset") {
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
      if (c != ApiClass::kOther || name == "cuMemMap" || name == "cuMemUnmap") out.push_back(entry.cbid);
    }
    out.push_back(0);
    return out;
  }());
  return ids.data();
}

}  // namespace prof::cupti
