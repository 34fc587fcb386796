// Finding libcupti at run time. Never linked (no DT_NEEDED); never a second
// copy when the process already has one loaded.
#pragma once

#include <string>
#include <vector>

#include "collectors/cupti/cupti_api.h"

namespace prof::cupti {

// What the search knows about the process. The CUPTI to load is the one of
// the CUDA major the process runs: that of the loaded libcudart.so.<major>,
// or for a driver-only program the major of cuDriverGetVersion.
struct CuptiSearch {
  std::string configured;      // PROF_CUPTI_LIB; empty: search
  std::string already_loaded;  // path of a libcupti in the process, if any
  std::string cudart_path;     // path of the loaded libcudart, if any
  int driver_major = 0;        // cuDriverGetVersion / 1000 when no libcudart is loaded; 0: unknown
  std::string cuda_home;       // $CUDA_HOME (or $CUDA_PATH), if set
};

// One place to try, and the step of the search it comes from.
struct CuptiCandidate {
  std::string path;  // a path with a slash is opened as is; a bare soname goes through the loader
  std::string step;  // "PROF_CUPTI_LIB", "already loaded", "beside libcudart.so.12", ...
  bool operator==(const CuptiCandidate& o) const { return path == o.path && step == o.step; }
};

// The search order: a libcupti already in the process (a second copy would
// hook the driver twice), else PROF_CUPTI_LIB alone; else, with the soname
// libcupti.so.<major>, the directory of the loaded libcudart, the pip-wheel
// layout (.../nvidia/cuda_runtime/lib -> .../nvidia/cuda_cupti/lib), the
// loader's own search (LD_LIBRARY_PATH, ld.so.cache), then $CUDA_HOME.
std::vector<CuptiCandidate> Candidates(const CuptiSearch& search);
std::vector<std::string> CandidatePaths(const CuptiSearch& search);

// The CUDA major the search looks for: libcudart's soname, else the
// driver's, else 0 (both 13 and 12 are tried, newest first).
int SearchMajor(const CuptiSearch& search);

// The search inputs as this process sees them (dl_iterate_phdr, getenv, and
// cuDriverGetVersion of an already loaded libcuda.so.1 when no libcudart is).
CuptiSearch ProcessSearch(const std::string& configured);

// Whether the process has a CUDA driver (libcuda.so.1) loaded; never loads it.
bool DriverLoaded();

// Opens the first candidate that loads and resolves, logging each try at
// debug. On failure returns false with every path tried and its exact error
// in *error.
bool LoadCupti(const CuptiSearch& search, CuptiApi* api, std::string* error);

}  // namespace prof::cupti
