// Driver: modules, libraries and the JIT linker. Images are read for their
// symbols (image.h), never run: a kernel name the image does not hold is
// CUDA_ERROR_NOT_FOUND, a variable gets device storage of its ELF size,
// initialised from the image. When an image cannot be read (a compressed fat
// binary, or an image that is none of ELF, fat binary or PTX) every kernel
// name is accepted and no variable is found.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cupti_activity.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "device.h"
#include "driver_call.h"
#include "modules.h"

// The JIT linker's state: its inputs, concatenated by cuLinkComplete.
struct CUlinkState_st {
  std::vector<unsigned char> inputs;
  std::vector<unsigned char> output;
};

namespace sim {
namespace {

struct ModuleTable {
  std::mutex mutex;  // leaf lock
  std::set<CUmod_st*> modules;
  std::set<CUlib_st*> libraries;
  std::set<CUlinkState_st*> links;
};
ModuleTable& Table() {
  static ModuleTable* table = new ModuleTable();  // never destroyed: atexit handlers may still launch
  return *table;
}

constexpr size_t kAlignment = 256;

CUmod_st* Load(const void* image, size_t size) {
  auto* module = new CUmod_st();
  module->contents = ReadImage(image, size);
  // Variables live in static device memory for the module's lifetime.
  for (const auto& [name, variable] : module->contents.variables) {
    const size_t bytes = variable.bytes ? variable.bytes : 1;
    void* storage = aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (!storage) continue;
    memset(storage, 0, bytes);
    if (!variable.init.empty()) memcpy(storage, variable.init.data(), variable.init.size());
    Device::Get().Register(storage, bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
    module->storage[name] = storage;
  }
  std::lock_guard<std::mutex> lock(Table().mutex);
  Table().modules.insert(module);
  return module;
}

bool IsModule(CUmod_st* module) {
  std::lock_guard<std::mutex> lock(Table().mutex);
  return Table().modules.count(module) != 0;
}

CUresult Unload(CUmod_st* module) {
  {
    std::lock_guard<std::mutex> lock(Table().mutex);
    if (!Table().modules.erase(module)) return CUDA_ERROR_INVALID_HANDLE;
  }
  for (const auto& [name, storage] : module->storage) {
    Device::Get().Forget(storage);
    free(storage);
  }
  delete module;
  return CUDA_SUCCESS;
}

// cuLinkComplete's output is several images back to back: its size is the
// link state's, not the first image's.
size_t LinkedSize(const void* image) {
  std::lock_guard<std::mutex> lock(Table().mutex);
  for (CUlinkState_st* link : Table().links) {
    if (!link->output.empty() && link->output.data() == image) return link->output.size();
  }
  return 0;
}

CUresult LoadModule(CUmodule* module, const void* image, size_t size) {
  if (!module || !image || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size_t linked = LinkedSize(image)) size = linked;
  Device::Get().RetainPrimaryContext();
  // Unreadable contents (a fat binary of compressed entries, or a stand-in
  // image a test registers by hand) load with unknown contents: every
  // kernel name is accepted and no variable is found.
  *module = Load(image, size);
  return CUDA_SUCCESS;
}

CUresult GetFunction(CUfunction* f, CUmod_st* module, const char* name) {
  if (!f || !name || !*name) return CUDA_ERROR_INVALID_VALUE;
  if (!IsModule(module)) return CUDA_ERROR_INVALID_HANDLE;
  // A fat binary with compressed entries is known only in part: a name not
  // among its readable entries may be in a compressed one.
  const ImageContents& contents = module->contents;
  if (contents.known && !contents.compressed && !contents.functions.count(name)) return CUDA_ERROR_NOT_FOUND;
  *f = KernelNamed(name);
  return CUDA_SUCCESS;
}

CUresult GetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmod_st* module, const char* name) {
  if (!name || (!dptr && !bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (!IsModule(module)) return CUDA_ERROR_INVALID_HANDLE;
  auto it = module->storage.find(name);
  if (it == module->storage.end()) return CUDA_ERROR_NOT_FOUND;
  if (dptr) *dptr = reinterpret_cast<CUdeviceptr>(it->second);
  if (bytes) *bytes = module->contents.variables.at(name).bytes;
  return CUDA_SUCCESS;
}

CUlib_st* AsLibrary(CUlibrary library) {
  std::lock_guard<std::mutex> lock(Table().mutex);
  return Table().libraries.count(library) ? library : nullptr;
}

CUresult ReadFile(const char* path, std::vector<unsigned char>* bytes) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  bytes->push_back(0);  // PTX files are text
  return CUDA_SUCCESS;
}

CUlinkState_st* AsLink(CUlinkState state) {
  std::lock_guard<std::mutex> lock(Table().mutex);
  return Table().links.count(state) ? state : nullptr;
}

bool ValidJitInput(CUjitInputType type) {
  return type == CU_JIT_INPUT_CUBIN || type == CU_JIT_INPUT_PTX || type == CU_JIT_INPUT_FATBINARY ||
         type == CU_JIT_INPUT_OBJECT || type == CU_JIT_INPUT_LIBRARY;
}

}  // namespace
}  // namespace sim

using sim::InitializedDriverCall;

SIM_DRIVER_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  cuModuleLoadData_params params{module, image};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleLoadData), "cuModuleLoadData", &params,
                               [&] { return sim::LoadModule(module, image, sim::ImageSize(image)); });
}

SIM_DRIVER_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                              CUjit_option* options, void** optionValues) {
  cuModuleLoadDataEx_params params{module, image, numOptions, options, optionValues};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleLoadDataEx), "cuModuleLoadDataEx", &params, [&]() -> CUresult {
    if (numOptions && (!options || !optionValues)) return CUDA_ERROR_INVALID_VALUE;
    return sim::LoadModule(module, image, sim::ImageSize(image));  // JIT options do not change the model
  });
}

SIM_DRIVER_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  cuModuleLoadFatBinary_params params{module, fatCubin};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleLoadFatBinary), "cuModuleLoadFatBinary", &params,
                               [&] { return sim::LoadModule(module, fatCubin, sim::ImageSize(fatCubin)); });
}

SIM_DRIVER_EXPORT CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  cuModuleLoad_params params{module, fname};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleLoad), "cuModuleLoad", &params, [&]() -> CUresult {
    std::vector<unsigned char> bytes;
    if (CUresult r = sim::ReadFile(fname, &bytes); r != CUDA_SUCCESS) return r;
    return sim::LoadModule(module, bytes.data(), bytes.size());
  });
}

SIM_DRIVER_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  cuModuleUnload_params params{hmod};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleUnload), "cuModuleUnload", &params,
                               [&] { return sim::Unload(hmod); });
}

SIM_DRIVER_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  cuModuleGetFunction_params params{hfunc, hmod, name};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleGetFunction), "cuModuleGetFunction", &params,
                               [&] { return sim::GetFunction(hfunc, hmod, name); });
}

SIM_DRIVER_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  cuModuleGetGlobal_v2_params params{dptr, bytes, hmod, name};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuModuleGetGlobal_v2), "cuModuleGetGlobal_v2", &params,
                               [&] { return sim::GetGlobal(dptr, bytes, hmod, name); });
}

SIM_DRIVER_EXPORT CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                             void** jitOptionsValues, unsigned int numJitOptions,
                                             CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                             unsigned int numLibraryOptions) {
  cuLibraryLoadData_params params{library,        code,       jitOptions, jitOptionsValues, numJitOptions,
                                  libraryOptions, libraryOptionValues, numLibraryOptions};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLibraryLoadData), "cuLibraryLoadData", &params, [&]() -> CUresult {
    if (!library || !code) return CUDA_ERROR_INVALID_VALUE;
    CUmodule module = nullptr;
    if (CUresult r = sim::LoadModule(&module, code, sim::ImageSize(code)); r != CUDA_SUCCESS) return r;
    auto* loaded = new CUlib_st{module};
    std::lock_guard<std::mutex> lock(sim::Table().mutex);
    sim::Table().libraries.insert(loaded);
    *library = loaded;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  cuLibraryUnload_params params{library};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLibraryUnload), "cuLibraryUnload", &params, [&]() -> CUresult {
    CUmod_st* module = nullptr;
    {
      std::lock_guard<std::mutex> lock(sim::Table().mutex);
      if (!sim::Table().libraries.erase(library)) return CUDA_ERROR_INVALID_HANDLE;
      module = library->module;
    }
    delete library;
    return sim::Unload(module);
  });
}

SIM_DRIVER_EXPORT CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  cuLibraryGetKernel_params params{pKernel, library, name};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLibraryGetKernel), "cuLibraryGetKernel", &params, [&]() -> CUresult {
    if (!pKernel) return CUDA_ERROR_INVALID_VALUE;
    CUlib_st* lib = sim::AsLibrary(library);
    if (!lib) return CUDA_ERROR_INVALID_HANDLE;
    return sim::GetFunction(reinterpret_cast<CUfunction*>(pKernel), lib->module, name);
  });
}

SIM_DRIVER_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  cuLibraryGetGlobal_params params{dptr, bytes, library, name};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLibraryGetGlobal), "cuLibraryGetGlobal", &params, [&]() -> CUresult {
    CUlib_st* lib = sim::AsLibrary(library);
    if (!lib) return CUDA_ERROR_INVALID_HANDLE;
    return sim::GetGlobal(dptr, bytes, lib->module, name);
  });
}

// The linker concatenates its inputs: the "linked image" holds every input's
// symbols, which is all the sim reads of it.
SIM_DRIVER_EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                                           CUlinkState* stateOut) {
  cuLinkCreate_v2_params params{numOptions, options, optionValues, stateOut};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLinkCreate_v2), "cuLinkCreate_v2", &params, [&]() -> CUresult {
    if (!stateOut || (numOptions && (!options || !optionValues))) return CUDA_ERROR_INVALID_VALUE;
    auto* state = new CUlinkState_st();
    std::lock_guard<std::mutex> lock(sim::Table().mutex);
    sim::Table().links.insert(state);
    *stateOut = state;
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                                            const char* name, unsigned int numOptions, CUjit_option* options,
                                            void** optionValues) {
  cuLinkAddData_v2_params params{state, type, data, size, name, numOptions, options, optionValues};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLinkAddData_v2), "cuLinkAddData_v2", &params, [&]() -> CUresult {
    CUlinkState_st* link = sim::AsLink(state);
    if (!link) return CUDA_ERROR_INVALID_HANDLE;
    if (!data || size == 0 || !sim::ValidJitInput(type)) return CUDA_ERROR_INVALID_VALUE;
    const auto* bytes = static_cast<const unsigned char*>(data);
    link->inputs.insert(link->inputs.end(), bytes, bytes + size);
    link->inputs.push_back(0);
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path,
                                            unsigned int numOptions, CUjit_option* options, void** optionValues) {
  cuLinkAddFile_v2_params params{state, type, path, numOptions, options, optionValues};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLinkAddFile_v2), "cuLinkAddFile_v2", &params, [&]() -> CUresult {
    CUlinkState_st* link = sim::AsLink(state);
    if (!link) return CUDA_ERROR_INVALID_HANDLE;
    if (!sim::ValidJitInput(type)) return CUDA_ERROR_INVALID_VALUE;
    std::vector<unsigned char> bytes;
    if (CUresult r = sim::ReadFile(path, &bytes); r != CUDA_SUCCESS) return r;
    link->inputs.insert(link->inputs.end(), bytes.begin(), bytes.end());
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  cuLinkComplete_params params{state, cubinOut, sizeOut};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLinkComplete), "cuLinkComplete", &params, [&]() -> CUresult {
    CUlinkState_st* link = sim::AsLink(state);
    if (!link) return CUDA_ERROR_INVALID_HANDLE;
    if (!cubinOut || !sizeOut) return CUDA_ERROR_INVALID_VALUE;
    if (link->inputs.empty()) return CUDA_ERROR_INVALID_IMAGE;
    link->output = link->inputs;  // owned by the state until cuLinkDestroy, as documented
    *cubinOut = link->output.data();
    *sizeOut = link->output.size();
    return CUDA_SUCCESS;
  });
}

SIM_DRIVER_EXPORT CUresult cuLinkDestroy(CUlinkState state) {
  cuLinkDestroy_params params{state};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuLinkDestroy), "cuLinkDestroy", &params, [&]() -> CUresult {
    {
      std::lock_guard<std::mutex> lock(sim::Table().mutex);
      if (!sim::Table().links.erase(state)) return CUDA_ERROR_INVALID_HANDLE;
    }
    delete state;
    return CUDA_SUCCESS;
  });
}
