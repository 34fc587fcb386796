// Which CUDA release this build of the simulated stack impersonates.
//
// Every source of test/sim is compiled once per personality (CMakeLists.txt:
// SIM_PERSONALITIES), with SIM_CUDA_MAJOR set: 13 builds lib/ (libcudart.so.13,
// libcupti.so.13), 12 builds lib12/ (libcudart.so.12, libcupti.so.12). A file
// that reports a version, or writes a CUPTI record, takes it from here.
#pragma once

#include <cuda.h>
#include <cupti_version.h>

#ifndef SIM_CUDA_MAJOR
#define SIM_CUDA_MAJOR 13
#endif

#if SIM_CUDA_MAJOR == 13
// The toolkit the stack is built from (CUDA 13.0).
#define SIM_CUDA_VERSION CUDA_VERSION
#define SIM_CUPTI_API_VERSION CUPTI_API_VERSION
#elif SIM_CUDA_MAJOR == 12
// CUDA 12.4: runtime and driver report 12040; its CUPTI reports API version
// 22 (cupti_version.h: "v22 : CUDA Toolkit 12.4") and delivers that release's
// record structs (cupti/record_layouts.h). Chosen because it predates 12.8,
// where Memcpy and Synchronization records changed layout, so a client
// decoding 12.x records meets the older layouts here.
#define SIM_CUDA_VERSION 12040
#define SIM_CUPTI_API_VERSION 22
#else
#error "SIM_CUDA_MAJOR must be 12 or 13"
#endif
