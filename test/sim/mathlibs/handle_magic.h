// Marks of live handles. cuBLAS documents that "any valid cublasHandle_t
// can be used in place of cublasLtHandle_t with a simple cast" (PyTorch
// does exactly that for its Lt matmuls), so both handle structs begin with
// a magic word and libcublasLt accepts either one.
#pragma once

#include <stdint.h>

namespace simmath {
inline constexpr uint64_t kLiveBlasHandle = 0x63626c6173484e44ull;  // "cblasHND"
inline constexpr uint64_t kLiveLtHandle = 0x73696d4c74484e44ull;    // "simLtHND"
}  // namespace simmath
