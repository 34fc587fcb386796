#include "cudnn_backend_finalize.h"

#include <cstdio>
#include <cstring>

#include "cudnn_backend_model.h"

namespace simdnn {
namespace {

cudnnStatus_t Bad(std::string* why, const std::string& text) {
  *why = text;
  return CUDNN_STATUS_BAD_PARAM;
}

bool OfType(const Snapshot& s, int type) { return s && s->type == type; }

// Tensors: dimensions and strides agree, dimensions positive, strides
// not negative, alignment positive.
cudnnStatus_t Tensor(State& s, std::string* why) {
  const std::vector<int64_t> dims = GetInts(s, CUDNN_ATTR_TENSOR_DIMENSIONS);
  const std::vector<int64_t> strides = GetInts(s, CUDNN_ATTR_TENSOR_STRIDES);
  if (dims.size() != strides.size()) return Bad(why, "tensor dimensions and strides differ in count");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) return Bad(why, "tensor dimension not positive");
    if (strides[i] < 0) return Bad(why, "tensor stride negative");
  }
  if (GetInt(s, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0) <= 0) return Bad(why, "tensor byte alignment not positive");
  if (GetBool(s, CUDNN_ATTR_TENSOR_IS_VIRTUAL, false) && GetBool(s, CUDNN_ATTR_TENSOR_IS_BY_VALUE, false))
    return Bad(why, "a tensor cannot be both virtual and by value");
  return CUDNN_STATUS_SUCCESS;
}

// C[..., M, N] = A[..., M, K] · B[..., K, N]: same rank, inner sizes agree.
cudnnStatus_t Matmul(State& s, std::string* why) {
  const Snapshot a = GetDesc(s, CUDNN_ATTR_OPERATION_MATMUL_ADESC), b = GetDesc(s, CUDNN_ATTR_OPERATION_MATMUL_BDESC),
                 c = GetDesc(s, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
  if (!OfType(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR) || !OfType(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR) ||
      !OfType(c, CUDNN_BACKEND_TENSOR_DESCRIPTOR))
    return Bad(why, "matmul A, B and C must be tensor descriptors");
  if (!OfType(GetDesc(s, CUDNN_ATTR_OPERATION_MATMUL_DESC), CUDNN_BACKEND_MATMUL_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_OPERATION_MATMUL_DESC must be a matmul descriptor");
  const std::vector<int64_t> ad = GetInts(*a, CUDNN_ATTR_TENSOR_DIMENSIONS),
                             bd = GetInts(*b, CUDNN_ATTR_TENSOR_DIMENSIONS),
                             cd = GetInts(*c, CUDNN_ATTR_TENSOR_DIMENSIONS);
  const size_t n = cd.size();
  if (n < 2 || ad.size() != n || bd.size() != n) return Bad(why, "matmul tensors must have one rank of at least 2");
  if (ad[n - 1] != bd[n - 2] || ad[n - 2] != cd[n - 2] || bd[n - 1] != cd[n - 1])
    return Bad(why, "matmul shapes do not agree (A[M,K] B[K,N] C[M,N])");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t PointwiseOp(State& s, std::string* why) {
  if (!OfType(GetDesc(s, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), CUDNN_BACKEND_POINTWISE_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR must be a pointwise descriptor");
  const bool forward =
      GetDesc(s, CUDNN_ATTR_OPERATION_POINTWISE_XDESC) && GetDesc(s, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
  const bool backward =
      GetDesc(s, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC) && GetDesc(s, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC);
  if (!forward && !backward) return Bad(why, "a pointwise operation needs X and Y (or dY and dX)");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t ReductionOp(State& s, std::string* why) {
  if (!OfType(GetDesc(s, CUDNN_ATTR_OPERATION_REDUCTION_DESC), CUDNN_BACKEND_REDUCTION_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_OPERATION_REDUCTION_DESC must be a reduction descriptor");
  return CUDNN_STATUS_SUCCESS;
}

// A handle attribute, when set, must be a live cuDNN handle.
bool LiveHandleOrUnset(const State& s, int attr) {
  auto it = s.attrs.find(attr);
  if (it == s.attrs.end() || it->second.bytes.size() < sizeof(cudnnHandle_t)) return true;
  cudnnHandle_t handle;
  memcpy(&handle, it->second.bytes.data(), sizeof(handle));
  cudaStream_t stream;
  return cudnnGetStream(handle, &stream) == CUDNN_STATUS_SUCCESS;
}

// The sim has one engine for every graph it accepts: global index 0.
cudnnStatus_t OperationGraph(State& s, std::string* why) {
  if (!LiveHandleOrUnset(s, CUDNN_ATTR_OPERATIONGRAPH_HANDLE))
    return Bad(why, "CUDNN_ATTR_OPERATIONGRAPH_HANDLE is not a valid cuDNN handle");
  if (!CheckGraph(s, why)) return CUDNN_STATUS_BAD_PARAM;
  PutInts(s, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, {1});
  return CUDNN_STATUS_SUCCESS;
}

std::shared_ptr<State> KnobInfo() {
  auto k = NewState(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
  PutEnums(*k, CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, {CUDNN_KNOB_TYPE_KERNEL_CFG});
  PutInts(*k, CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, {0});
  PutInts(*k, CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, {kKernelCfgMax});
  PutInts(*k, CUDNN_ATTR_KNOB_INFO_STRIDE, {1});
  return k;
}

// An engine: its knob (KERNEL_CFG), no numerical or behaviour notes, no
// layout requirements.
cudnnStatus_t Engine(State& s, std::string* why) {
  const Snapshot graph = GetDesc(s, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
  if (!OfType(graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_ENGINE_OPERATION_GRAPH must be an operation graph");
  const int64_t index = GetInt(s, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1);
  if (index < 0 || index >= GetInt(*graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, 0)) {
    *why = "CUDNN_ATTR_ENGINE_GLOBAL_INDEX outside [0, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)";
    return CUDNN_STATUS_NOT_SUPPORTED;  // the reference's example of NOT_SUPPORTED for an engine
  }
  PutDescs(s, CUDNN_ATTR_ENGINE_KNOB_INFO, {KnobInfo()});
  PutEnums(s, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, {});
  PutEnums(s, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, {});
  PutDescs(s, CUDNN_ATTR_ENGINE_LAYOUT_INFO, {});
  return CUDNN_STATUS_SUCCESS;
}

// The KERNEL_CFG value of an engine config (0 when no choice names it).
int64_t KernelCfg(const State& cfg) {
  const std::vector<Snapshot>* choices = GetDescs(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
  if (choices)
    for (const Snapshot& c : *choices)
      if (GetEnum(*c, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, -1) == CUDNN_KNOB_TYPE_KERNEL_CFG)
        return GetInt(*c, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, 0);
  return 0;
}

// An engine config: its knob choices must be knobs of the engine, within
// their ranges; it knows its workspace and the kernel it will run.
cudnnStatus_t EngineConfig(State& s, std::string* why) {
  const Snapshot engine = GetDesc(s, CUDNN_ATTR_ENGINECFG_ENGINE);
  if (!OfType(engine, CUDNN_BACKEND_ENGINE_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_ENGINECFG_ENGINE must be an engine");
  const std::vector<Snapshot>* choices = GetDescs(s, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES);
  if (choices)
    for (const Snapshot& c : *choices) {
      if (!OfType(c, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR))
        return Bad(why, "a knob choice is not a knob choice descriptor");
      if (GetEnum(*c, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, -1) != CUDNN_KNOB_TYPE_KERNEL_CFG)
        return Bad(why, "knob choice names a knob the engine does not have");
      const int64_t v = GetInt(*c, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, -1);
      if (v < 0 || v > kKernelCfgMax) return Bad(why, "knob value outside the engine's range");
    }
  auto plan =
      std::make_shared<KernelPlan>(PlanKernel(*GetDesc(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH), KernelCfg(s)));
  PutInts(s, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, {plan->workspace_bytes});
  PutInt32(s, CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED, 0);
  s.kernel = plan;
  return CUDNN_STATUS_SUCCESS;
}

// Heuristics: one engine config for the graph (engine 0, KERNEL_CFG 3),
// whatever the mode.
cudnnStatus_t EngineHeuristics(State& s, std::string* why) {
  const Snapshot graph = GetDesc(s, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
  if (!OfType(graph, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR))
    return Bad(why, "CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH must be an operation graph");
  const int mode = GetEnum(s, CUDNN_ATTR_ENGINEHEUR_MODE, -1);
  if (mode < CUDNN_HEUR_MODE_INSTANT || mode >= CUDNN_HEUR_MODES_COUNT) return Bad(why, "unknown heuristics mode");
  auto engine = NewState(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  PutDescs(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, {graph});
  PutInts(*engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, {0});
  if (cudnnStatus_t st = Engine(*engine, why); st != CUDNN_STATUS_SUCCESS) return st;
  auto choice = NewState(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  PutEnums(*choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, {CUDNN_KNOB_TYPE_KERNEL_CFG});
  PutInts(*choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, {kHeuristicKernelCfg});
  auto cfg = NewState(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  PutDescs(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, {engine});
  PutDescs(*cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, {choice});
  if (cudnnStatus_t st = EngineConfig(*cfg, why); st != CUDNN_STATUS_SUCCESS) return st;
  PutDescs(s, CUDNN_ATTR_ENGINEHEUR_RESULTS, {cfg});
  return CUDNN_STATUS_SUCCESS;
}

// A plan: the engine config's kernel and workspace, and a JSON
// description of itself.
cudnnStatus_t ExecutionPlan(State& s, std::string* why) {
  if (!LiveHandleOrUnset(s, CUDNN_ATTR_EXECUTION_PLAN_HANDLE))
    return Bad(why, "CUDNN_ATTR_EXECUTION_PLAN_HANDLE is not a valid cuDNN handle");
  const Snapshot cfg = GetDesc(s, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
  if (!OfType(cfg, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) || !cfg->kernel)
    return Bad(why, "CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG must be a finalized engine config");
  s.kernel = cfg->kernel;
  PutInts(s, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, {s.kernel->workspace_bytes});
  PutInts(s, CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS, {});
  char json[512];
  snprintf(json, sizeof(json), "{\"engine\":0,\"knobs\":{\"KERNEL_CFG\":%lld},\"kernel\":\"%s\",\"workspace\":%lld}",
           static_cast<long long>(KernelCfg(*cfg)), s.kernel->kernel.c_str(),
           static_cast<long long>(s.kernel->workspace_bytes));
  PutChars(s, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, json);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t VariantPack(State& s, std::string* why) {
  const std::vector<int64_t> uids = GetInts(s, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  auto it = s.attrs.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  const int64_t pointers = it == s.attrs.end() ? 0 : it->second.count;
  if (static_cast<int64_t>(uids.size()) != pointers)
    return Bad(why, "variant pack unique ids and data pointers differ in count");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t FinalizeState(State& s, std::string* why) {
  // A table as a switch: one case per descriptor type.
  switch (s.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      return Tensor(s, why);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return Matmul(s, why);
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return PointwiseOp(s, why);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return ReductionOp(s, why);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      return OperationGraph(s, why);
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      return Engine(s, why);
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      return EngineConfig(s, why);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      return EngineHeuristics(s, why);
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return ExecutionPlan(s, why);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      return VariantPack(s, why);
    case CUDNN_BACKEND_INTERMEDIATE_INFO_DESCRIPTOR:
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
    case CUDNN_BACKEND_LAYOUT_INFO_DESCRIPTOR:
      return Bad(why, "descriptors of this type are made by cuDNN (read them with GetAttribute)");
    default:
      return CUDNN_STATUS_SUCCESS;  // the required attributes and their types are all the sim checks
  }
}

}  // namespace simdnn
