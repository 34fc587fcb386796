// How the simulated math libraries reach the device: like NVIDIA's
// cuBLAS and cuDNN they carry no DT_NEEDED on the CUDA libraries; they
// dlopen libcuda.so.1, take the driver's entry points with
// cuGetProcAddress, and launch kernels loaded from a library of their own
// (cuLibraryLoadData on PTX naming the kernel, cuLibraryGetKernel,
// cuLaunchKernelEx) inside a runtime cudaLaunchKernel, as from NVIDIA's
// statically linked runtime, on the library's calling thread.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <string>

namespace simmath {

struct Launch {
  std::string kernel;  // the kernel's name, as the library's binary would name it
  unsigned grid[3];
  unsigned block[3];
  CUstream stream;
};

// Whether the simulated driver was found and cuInit succeeded (false
// under SIM_NO_DRIVER or another driver): the library then cannot start.
bool DriverReady();

// Launches `launch.kernel` on `launch.stream` in the current context
// (retaining and making current the primary context first when the thread
// has none, as the static runtime inside NVIDIA's libraries does).
// CUDA_ERROR_NOT_FOUND when the simulated driver cannot be reached.
CUresult LaunchKernel(const Launch& launch);

// Appends a JSON object (no braces: its members) to the sim's truth log
// as {"type":"math","pid":...,<members>}; nothing without SIM_TRUTH_FILE.
void TruthLine(const std::string& members);

// {"type":"math_unsupported","pid":...,"name":<entry point>}: a program
// called an entry point the sim answers with "not supported".
void TruthUnsupported(const char* entry_point);

// JSON string literal of `s` (names here hold no quote or backslash).
std::string Quoted(const std::string& s);

}  // namespace simmath
