// Modules and libraries (driver_module.cpp): a loaded image, what it holds
// (image.h), and the device storage of its variables. CUlibrary handles
// (cuLibraryLoadData, as the runtime loads fat binaries) wrap a module.
#pragma once

#include <cuda.h>

#include <map>
#include <string>

#include "image.h"

struct CUmod_st {
  sim::ImageContents contents;
  std::map<std::string, void*> storage;  // variable name -> its device storage
};
struct CUlib_st {
  CUmod_st* module;
};

namespace sim {

// The kernel handle for a mangled name (driver_launch.cpp); one per name.
CUfunc_st* KernelNamed(const char* name);
// Whether f is a handle KernelNamed returned (CUfunction and CUkernel alike).
bool IsKernel(const CUfunc_st* f);

}  // namespace sim
