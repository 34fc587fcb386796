// Finding libcupti at run time. Never linked (no DT_NEEDED); never a second
// copy when the process already has one loaded.
#pragma once

#include <string>
#include <vector>

#include "collectors/cupti/cupti_api.h"

namespace prof::cupti {

// Where libcupti may be, in the order DESIGN.md gives: PROF_CUPTI_LIB
// (`configured`); one already loaded in the process; beside the loaded
// libcudart (same directory, and pip wheels' nvidia/cuda_cupti/lib next to
// nvidia/cuda_runtime/lib); $CUDA_HOME/extras/CUPTI/lib64 and
// $CUDA_HOME/lib64; last, the bare soname for the loader's own search.
struct CuptiSearch {
  std::string configured;      // PROF_CUPTI_LIB; empty: search
  std::string already_loaded;  // path of a libcupti in the process, if any
  std::string cudart_path;     // path of the loaded libcudart, if any
  std::string cuda_home;       // $CUDA_HOME, if set
};
std::vector<std::string> CandidatePaths(const CuptiSearch& search);

// The search inputs as this process sees them (dl_iterate_phdr, getenv).
CuptiSearch ProcessSearch(const std::string& configured);

// Whether the process has a CUDA driver (libcuda.so.1) loaded; never loads it.
bool DriverLoaded();

// Opens the first candidate that loads and resolves. On failure returns
// false with a one-line reason in *error (what was tried).
bool LoadCupti(const CuptiSearch& search, CuptiApi* api, std::string* error);

}  // namespace prof::cupti
