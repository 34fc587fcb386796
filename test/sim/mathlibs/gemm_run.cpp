#include "gemm_run.h"

#include <algorithm>
#include <cstdio>

#include "cublas_handle.h"
#include "launch.h"

namespace simmath {
namespace {

bool ValidOp(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

}  // namespace

bool GemmExSupported(cublasComputeType_t compute, cudaDataType_t ab, cudaDataType_t c) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      return ab == CUDA_R_16F && c == CUDA_R_16F;
    case CUBLAS_COMPUTE_32I:
    case CUBLAS_COMPUTE_32I_PEDANTIC:
      return ab == CUDA_R_8I && c == CUDA_R_32I;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      return (ab == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
             (ab == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) || (ab == CUDA_R_8I && c == CUDA_R_32F) ||
             (ab == CUDA_R_32F && c == CUDA_R_32F) || (ab == CUDA_C_8I && c == CUDA_C_32F) ||
             (ab == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return (ab == CUDA_R_32F && c == CUDA_R_32F) || (ab == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
      return (ab == CUDA_R_64F && c == CUDA_R_64F) || (ab == CUDA_C_64F && c == CUDA_C_64F);
    default:
      return false;
  }
}

bool LaunchGemm(const char* lib, const char* api, const GemmProblem& p, CUstream stream, const std::string& extra) {
  const GemmPlan plan = PlanGemm(p);
  Launch launch{plan.kernel, {plan.grid[0], plan.grid[1], plan.grid[2]}, {plan.block[0], plan.block[1], plan.block[2]},
                stream};
  const CUresult r = LaunchKernel(launch);
  char members[512];
  snprintf(members, sizeof(members),
           "\"lib\":\"%s\",\"api\":\"%s\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"batch\":%lld,\"transa\":%d,"
           "\"transb\":%d,\"stream_handle\":\"%p\",\"grid\":[%u,%u,%u],\"result\":%d,",
           lib, api, static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
           static_cast<long long>(p.batch), static_cast<int>(p.trans_a), static_cast<int>(p.trans_b),
           static_cast<void*>(stream), plan.grid[0], plan.grid[1], plan.grid[2], static_cast<int>(r));
  TruthLine(members + extra + "\"kernel\":" + Quoted(plan.kernel));
  return r == CUDA_SUCCESS;
}

cublasStatus_t RunGemm(cublasHandle_t handle, const GemmCall& call) {
  if (!LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const GemmProblem& p = call.problem;
  if (!ValidOp(p.trans_a) || !ValidOp(p.trans_b)) return CUBLAS_STATUS_INVALID_VALUE;
  if (p.m < 0 || p.n < 0 || p.k < 0 || p.batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (call.lda < std::max<int64_t>(1, p.trans_a == CUBLAS_OP_N ? p.m : p.k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (call.ldb < std::max<int64_t>(1, p.trans_b == CUBLAS_OP_N ? p.k : p.n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (call.ldc < std::max<int64_t>(1, p.m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!call.alpha || !call.beta) return CUBLAS_STATUS_INVALID_VALUE;
  if (p.a_type != p.b_type || !GemmExSupported(p.compute, p.a_type, p.c_type)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (p.m == 0 || p.n == 0 || p.batch == 0) return CUBLAS_STATUS_SUCCESS;  // quick return: nothing to compute
  if (!LaunchGemm("cublas", call.api, p, handle->stream, "")) return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace simmath
