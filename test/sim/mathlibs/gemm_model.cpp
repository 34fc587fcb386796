// Names follow the families NVIDIA's cuBLAS kernels show in profiles of
// an H100: SIMT single precision as `ampere_sgemm_<tile>_<ops>`, tensor-core
// kernels as `sm90_xmma_gemm_<A><B>_<mma><acc>_<C>_<ops>_n_tilesize...`.
#include "gemm_model.h"

#include <algorithm>

namespace simmath {
namespace {

const char* Token(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return "f32";
    case CUDA_R_16F: return "f16";
    case CUDA_R_16BF: return "bf16";
    case CUDA_R_64F: return "f64";
    case CUDA_R_8I: return "s8";
    case CUDA_R_32I: return "s32";
    case CUDA_R_8F_E4M3: return "e4m3";
    case CUDA_R_8F_E5M2: return "e5m2";
    case CUDA_C_32F: return "c32";
    case CUDA_C_64F: return "c64";
    default: return "x";
  }
}

// Bytes per element, for the k depth of a tile (128 bytes of k per stage).
int64_t ElementBytes(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    case CUDA_R_64F: case CUDA_C_32F: return 8;
    case CUDA_C_64F: return 16;
    case CUDA_R_8I: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: return 1;
    default: return 4;
  }
}

const char* Accumulator(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: return "f16";
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: return "f64";
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: return "s32";
    default: return "f32";
  }
}

char Op(cublasOperation_t op) { return op == CUBLAS_OP_N ? 'n' : 't'; }

unsigned Clamp(int64_t v, int64_t most) { return static_cast<unsigned>(std::min(std::max<int64_t>(v, 1), most)); }

}  // namespace

bool KnownDataType(cudaDataType_t t) { return Token(t)[0] != 'x'; }

GemmPlan PlanGemm(const GemmProblem& p) {
  GemmPlan plan{};
  const std::string ops = {Op(p.trans_a), Op(p.trans_b)};
  const bool simt_fp32 = p.a_type == CUDA_R_32F && !p.tf32 &&
                         (p.compute == CUBLAS_COMPUTE_32F || p.compute == CUBLAS_COMPUTE_32F_PEDANTIC);
  if (simt_fp32) {
    plan.kernel = "ampere_sgemm_128x128_" + ops;
  } else {
    const char* mma = (p.a_type == CUDA_R_32F && p.tf32) ? "tf32" : Token(p.a_type);
    plan.kernel = std::string("sm90_xmma_gemm_") + Token(p.a_type) + Token(p.b_type) + "_" + mma +
                  Accumulator(p.compute) + "_" + Token(p.c_type) + "_" + ops + "_n_tilesize128x128x" +
                  std::to_string(128 / ElementBytes(p.a_type)) +
                  "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  }
  const int64_t tiles_m = (p.m + kTileM - 1) / kTileM;
  const int64_t tiles_n = (p.n + kTileN - 1) / kTileN;
  // k == 0 still runs one slice: C is scaled by beta.
  const int64_t slices = p.batch * std::max<int64_t>(1, (p.k + kSliceK - 1) / kSliceK);
  // y and z are limited to 65535 by CUDA; what does not fit widens x.
  const int64_t y = std::min<int64_t>(tiles_n, 65535), z = std::min<int64_t>(slices, 65535);
  const int64_t x = tiles_m * ((tiles_n + y - 1) / y) * ((slices + z - 1) / z);
  plan.grid[0] = Clamp(x, 0x7fffffff);
  plan.grid[1] = Clamp(y, 65535);
  plan.grid[2] = Clamp(z, 65535);
  plan.block[0] = kThreadsPerBlock;
  plan.block[1] = plan.block[2] = 1;
  return plan;
}

}  // namespace simmath
