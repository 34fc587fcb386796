// The GEMM entry points PyTorch calls (cublas<t>gemm, cublasGemmEx and
// their batched forms): each one checks its arguments as documented and
// launches one kernel on the handle's stream (gemm_run.h). The typed
// forms fix the types and compute type cuBLAS documents for them; an
// FP32 GEMM may use TF32 tensor cores only when the handle's math mode is
// CUBLAS_TF32_TENSOR_OP_MATH.
#include <cublas_v2.h>

#include "cublas_handle.h"
#include "gemm_run.h"

namespace {

using simmath::GemmCall;
using simmath::GemmProblem;

GemmProblem Problem(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                    int64_t batch, cudaDataType_t ab, cudaDataType_t c, cublasComputeType_t compute) {
  const bool tf32 = compute == CUBLAS_COMPUTE_32F_FAST_TF32 ||
                    (compute == CUBLAS_COMPUTE_32F && simmath::LiveHandle(h) && simmath::Tf32Allowed(h));
  return GemmProblem{m, n, k, batch, ta, tb, ab, ab, c, compute, tf32};
}

// Typed GEMMs: A, B and C share one type.
cublasStatus_t Typed(const char* api, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                     int64_t n, int64_t k, const void* alpha, int64_t lda, int64_t ldb, const void* beta, int64_t ldc,
                     int64_t batch, cudaDataType_t type, cublasComputeType_t compute) {
  GemmCall call{api, Problem(h, ta, tb, m, n, k, batch, type, type, compute), lda, ldb, ldc, alpha, beta};
  return simmath::RunGemm(h, call);
}

bool ValidAlgo(cublasGemmAlgo_t algo) {
  const int a = static_cast<int>(algo);
  return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

cublasStatus_t Ex(const char* api, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                  int64_t k, const void* alpha, cudaDataType_t at, int64_t lda, cudaDataType_t bt, int64_t ldb,
                  const void* beta, cudaDataType_t ct, int64_t ldc, int64_t batch, cublasComputeType_t compute,
                  cublasGemmAlgo_t algo) {
  if (!simmath::LiveHandle(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!ValidAlgo(algo)) return CUBLAS_STATUS_NOT_SUPPORTED;
  GemmProblem p = Problem(h, ta, tb, m, n, k, batch, at, ct, compute);
  p.b_type = bt;
  return simmath::RunGemm(h, GemmCall{api, p, lda, ldb, ldc, alpha, beta});
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return Typed("cublasSgemm_v2", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, CUDA_R_32F,
               CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double* alpha, const double* A, int lda, const double* B, int ldb,
                              const double* beta, double* C, int ldc) {
  return Typed("cublasDgemm_v2", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, CUDA_R_64F,
               CUBLAS_COMPUTE_64F);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const __half* alpha, const __half* A, int lda, const __half* B, int ldb,
                           const __half* beta, __half* C, int ldc) {
  return Typed("cublasHgemm", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, CUDA_R_16F,
               CUBLAS_COMPUTE_16F);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         long long int strideA, const float* B, int ldb, long long int strideB,
                                         const float* beta, float* C, int ldc, long long int strideC, int batchCount) {
  return Typed("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_32F, CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double* alpha, const double* A, int lda,
                                         long long int strideA, const double* B, int ldb, long long int strideB,
                                         const double* beta, double* C, int ldc, long long int strideC,
                                         int batchCount) {
  return Typed("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_64F, CUBLAS_COMPUTE_64F);
}

cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const __half* alpha, const __half* A, int lda,
                                         long long int strideA, const __half* B, int ldb, long long int strideB,
                                         const __half* beta, __half* C, int ldc, long long int strideC,
                                         int batchCount) {
  return Typed("cublasHgemmStridedBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_16F, CUBLAS_COMPUTE_16F);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const float* alpha, const float* const Aarray[], int lda,
                                  const float* const Barray[], int ldb, const float* beta, float* const Carray[],
                                  int ldc, int batchCount) {
  return Typed("cublasSgemmBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_32F, CUBLAS_COMPUTE_32F);
}

// One entry point per cuBLAS type prefix (S, D, H), each one call to Typed: the API's names.
cublasStatus_t cublasDgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const double* alpha, const double* const Aarray[], int lda,
                                  const double* const Barray[], int ldb, const double* beta, double* const Carray[],
                                  int ldc, int batchCount) {
  return Typed("cublasDgemmBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_64F, CUBLAS_COMPUTE_64F);
}

cublasStatus_t cublasHgemmBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                  int n, int k, const __half* alpha, const __half* const Aarray[], int lda,
                                  const __half* const Barray[], int ldb, const __half* beta, __half* const Carray[],
                                  int ldc, int batchCount) {
  return Typed("cublasHgemmBatched", handle, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,
               CUDA_R_16F, CUBLAS_COMPUTE_16F);
}

// cublasSgemmEx: FP32 compute over the given storage types.
cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                             int k, const float* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                             cudaDataType Btype, int ldb, const float* beta, void* C, cudaDataType Ctype, int ldc) {
  return Ex("cublasSgemmEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc, 1,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return Ex("cublasGemmEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc, 1,
            computeType, algo);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const Aarray[], cudaDataType Atype,
                                   int lda, const void* const Barray[], cudaDataType Btype, int ldb, const void* beta,
                                   void* const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return Ex("cublasGemmBatchedEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
            batchCount, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo) {
  return Ex("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype,
            ldc, batchCount, computeType, algo);
}

}  // extern "C"
