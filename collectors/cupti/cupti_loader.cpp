#include "collectors/cupti/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace prof::cupti {
namespace {

// The soname matching the headers libprof is built with (CUDA 13).
constexpr const char* kCuptiSoname = "libcupti.so.13";

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct LoadedLibs {
  std::string cupti;
  std::string cudart;
};

int VisitObject(dl_phdr_info* info, size_t, void* data) {
  auto* libs = static_cast<LoadedLibs*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  std::string path = info->dlpi_name;
  std::string base = BaseName(path);
  if (libs->cupti.empty() && base.rfind("libcupti.so", 0) == 0) libs->cupti = path;
  if (libs->cudart.empty() && base.rfind("libcudart.so", 0) == 0) libs->cudart = path;
  return 0;
}

void AddUnique(std::vector<std::string>* out, const std::string& path) {
  for (const auto& existing : *out) {
    if (existing == path) return;
  }
  out->push_back(path);
}

}  // namespace

std::vector<std::string> CandidatePaths(const CuptiSearch& search) {
  std::vector<std::string> out;
  // A loaded copy wins over everything, PROF_CUPTI_LIB included: two copies
  // of CUPTI in one process would both hook the driver.
  if (!search.already_loaded.empty()) return {search.already_loaded};
  if (!search.configured.empty()) return {search.configured};
  if (!search.cudart_path.empty()) {
    std::string dir = DirName(search.cudart_path);
    AddUnique(&out, dir + "/" + kCuptiSoname);
    // pip wheels: nvidia/cuda_runtime/lib/libcudart.so.* beside nvidia/cuda_cupti/lib.
    std::string nvidia = DirName(DirName(dir));
    if (!nvidia.empty()) AddUnique(&out, nvidia + "/cuda_cupti/lib/" + kCuptiSoname);
  }
  if (!search.cuda_home.empty()) {
    AddUnique(&out, search.cuda_home + "/extras/CUPTI/lib64/" + kCuptiSoname);
    AddUnique(&out, search.cuda_home + "/lib64/" + kCuptiSoname);
  }
  AddUnique(&out, kCuptiSoname);  // the loader's own search (LD_LIBRARY_PATH, cache)
  return out;
}

CuptiSearch ProcessSearch(const std::string& configured) {
  CuptiSearch search;
  search.configured = configured;
  LoadedLibs libs;
  dl_iterate_phdr(VisitObject, &libs);
  search.already_loaded = libs.cupti;
  search.cudart_path = libs.cudart;
  const char* home = std::getenv("CUDA_HOME");
  if (home == nullptr || *home == '\0') home = std::getenv("CUDA_PATH");
  if (home != nullptr) search.cuda_home = home;
  return search;
}

bool DriverLoaded() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  dlclose(driver);  // drops only the reference RTLD_NOLOAD took
  return true;
}

bool LoadCupti(const CuptiSearch& search, CuptiApi* api, std::string* error) {
  std::string tried;
  for (const std::string& path : CandidatePaths(search)) {
    bool loaded = path == search.already_loaded;
    // A path with a slash is opened as is; a bare name goes through the
    // loader's search. Neither falls through to anything else.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (loaded ? RTLD_NOLOAD : 0));
    if (handle == nullptr) {
      const char* why = dlerror();
      // A missing file in the search order is normal; remember it briefly.
      if (!tried.empty()) tried += "; ";
      tried += path + ": " + (why != nullptr ? why : "cannot open");
      continue;
    }
    std::string missing;
    if (!ResolveCuptiApi(handle, api, &missing)) {
      if (!tried.empty()) tried += "; ";
      tried += path + ": lacks " + missing;
      dlclose(handle);
      *api = CuptiApi{};
      continue;
    }
    api->path = path;
    // The handle stays open for the life of the process: CUPTI must not be
    // unloaded while the driver may still call into it.
    return true;
  }
  *error = "no usable libcupti (" + tried + ")";
  return false;
}

}  // namespace prof::cupti
