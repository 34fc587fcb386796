#include "cudnn_backend_model.h"

#include <algorithm>
#include <set>

#include "cudnn_backend_attributes.h"

namespace simdnn {
namespace {

// Data, not logic: each descriptor type's token, as each simulated library keeps its own tables.
struct OpKind {
  int type;
  const char* token;
};
const OpKind kOpKinds[] = {
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, "conv_fprop"},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, "conv_dgrad"},
    {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, "conv_wgrad"},
    {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise"},
    {CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR, "genstats"},
    {CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul"},
    {CUDNN_BACKEND_OPERATION_BN_FINALIZE_STATISTICS_DESCRIPTOR, "bn_finalize"},
    {CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction"},
    {CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR, "bn_bwd_weights"},
    {CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR, "resample_fwd"},
    {CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR, "resample_bwd"},
    {CUDNN_BACKEND_OPERATION_CONCAT_DESCRIPTOR, "concat"},
    {CUDNN_BACKEND_OPERATION_SIGNAL_DESCRIPTOR, "signal"},
    {CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR, "norm_fwd"},
    {CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR, "norm_bwd"},
    {CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape"},
    {CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR, "rng"},
    {CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, "paged_cache_load"},
    {CUDNN_BACKEND_OPERATION_BLOCK_SCALE_QUANTIZE_DESCRIPTOR, "block_scale_quantize"},
    {CUDNN_BACKEND_OPERATION_BLOCK_SCALE_DEQUANTIZE_DESCRIPTOR, "block_scale_dequantize"},
    {CUDNN_BACKEND_OPERATION_EXPAND_BAND_MATRIX_DESCRIPTOR, "expand_band_matrix"},
    {CUDNN_BACKEND_OPERATION_CONTRACT_BAND_MATRIX_DESCRIPTOR, "contract_band_matrix"},
    {CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, "sdpa_fwd"},
    {CUDNN_BACKEND_OPERATION_MOE_GROUPED_MATMUL_DESCRIPTOR, "moe_grouped_matmul"},
    {CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, "sdpa_bwd"},
    {kDescOperationDiagonalBandMask, "diagonal_band_mask"},
    {kDescOperationSoftmax, "softmax"},
    {kDescOperationTranspose, "transpose"},
    {kDescOperationSlice, "slice"},
    {kDescOperationMoeGroupedMatmulBwd, "moe_grouped_matmul_bwd"},
    {kDescOperationRopeFwd, "rope_fwd"},
    {kDescOperationRopeBwd, "rope_bwd"},
};

const char* OpToken(int type) {
  for (const OpKind& k : kOpKinds)
    if (k.type == type) return k.token;
  return nullptr;
}

std::vector<int64_t> Dims(const Snapshot& tensor) {
  return tensor ? GetInts(*tensor, CUDNN_ATTR_TENSOR_DIMENSIONS) : std::vector<int64_t>{};
}

int64_t Product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

// 2·batch·M·N·K of C[..., M, N] = A[..., M, K] · B[..., K, N], batch from C.
int64_t MatmulFlops(const State& op) {
  const std::vector<int64_t> a = Dims(GetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC));
  const std::vector<int64_t> c = Dims(GetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
  if (a.size() < 2 || c.size() < 2) return 0;
  return 2 * Product(c, 0, c.size()) * a[a.size() - 1];
}

// 2 · (elements of Y, or dY for the backward passes, which do the forward's
// multiply-adds again) · (elements of one filter: W's dims after K).
int64_t ConvFlops(const State& op, int out_attr, int w_attr) {
  const std::vector<int64_t> y = Dims(GetDesc(op, out_attr));
  const std::vector<int64_t> w = Dims(GetDesc(op, w_attr));
  if (y.empty() || w.size() < 2) return 0;
  return 2 * Product(y, 0, y.size()) * Product(w, 1, w.size());
}

// The four shape numbers of attention from Q [B, H, Sq, D] and K [B, Hk, Skv, D].
struct Attention {
  int64_t b = 1, h = 1, sq = 1, skv = 1, d = 1;
  int dtype = CUDNN_DATA_HALF;
};
Attention AttentionOf(const Snapshot& q, const Snapshot& k) {
  Attention a;
  const std::vector<int64_t> qd = Dims(q), kd = Dims(k);
  if (qd.size() == 4) a = {qd[0], qd[1], qd[2], 1, qd[3], a.dtype};
  if (kd.size() >= 2) a.skv = kd[kd.size() - 2];
  if (q) a.dtype = GetEnum(*q, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_HALF);
  return a;
}

const char* DtypeToken(int dtype) {
  switch (dtype) {
    case CUDNN_DATA_BFLOAT16:
      return "bf16";
    case CUDNN_DATA_FLOAT:
      return "f32";
    case CUDNN_DATA_FP8_E4M3:
      return "e4m3";
    case CUDNN_DATA_FP8_E5M2:
      return "e5m2";
    default:
      return "f16";
  }
}

bool IsTensor(const Snapshot& s) { return s && s->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR; }

// Every tensor an operation names (its ragged-offset tensors included).
void CollectTensors(const State& op, std::vector<Snapshot>* out) {
  for (const auto& [name, value] : op.attrs)
    for (const Snapshot& d : value.descs)
      if (IsTensor(d)) {
        out->push_back(d);
        if (Snapshot ragged = GetDesc(*d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC)) out->push_back(ragged);
      }
}

std::string Ceil(int64_t v) { return std::to_string(v); }

}  // namespace

bool CheckGraph(const State& graph, std::string* why) {
  const std::vector<Snapshot>* ops = GetDescs(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (!ops || ops->empty()) return *why = "CUDNN_ATTR_OPERATIONGRAPH_OPS holds no operation", false;
  for (const Snapshot& op : *ops) {
    if (!OpToken(op->type)) return *why = "an element of CUDNN_ATTR_OPERATIONGRAPH_OPS is not an operation", false;
  }
  return true;
}

KernelPlan PlanKernel(const State& graph, int64_t kernel_cfg) {
  KernelPlan plan{};
  const std::vector<Snapshot>* ops = GetDescs(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  std::vector<std::string> kinds;
  std::vector<Snapshot> tensors;
  Snapshot first_matmul;
  int matmuls = 0;
  bool exp = false;  // a softmax: an EXP pointwise operation, or (9.20+) a softmax operation
  for (const Snapshot& op : ops ? *ops : std::vector<Snapshot>{}) {
    const std::string token = OpToken(op->type);
    plan.ops += (plan.ops.empty() ? "" : ",") + token;
    if (std::find(kinds.begin(), kinds.end(), token) == kinds.end()) kinds.push_back(token);
    CollectTensors(*op, &tensors);
    switch (op->type) {
      case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
        plan.flops += MatmulFlops(*op);
        if (matmuls++ == 0) first_matmul = op;
        break;
      case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        if (Snapshot pw = GetDesc(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR))
          exp = exp || GetEnum(*pw, CUDNN_ATTR_POINTWISE_MODE, -1) == CUDNN_POINTWISE_EXP;
        break;
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
        plan.flops +=
            ConvFlops(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
        break;
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
        plan.flops +=
            ConvFlops(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W);
        break;
      case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
        plan.flops += ConvFlops(*op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW);
        break;
      case kDescOperationSoftmax:
        exp = true;
        break;
      default:
        break;
    }
  }

  // Attention: the unified SDPA operations, or the composite graph
  // cudnn-frontend builds (two matmuls around a softmax forward; the
  // recomputed S, dV, dP, dQ and dK matmuls around softmax backward).
  Attention att;
  bool fprop = false, bprop = false;
  for (const Snapshot& op : ops ? *ops : std::vector<Snapshot>{}) {
    if (op->type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR) {
      att = AttentionOf(GetDesc(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC),
                        GetDesc(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC));
      plan.flops += 4 * att.b * att.h * att.sq * att.skv * att.d;  // S = Q·Kᵀ, O = P·V
      fprop = true;
    } else if (op->type == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR) {
      att = AttentionOf(GetDesc(*op, CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC),
                        GetDesc(*op, CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC));
      plan.flops += 10 * att.b * att.h * att.sq * att.skv * att.d;  // S, dV, dP, dQ, dK
      bprop = true;
    }
  }
  if (!fprop && !bprop && exp && first_matmul) {
    const Snapshot a = GetDesc(*first_matmul, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
    const std::vector<int64_t> c = Dims(GetDesc(*first_matmul, CUDNN_ATTR_OPERATION_MATMUL_CDESC));
    att = AttentionOf(a, nullptr);
    if (!c.empty()) att.skv = c.back();
    fprop = matmuls == 2;
    bprop = matmuls >= 4;
  }

  const int64_t units = std::max<int64_t>(1, (plan.flops + kFlopsPerBlock - 1) / kFlopsPerBlock);
  plan.block[0] = kThreadsPerBlock;
  plan.block[1] = plan.block[2] = 1;
  const std::string knob = "knob_" + std::to_string(kernel_cfg);
  if (fprop || bprop) {
    const int64_t heads = std::max<int64_t>(1, att.b * att.h);
    plan.graph = fprop ? "sdpa_fprop" : "sdpa_bprop";
    plan.grid[0] = static_cast<unsigned>((units + heads - 1) / heads);
    plan.grid[1] = static_cast<unsigned>(std::max<int64_t>(1, att.h));
    plan.grid[2] = static_cast<unsigned>(std::max<int64_t>(1, att.b));
    const int64_t dpad = att.d <= 128 ? 128 : 256;
    plan.kernel = std::string("cudnn_generated_fort_native_sdpa_sm90_flash_") + (fprop ? "fprop" : "bprop") +
                  "_wgmma_" + DtypeToken(att.dtype) + "_" + knob + "_64x64x" + Ceil(dpad) + "_4x1x1_kernel0_0";
    // Backward accumulates dQ in FP32 across the K/V tiles: B·H·Sq·D floats.
    if (bprop) plan.workspace_bytes = 4 * att.b * att.h * att.sq * att.d;
  } else {
    plan.graph = "generic";
    plan.grid[0] = static_cast<unsigned>(units);
    plan.grid[1] = plan.grid[2] = 1;
    std::string name = "cudnn_generated_fort_native";
    for (const std::string& k : kinds) name += "_" + k;
    plan.kernel = name + "_sm90_" + knob + "_kernel0_0";
  }

  std::set<int64_t> uids;
  for (const Snapshot& t : tensors)
    if (!GetBool(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, false)) uids.insert(GetInt(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0));
  plan.uids.assign(uids.begin(), uids.end());
  return plan;
}

}  // namespace simdnn
