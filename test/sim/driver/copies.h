// The one copy engine every copy entry point uses (driver_copy.cpp): a box
// of width x height x depth bytes between two pitched regions. A region's
// memory kind comes from its pointer (unified addressing) unless the caller
// names it (CUDA arrays: CUPTI_ACTIVITY_MEMORY_KIND_ARRAY). The record's
// copy kind follows (HtoD, DtoH, HtoA, AtoH, AtoA, AtoD, DtoA, DtoD, HtoH).
#pragma once

#include <cuda.h>
#include <stddef.h>

namespace sim {

struct CopyRegion {
  char* base = nullptr;      // first byte of the box
  size_t pitch = 0;          // bytes between rows
  size_t slice_pitch = 0;    // bytes between slices (depth > 1)
  int memory_kind = 0;       // CUpti_ActivityMemoryKind; 0: from the pointer
};

CUresult CopyBox(const CopyRegion& src, const CopyRegion& dst, size_t width, size_t height, size_t depth,
                 CUstream stream, bool synchronous);

// A plain copy of `bytes` (one row).
CUresult CopyBytes(void* dst, const void* src, size_t bytes, CUstream stream, bool synchronous);

// The box a CUDA_MEMCPY3D describes (arrays included), checked.
CUresult ResolveCopy3D(const CUDA_MEMCPY3D* copy, CopyRegion* src, CopyRegion* dst, size_t* width, size_t* rows,
                       size_t* depth);

// A memset of rows x width bytes at a pitch (cuMemsetD8/D2D8).
CUresult SetBox(void* dst, size_t pitch, unsigned char value, size_t width, size_t rows, CUstream stream);

// cuMemcpy2D[Async] with any ends, arrays included (driver_array.cpp).
CUresult Copy2DDescribed(const CUDA_MEMCPY2D* copy, CUstream stream, bool synchronous);

// Device memory of any kind the copy engine treats as on the device.
bool OnDevice(int memory_kind);

}  // namespace sim
