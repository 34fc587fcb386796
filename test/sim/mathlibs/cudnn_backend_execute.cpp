// cudnnBackendExecute: runs a finalized execution plan with a finalized
// variant pack on the handle's stream (cudnnSetStream). Like every sim
// library it computes nothing: it checks the pack as the reference
// documents (BAD_PARAM when a pointer the plan needs is missing) and
// launches the plan's one kernel, named and sized by cudnn_backend_model.h.
#include <cudnn.h>

#include <cstdio>
#include <map>
#include <string>

#include "cudnn_backend_descriptor.h"
#include "cudnn_backend_model.h"
#include "launch.h"

namespace simdnn {
namespace {

// The variant pack's pointers by unique id.
std::map<int64_t, void*> Pointers(const State& pack) {
  std::map<int64_t, void*> out;
  const std::vector<int64_t> uids = GetInts(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  auto it = pack.attrs.find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  if (it == pack.attrs.end()) return out;
  const auto* ptrs = reinterpret_cast<void* const*>(it->second.bytes.data());
  for (size_t i = 0; i < uids.size() && i < static_cast<size_t>(it->second.count); ++i) out[uids[i]] = ptrs[i];
  return out;
}

void* Workspace(const State& pack) {
  auto it = pack.attrs.find(CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  if (it == pack.attrs.end() || it->second.count == 0) return nullptr;
  return *reinterpret_cast<void* const*>(it->second.bytes.data());
}

void LogExecution(const KernelPlan& k, CUstream stream, CUresult r) {
  char members[1024];
  snprintf(members, sizeof(members),
           "\"lib\":\"cudnn\",\"api\":\"cudnnBackendExecute\",\"graph\":\"%s\",\"ops\":\"%s\",\"flops\":%lld,"
           "\"workspace\":%lld,\"stream_handle\":\"%p\",\"grid\":[%u,%u,%u],\"result\":%d,\"kernel\":",
           k.graph.c_str(), k.ops.c_str(), static_cast<long long>(k.flops), static_cast<long long>(k.workspace_bytes),
           static_cast<void*>(stream), k.grid[0], k.grid[1], k.grid[2], static_cast<int>(r));
  simmath::TruthLine(members + simmath::Quoted(k.kernel));
}

}  // namespace
}  // namespace simdnn

extern "C" {

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack) {
  const char* api = "cudnnBackendExecute";
  cudaStream_t stream = nullptr;
  if (cudnnGetStream(handle, &stream) != CUDNN_STATUS_SUCCESS)
    return simdnn::Refuse(api, CUDNN_STATUS_BAD_PARAM, "handle is not a live cuDNN handle");
  simdnn::Descriptor* plan = simdnn::Live(executionPlan);
  simdnn::Descriptor* pack = simdnn::Live(variantPack);
  if (!plan || plan->state.type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || !plan->state.kernel)
    return simdnn::Refuse(api, CUDNN_STATUS_BAD_PARAM, "executionPlan is not a finalized execution plan");
  if (!pack || pack->state.type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !pack->state.finalized)
    return simdnn::Refuse(api, CUDNN_STATUS_BAD_PARAM, "variantPack is not a finalized variant pack");
  const simdnn::KernelPlan& k = *plan->state.kernel;
  const std::map<int64_t, void*> pointers = simdnn::Pointers(pack->state);
  for (int64_t uid : k.uids) {
    auto it = pointers.find(uid);
    if (it == pointers.end() || !it->second)
      return simdnn::Refuse(api, CUDNN_STATUS_BAD_PARAM,
                            "variant pack has no pointer for tensor uid " + std::to_string(uid));
  }
  if (k.workspace_bytes > 0 && !simdnn::Workspace(pack->state))
    return simdnn::Refuse(api, CUDNN_STATUS_BAD_PARAM, "the plan needs a workspace and the variant pack has none");
  const CUstream cu_stream = reinterpret_cast<CUstream>(stream);
  const simmath::Launch launch{
      k.kernel, {k.grid[0], k.grid[1], k.grid[2]}, {k.block[0], k.block[1], k.block[2]}, cu_stream};
  const CUresult r = simmath::LaunchKernel(launch);
  simdnn::LogExecution(k, cu_stream, r);
  if (r != CUDA_SUCCESS) return simdnn::Refuse(api, CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER, "kernel launch failed");
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
