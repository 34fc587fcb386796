#include "collectors/cupti/cupti_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/loader_guard.h"

namespace prof::cupti {
namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// 12 for ".../libcudart.so.12" or ".../libcudart.so.12.4.127"; 0 if none.
int SonameMajor(const std::string& path) {
  std::string base = BaseName(path);
  size_t so = base.find(".so.");
  if (so == std::string::npos) return 0;
  return std::atoi(base.c_str() + so + 4);
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

void Add(std::vector<CuptiCandidate>* out, const std::string& path, const std::string& step) {
  for (const auto& existing : *out) {
    if (existing.path == path) return;
  }
  out->push_back({path, step});
}

// cuDriverGetVersion of a libcuda.so.1 the process already loaded (never
// loads one): 12080 -> 12.
int LoadedDriverMajor() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return 0;
  int version = 0;
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(driver, "cuDriverGetVersion"));
  if (get == nullptr || get(&version) != 0) version = 0;
  dlclose(driver);  // drops only the reference RTLD_NOLOAD took
  return version / 1000;
}

}  // namespace

int SearchMajor(const CuptiSearch& search) {
  int major = search.cudart_path.empty() ? 0 : SonameMajor(search.cudart_path);
  if (major == 0) major = search.driver_major;
  return major;
}

std::vector<CuptiCandidate> Candidates(const CuptiSearch& search) {
  if (!search.already_loaded.empty()) return {{search.already_loaded, "already loaded in the process"}};
  if (!search.configured.empty()) return {{search.configured, "PROF_CUPTI_LIB"}};
  std::vector<CuptiCandidate> out;
  int major = SearchMajor(search);
  // Unknown major (neither a runtime nor a driver loaded yet): the newest
  // supported first.
  std::vector<int> majors = major != 0 ? std::vector<int>{major} : std::vector<int>{13, 12};
  for (int m : majors) {
    std::string soname = "libcupti.so." + std::to_string(m);
    if (!search.cudart_path.empty()) {
      std::string dir = DirName(search.cudart_path);
      std::string runtime = BaseName(search.cudart_path);
      Add(&out, dir + "/" + soname, "beside " + runtime);
      // pip wheels: nvidia/cuda_runtime/lib/libcudart.so.<major> beside
      // nvidia/cuda_cupti/lib/libcupti.so.<major>.
      if (BaseName(dir) == "lib" && BaseName(DirName(dir)) == "cuda_runtime") {
        std::string nvidia = DirName(DirName(dir));
        Add(&out, nvidia + "/cuda_cupti/lib/" + soname, "pip wheel layout beside " + runtime);
      }
    }
    Add(&out, soname, "loader search (LD_LIBRARY_PATH, ld.so.cache)");
    if (!search.cuda_home.empty()) {
      Add(&out, search.cuda_home + "/extras/CUPTI/lib64/" + soname, "CUDA_HOME");
      Add(&out, search.cuda_home + "/lib64/" + soname, "CUDA_HOME");
    }
  }
  return out;
}

std::vector<std::string> CandidatePaths(const CuptiSearch& search) {
  std::vector<std::string> paths;
  for (const auto& c : Candidates(search)) paths.push_back(c.path);
  return paths;
}

CuptiSearch ProcessSearch(const std::string& configured) {
  CuptiSearch search;
  search.configured = configured;
  LoadedLibs libs;
  {
    LoaderSection section;  // base/loader_guard.h
    dl_iterate_phdr(VisitObject, &libs);
  }
  search.already_loaded = libs.cupti;
  // Canonical, so a runtime found through RUNPATH $ORIGIN/../.. still shows
  // the pip-wheel layout it lies in.
  search.cudart_path = libs.cudart;
  if (char* real = libs.cudart.empty() ? nullptr : realpath(libs.cudart.c_str(), nullptr); real != nullptr) {
    search.cudart_path = real;
    std::free(real);
  }
  if (search.cudart_path.empty()) search.driver_major = LoadedDriverMajor();
  // secure_getenv: in a setuid/setgid/capability process (AT_SECURE) the
  // caller's environment never picks a library to dlopen.
  const char* home = secure_getenv("CUDA_HOME");
  if (home == nullptr || *home == '\0') home = secure_getenv("CUDA_PATH");
  if (home != nullptr) search.cuda_home = home;
  if (!configured.empty() && !libs.cupti.empty() && configured != libs.cupti) {
    Log().warn("PROF_CUPTI_LIB={} ignored: the process already loaded {} (a second CUPTI would hook the driver twice)",
               configured, libs.cupti);
  }
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
  for (const CuptiCandidate& candidate : Candidates(search)) {
    const std::string& path = candidate.path;
    bool loaded = path == search.already_loaded;
    // A path with a slash is opened as is; a bare name goes through the
    // loader's search. Neither falls through to anything else.
    void* handle = nullptr;
    {
      LoaderSection section;  // base/loader_guard.h: adding a library takes the lock a fork must not copy held
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | (loaded ? RTLD_NOLOAD : 0));
    }
    std::string answer;
    if (handle == nullptr) {
      const char* why = dlerror();
      answer = why != nullptr ? why : "cannot open";
    } else {
      std::string missing;
      if (ResolveCuptiApi(handle, api, &missing)) {
        api->path = path;
        api->found_by = candidate.step;
        // A bare soname: say which file the loader picked.
        if (path.find('/') == std::string::npos) {
          link_map* map = nullptr;
          if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
              map->l_name[0] != '\0') {
            api->path = map->l_name;
          }
        }
        Log().debug("CUPTI search: {} ({}): loaded", path, candidate.step);
        // The handle stays open for the life of the process: CUPTI must not
        // be unloaded while the driver may still call into it.
        return true;
      }
      answer = "lacks " + missing;
      {
        LoaderSection section;  // unloading takes it too
        dlclose(handle);
      }
      *api = CuptiApi{};
    }
    Log().debug("CUPTI search: {} ({}): {}", path, candidate.step, answer);
    if (!tried.empty()) tried += "; ";
    tried += path + ": " + answer;
  }
  *error = "no usable libcupti (" + tried + ")";
  return false;
}

}  // namespace prof::cupti
