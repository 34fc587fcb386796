// cublasStatus_t names and descriptions, shared by cublasGetStatusName /
// cublasGetStatusString and their cublasLt twins.
#pragma once

#include <cublas_api.h>

namespace simmath {
const char* CublasStatusName(cublasStatus_t status);
const char* CublasStatusString(cublasStatus_t status);
}  // namespace simmath
