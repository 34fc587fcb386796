#include "collectors/interpose/real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/loader_guard.h"

namespace prof::interpose {
namespace internal {
std::atomic<void*> g_real[kSlotCount];
}  // namespace internal

namespace {

const char* const kExtraNames[] = {
    "__cudaGetKernel",         "cuGetProcAddress", "cuGetProcAddress_v2", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion", "cudaGetDevice", "cudaGetDeviceCount", "cuCtxGetDevice", "cudaRuntimeGetVersion",
    "cuDriverGetVersion", "cuInit"};
static_assert(sizeof(kExtraNames) / sizeof(kExtraNames[0]) == static_cast<size_t>(Extra::kCount));

// Driver symbols are cu<Upper>...; runtime ones cuda... / __cuda...
bool IsDriverSymbol(const char* name) {
  return name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

const void* OurBase() {
  static const void* base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&OurBase), &info);
    return info.dli_fbase;
  }();
  return base;
}

bool IsOurs(void* fn) {
  Dl_info info{};
  return dladdr(fn, &info) != 0 && info.dli_fbase == OurBase();
}

struct FindContext {
  const char* prefix;
  std::vector<std::string> paths;
};

int CollectPaths(dl_phdr_info* info, size_t, void* data) {
  auto* ctx = static_cast<FindContext*>(data);
  const char* path = info->dlpi_name;
  if (path == nullptr || *path == '\0') return 0;
  const char* slash = std::strrchr(path, '/');
  const char* base = slash != nullptr ? slash + 1 : path;
  if (std::strncmp(base, ctx->prefix, std::strlen(ctx->prefix)) == 0) ctx->paths.emplace_back(path);
  return 0;
}

// dlopen is called outside the dl_iterate_phdr callback: the loader lock
// taken by the iteration must not be held while we reopen.
void* FindInLoadedLibraries(const char* prefix, const char* name) {
  FindContext ctx{prefix, {}};
  {
    LoaderSection section;  // base/loader_guard.h
    dl_iterate_phdr(CollectPaths, &ctx);
  }
  for (const std::string& path : ctx.paths) {
    // RTLD_NOLOAD: never load a library the process did not load itself.
    // The reference taken here is kept: the pointer we return must stay valid.
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* fn = dlsym(handle, name);
    if (fn != nullptr && !IsOurs(fn)) return fn;
  }
  return nullptr;
}

}  // namespace

const char* SlotSymbol(size_t slot) {
  if (slot < kApiCount) return ApiName(static_cast<ApiId>(slot)).data();  // literals: NUL-terminated
  size_t extra = slot - kApiCount;
  return extra < static_cast<size_t>(Extra::kCount) ? kExtraNames[extra] : "";
}

namespace internal {

void* Resolve(size_t slot) {
  if (slot >= kSlotCount) return nullptr;
  const char* name = SlotSymbol(slot);
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn != nullptr && IsOurs(fn)) fn = nullptr;
  if (fn == nullptr) fn = FindInLoadedLibraries(IsDriverSymbol(name) ? "libcuda.so" : "libcudart.so", name);
  if (fn != nullptr) g_real[slot].store(fn, std::memory_order_release);
  return fn;
}

}  // namespace internal

void SetRealFunctionForTest(ApiId id, void* fn) {
  internal::g_real[static_cast<size_t>(id)].store(fn, std::memory_order_release);
}

void SetRealFunctionForTest(Extra id, void* fn) {
  internal::g_real[kApiCount + static_cast<size_t>(id)].store(fn, std::memory_order_release);
}

}  // namespace prof::interpose
