// cublasStatus_t names and descriptions, shared by cublasGetStatusName /
// cublasGetStatusString and their cublasLt twins, and the library version
// cublasGetProperty and cublasLtGetProperty report.
#pragma once

#include <cublas_api.h>
#include <library_types.h>

namespace simmath {
const char* CublasStatusName(cublasStatus_t status);
const char* CublasStatusString(cublasStatus_t status);
cublasStatus_t CublasProperty(libraryPropertyType type, int* value);
}  // namespace simmath
