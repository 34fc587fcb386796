// cuBLASLt's handle, versions, heuristic query and cublasLtMatmul: the
// matmul reads its problem from the descriptors (transposes, compute type,
// epilogue) and layouts (types, rows, columns, batch count), checks it as
// documented and launches one kernel on the stream it is given (a Lt
// handle has no stream), named and timed as cuBLAS's GEMMs (gemm_model.h).
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <new>
#include <string>

#include "gemm_run.h"
#include "handle_magic.h"
#include "launch.h"
#include "lt_attributes.h"
#include "status_names.h"

struct cublasLtContext {
  uint64_t magic;
};

namespace {

using simmath::kLiveLtHandle;
// A cuBLAS handle cast to a Lt handle is a valid Lt handle (handle_magic.h).
bool LiveLt(cublasLtHandle_t h) {
  return h && (h->magic == kLiveLtHandle || h->magic == simmath::kLiveBlasHandle);
}

int64_t Desc(cublasLtMatmulDesc_t d, int attr) { return simmath::AttrValue(simmath::MatmulDescAttrs(), d, attr); }
int64_t Layout(cublasLtMatrixLayout_t l, int attr) { return simmath::AttrValue(simmath::LayoutAttrs(), l, attr); }

bool Fp8(cudaDataType_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

// The problem a matmul describes, or the status cuBLASLt documents for it.
cublasStatus_t Describe(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, simmath::GemmProblem* p) {
  const simmath::AttrTable& lt = simmath::LayoutAttrs();
  if (!simmath::AttrLive(simmath::MatmulDescAttrs(), desc) || !simmath::AttrLive(lt, a) ||
      !simmath::AttrLive(lt, b) || !simmath::AttrLive(lt, c) || !simmath::AttrLive(lt, d))
    return CUBLAS_STATUS_INVALID_VALUE;
  p->trans_a = static_cast<cublasOperation_t>(Desc(desc, CUBLASLT_MATMUL_DESC_TRANSA));
  p->trans_b = static_cast<cublasOperation_t>(Desc(desc, CUBLASLT_MATMUL_DESC_TRANSB));
  p->compute = static_cast<cublasComputeType_t>(Desc(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  const bool ta = p->trans_a != CUBLAS_OP_N, tb = p->trans_b != CUBLAS_OP_N;
  p->m = Layout(d, CUBLASLT_MATRIX_LAYOUT_ROWS);
  p->n = Layout(d, CUBLASLT_MATRIX_LAYOUT_COLS);
  p->k = Layout(a, ta ? CUBLASLT_MATRIX_LAYOUT_ROWS : CUBLASLT_MATRIX_LAYOUT_COLS);
  const int64_t a_m = Layout(a, ta ? CUBLASLT_MATRIX_LAYOUT_COLS : CUBLASLT_MATRIX_LAYOUT_ROWS);
  const int64_t b_k = Layout(b, tb ? CUBLASLT_MATRIX_LAYOUT_COLS : CUBLASLT_MATRIX_LAYOUT_ROWS);
  const int64_t b_n = Layout(b, tb ? CUBLASLT_MATRIX_LAYOUT_ROWS : CUBLASLT_MATRIX_LAYOUT_COLS);
  if (a_m != p->m || b_k != p->k || b_n != p->n || Layout(c, CUBLASLT_MATRIX_LAYOUT_ROWS) != p->m ||
      Layout(c, CUBLASLT_MATRIX_LAYOUT_COLS) != p->n)
    return CUBLAS_STATUS_INVALID_VALUE;
  p->batch = Layout(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
  if (p->batch < 1) return CUBLAS_STATUS_INVALID_VALUE;
  p->a_type = static_cast<cudaDataType_t>(Layout(a, CUBLASLT_MATRIX_LAYOUT_TYPE));
  p->b_type = static_cast<cudaDataType_t>(Layout(b, CUBLASLT_MATRIX_LAYOUT_TYPE));
  p->c_type = static_cast<cudaDataType_t>(Layout(d, CUBLASLT_MATRIX_LAYOUT_TYPE));
  p->tf32 = p->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const bool fp8 = Fp8(p->a_type) && Fp8(p->b_type) &&
                   (p->compute == CUBLAS_COMPUTE_32F || p->compute == CUBLAS_COMPUTE_32F_PEDANTIC);
  if (!fp8 && (p->a_type != p->b_type || !simmath::GemmExSupported(p->compute, p->a_type, p->c_type)))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
  if (!simmath::DriverReady()) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasLtContext* h = new (std::nothrow) cublasLtContext{kLiveLtHandle};
  if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
  *lightHandle = h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  // Only a handle cublasLtCreate made: a cast cuBLAS handle is cublasDestroy's.
  if (!lightHandle || lightHandle->magic != kLiveLtHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  lightHandle->magic = 0;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }
size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return simmath::CublasProperty(type, value);
}

const char* cublasLtGetStatusName(cublasStatus_t status) { return simmath::CublasStatusName(status); }
const char* cublasLtGetStatusString(cublasStatus_t status) { return simmath::CublasStatusString(status); }

// One algorithm for every supported problem, needing no workspace (so it
// fits any preference): cuBLASLt documents NOT_SUPPORTED when no
// algorithm exists, which is what an unsupported type combination gets.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  if (!LiveLt(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount ||
      !simmath::AttrLive(simmath::PreferenceAttrs(), preference))
    return CUBLAS_STATUS_INVALID_VALUE;
  simmath::GemmProblem p{};
  const cublasStatus_t r = Describe(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (r != CUBLAS_STATUS_SUCCESS) {
    *returnAlgoCount = 0;
    return r;
  }
  cublasLtMatmulHeuristicResult_t& out = heuristicResultsArray[0];
  out = cublasLtMatmulHeuristicResult_t{};
  out.algo.data[0] = 1;  // the sim's one algorithm
  out.workspaceSize = 0;
  out.state = CUBLAS_STATUS_SUCCESS;
  const simmath::GemmPlan plan = simmath::PlanGemm(p);
  out.wavesCount = static_cast<float>(plan.grid[0]) * plan.grid[1] * plan.grid[2] / 132.0f;  // 132 SMs
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  if (!LiveLt(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || (workspaceSizeInBytes > 0 && !workspace)) return CUBLAS_STATUS_INVALID_VALUE;
  simmath::GemmProblem p{};
  const cublasStatus_t r = Describe(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (r != CUBLAS_STATUS_SUCCESS) return r;
  if (p.m == 0 || p.n == 0) return CUBLAS_STATUS_SUCCESS;  // nothing to compute
  const std::string extra = "\"epilogue\":" + std::to_string(Desc(computeDesc, CUBLASLT_MATMUL_DESC_EPILOGUE)) + ",";
  if (!simmath::LaunchGemm("cublasLt", "cublasLtMatmul", p, reinterpret_cast<CUstream>(stream), extra))
    return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
