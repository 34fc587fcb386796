#include "backend_kernel.h"

#include <algorithm>

namespace simmath {
namespace {

const char* TypeToken(int cudnn_data_type) {
  switch (cudnn_data_type) {
    case CUDNN_DATA_HALF: return "f16";
    case CUDNN_DATA_BFLOAT16: return "bf16";
    case CUDNN_DATA_FLOAT: return "f32";
    case CUDNN_DATA_FP8_E4M3: return "e4m3";
    case CUDNN_DATA_FP8_E5M2: return "e5m2";
    default: return "x";
  }
}

int64_t CeilDiv(int64_t a, int64_t b) { return std::max<int64_t>(1, (a + b - 1) / b); }

unsigned Clamp(int64_t v, int64_t most) { return static_cast<unsigned>(std::min(std::max<int64_t>(v, 1), most)); }

// q: [b, h, s_q, d]; k: [b, h_k, s_kv, d] (or K transposed: [b, h, d, s_kv]).
BackendKernel Sdpa(const BackendDesc* q, int64_t s_kv, bool backward) {
  BackendKernel k;
  const std::vector<int64_t> qd = q ? IntsAttr(*q, CUDNN_ATTR_TENSOR_DIMENSIONS) : std::vector<int64_t>{};
  if (qd.size() != 4) return k;
  const int64_t b = qd[0], h = qd[1], s_q = qd[2];
  const char* dt = TypeToken(DataTypeAttr(*q, CUDNN_ATTR_TENSOR_DATA_TYPE));
  k.op = backward ? "sdpa_bprop" : "sdpa_fprop";
  k.name = std::string("cudnn_generated_fort_native_sdpa_sm90_flash_") + (backward ? "bprop" : "fprop") +
           "_wgmma_" + dt + "_knob_3_64x64x64_4x1x1_kernel0_0";
  // One block per 64x64 tile of the score matrix, per head and batch entry;
  // the backward pass does the forward's work twice over (dQ, and dK/dV).
  const int64_t tiles = CeilDiv(s_q, kSdpaTileQ) * CeilDiv(s_kv, kSdpaTileKv) * (backward ? 2 : 1);
  k.grid[0] = Clamp(tiles, 0x7fffffff);
  k.grid[1] = Clamp(h, 65535);
  k.grid[2] = Clamp(b, 65535);
  k.threads = 384;  // three warpgroups, as Hopper flash-attention kernels use
  return k;
}

int64_t KvLength(const BackendDesc* k, bool transposed) {
  const std::vector<int64_t> kd = k ? IntsAttr(*k, CUDNN_ATTR_TENSOR_DIMENSIONS) : std::vector<int64_t>{};
  if (kd.size() != 4) return 1;
  return transposed ? kd[3] : kd[2];
}

}  // namespace

BackendKernel KernelForGraph(const BackendDesc& graph) {
  std::vector<const BackendDesc*> matmuls;
  for (size_t i = 0; i < DescCount(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS); ++i) {
    const BackendDesc* op = DescAttr(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, i);
    if (!op) continue;
    switch (DescType(*op)) {
      case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
        return Sdpa(DescAttr(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, 0),
                    KvLength(DescAttr(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, 0), false), false);
      case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
        return Sdpa(DescAttr(*op, CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, 0),
                    KvLength(DescAttr(*op, CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, 0), false), true);
      case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        matmuls.push_back(op);
        break;
      default:
        break;
    }
  }
  // The frontend's attention graph: S = Q K^T first, then P V (forward: two
  // matmuls; backward: the gradients add at least two more).
  if (matmuls.size() >= 2) {
    const BackendDesc* first = matmuls.front();
    return Sdpa(DescAttr(*first, CUDNN_ATTR_OPERATION_MATMUL_ADESC, 0),
                KvLength(DescAttr(*first, CUDNN_ATTR_OPERATION_MATMUL_BDESC, 0), true), matmuls.size() > 2);
  }
  return BackendKernel{};
}

}  // namespace simmath
