// cuDNN's backend (graph) API, the one cuDNN attention and the cuDNN
// frontend use: descriptors are bags of typed attributes (cuDNN API
// reference, "Backend Descriptor Types"); the sim stores what is set,
// hands it back, and answers the queries a client makes to find and run a
// plan: the heuristic offers one engine config (one engine, no knobs, no
// notes), plans need no workspace, and cudnnBackendExecute launches one
// kernel on the handle's stream, named and sized from the operation graph
// (backend_kernel.h). Nothing is computed. A descriptor set as another's
// attribute is kept as a snapshot taken at the Set (as cuDNN copies it):
// the caller may destroy or reuse its own afterwards, as the cuDNN
// frontend does, and nothing a plan refers to can change under it.
#include <cudnn.h>

#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backend_kernel.h"
#include "cudnn_handle.h"
#include "launch.h"

namespace simmath {

struct BackendDesc;

namespace {

constexpr uint64_t kLiveDesc = 0x73696d636462656eull;

struct Attr {
  cudnnBackendAttributeType_t type;
  int64_t count;
  std::vector<uint8_t> bytes;                            // values of every type but descriptors
  std::vector<std::shared_ptr<const BackendDesc>> descs;  // CUDNN_TYPE_BACKEND_DESCRIPTOR: snapshots
};

}  // namespace

struct BackendDesc {
  uint64_t magic = kLiveDesc;
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<int, Attr> attrs;
  BackendKernel kernel;  // an execution plan's, decided when it is finalized
};

namespace {

// Bytes of one element of each attribute type (cudnn_graph.h): pointers,
// int64 and double 8; bool and char 1; cudnnFraction_t two int64; every
// enum and float and int32 4.
size_t ElementBytes(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return 8;
    case CUDNN_TYPE_BOOLEAN:
    case CUDNN_TYPE_CHAR:
      return 1;
    case CUDNN_TYPE_FRACTION:
      return sizeof(cudnnFraction_t);
    default:
      return 4;
  }
}

BackendDesc* AsDesc(void* p) {
  BackendDesc* d = static_cast<BackendDesc*>(p);
  return d && d->magic == kLiveDesc ? d : nullptr;
}

// Stores an attribute; descriptor values (already checked live) as snapshots.
void Put(BackendDesc* d, int name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
  Attr a{type, count, {}, {}};
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < count; ++i)
      a.descs.push_back(std::make_shared<const BackendDesc>(*AsDesc(static_cast<void* const*>(values)[i])));
  } else {
    a.bytes.resize(static_cast<size_t>(count) * ElementBytes(type));
    if (!a.bytes.empty()) memcpy(a.bytes.data(), values, a.bytes.size());
  }
  d->attrs[name] = std::move(a);
}

void PutInt(BackendDesc* d, int name, int64_t v) { Put(d, name, CUDNN_TYPE_INT64, 1, &v); }

// Copies `from` into a descriptor the caller created (how cuDNN returns
// descriptor-valued attributes).
cudnnStatus_t CopyInto(const BackendDesc& from, void* to_ptr) {
  BackendDesc* to = AsDesc(to_ptr);
  if (!to || to->type != from.type) return CUDNN_STATUS_BAD_PARAM;
  to->attrs = from.attrs;
  to->kernel = from.kernel;
  to->finalized = from.finalized;
  return CUDNN_STATUS_SUCCESS;
}

// The heuristic's one engine config, written into the caller's descriptor.
cudnnStatus_t FillEngineConfig(const BackendDesc& heur, void* cfg_ptr) {
  BackendDesc* cfg = AsDesc(cfg_ptr);
  if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
  BackendDesc engine;
  engine.type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
  auto graph = heur.attrs.find(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
  if (graph != heur.attrs.end()) engine.attrs[CUDNN_ATTR_ENGINE_OPERATION_GRAPH] = graph->second;
  PutInt(&engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0);
  engine.finalized = true;
  cfg->attrs.clear();
  void* engine_ptr = &engine;
  Put(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine_ptr);  // a snapshot of it
  cfg->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

// Attributes cuDNN computes rather than stores. Sets *handled when `name`
// is one of them.
cudnnStatus_t GetComputed(const BackendDesc& d, int name, cudnnBackendAttributeType_t type, int64_t requested,
                          int64_t* count, void* array, bool* handled) {
  *handled = true;
  switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
      if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM;
      *count = 1;
      for (int64_t i = 0; i < requested && i < 1; ++i) {
        cudnnStatus_t r = FillEngineConfig(d, static_cast<void**>(array)[i]);
        if (r != CUDNN_STATUS_SUCCESS) return r;
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED:
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: {
      // INT64, or INT32 as the frontend asks for the shared memory used.
      if (type != CUDNN_TYPE_INT64 && type != CUDNN_TYPE_INT32) return CUDNN_STATUS_BAD_PARAM;
      *count = 1;
      const int64_t v = name == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT ? 1 : 0;  // one engine, no workspace
      const int32_t v32 = static_cast<int32_t>(v);
      if (requested >= 1) memcpy(array, type == CUDNN_TYPE_INT64 ? static_cast<const void*>(&v) : &v32, ElementBytes(type));
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION: {
      if (type != CUDNN_TYPE_CHAR) return CUDNN_STATUS_BAD_PARAM;
      static const char kJson[] = "{\"engineId\":0,\"sim\":true}";
      *count = sizeof(kJson);
      if (requested > 0) memcpy(array, kJson, static_cast<size_t>(requested < *count ? requested : *count));
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_KNOB_INFO:
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
    case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE:
    case CUDNN_ATTR_ENGINE_LAYOUT_INFO:
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
    case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
    case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
    case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
      *count = 0;  // no knobs, notes, layouts or intermediates
      return CUDNN_STATUS_SUCCESS;
    default:
      *handled = false;
      return CUDNN_STATUS_SUCCESS;
  }
}

}  // namespace

const BackendDesc* DescAttr(const BackendDesc& d, int name, size_t index) {
  auto it = d.attrs.find(name);
  if (it == d.attrs.end() || index >= it->second.descs.size()) return nullptr;
  return it->second.descs[index].get();
}

size_t DescCount(const BackendDesc& d, int name) {
  auto it = d.attrs.find(name);
  return it == d.attrs.end() ? 0 : static_cast<size_t>(it->second.count);
}

std::vector<int64_t> IntsAttr(const BackendDesc& d, int name) {
  auto it = d.attrs.find(name);
  if (it == d.attrs.end() || it->second.type != CUDNN_TYPE_INT64) return {};
  std::vector<int64_t> v(static_cast<size_t>(it->second.count));
  if (!v.empty()) memcpy(v.data(), it->second.bytes.data(), v.size() * sizeof(int64_t));
  return v;
}

int DataTypeAttr(const BackendDesc& d, int name) {
  auto it = d.attrs.find(name);
  if (it == d.attrs.end() || it->second.bytes.size() < 4) return -1;
  int v = 0;
  memcpy(&v, it->second.bytes.data(), sizeof(v));
  return v;
}

cudnnBackendDescriptorType_t DescType(const BackendDesc& d) { return d.type; }

}  // namespace simmath

using simmath::AsDesc;
using simmath::BackendDesc;

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                           cudnnBackendDescriptor_t* descriptor) {
  if (!descriptor) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  // Types newer than the headers are accepted: the sim reports the cuDNN 9
  // its client was built with, whose frontend may use them (softmax, ...).
  if (static_cast<int>(descriptorType) < 0) return CUDNN_STATUS_NOT_SUPPORTED;
  BackendDesc* d = new (std::nothrow) BackendDesc();
  if (!d) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->type = descriptorType;
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  BackendDesc* d = AsDesc(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  d->magic = 0;
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  BackendDesc* d = AsDesc(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  d->attrs.clear();
  d->finalized = false;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t elementCount,
                                       const void* arrayOfElements) {
  BackendDesc* d = AsDesc(descriptor);
  if (!d || elementCount < 0 || (elementCount > 0 && !arrayOfElements)) return CUDNN_STATUS_BAD_PARAM;
  if (d->finalized) return CUDNN_STATUS_NOT_INITIALIZED;  // documented: already finalized
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < elementCount; ++i)
      if (!AsDesc(static_cast<void* const*>(arrayOfElements)[i])) return CUDNN_STATUS_BAD_PARAM;
  }
  simmath::Put(d, attributeName, attributeType, elementCount, arrayOfElements);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,
                                       int64_t* elementCount, void* arrayOfElements) {
  BackendDesc* d = AsDesc(descriptor);
  if (!d || requestedElementCount < 0) return CUDNN_STATUS_BAD_PARAM;
  // A NULL array asks only for the count, whatever is requested (the cuDNN
  // frontend asks so, with the largest count it could take).
  if (!arrayOfElements) requestedElementCount = 0;
  if (!d->finalized) return CUDNN_STATUS_NOT_INITIALIZED;  // documented: not finalized
  int64_t local_count = 0;
  int64_t* count = elementCount ? elementCount : &local_count;
  bool handled = false;
  cudnnStatus_t r = simmath::GetComputed(*d, attributeName, attributeType, requestedElementCount, count,
                                         arrayOfElements, &handled);
  if (handled) return r;
  auto it = d->attrs.find(attributeName);
  if (it == d->attrs.end()) {
    // Never set and not computed: nothing to hand back. Logged, so a client's
    // reliance on an attribute the sim does not model shows in the truth log.
    simmath::TruthUnsupported(("cudnnBackendGetAttribute:" + std::to_string(attributeName)).c_str());
    *count = 0;
    return CUDNN_STATUS_SUCCESS;
  }
  const simmath::Attr& a = it->second;
  if (a.type != attributeType) return CUDNN_STATUS_BAD_PARAM;
  *count = a.count;
  const int64_t n = requestedElementCount < a.count ? requestedElementCount : a.count;
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < n; ++i) {
      const BackendDesc* from = simmath::DescAttr(*d, attributeName, static_cast<size_t>(i));
      if (!from) return CUDNN_STATUS_BAD_PARAM;
      r = simmath::CopyInto(*from, static_cast<void**>(arrayOfElements)[i]);
      if (r != CUDNN_STATUS_SUCCESS) return r;
    }
  } else if (n > 0) {
    memcpy(arrayOfElements, a.bytes.data(), static_cast<size_t>(n) * simmath::ElementBytes(attributeType));
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  BackendDesc* d = AsDesc(descriptor);
  if (!d || d->finalized) return CUDNN_STATUS_BAD_PARAM;
  if (d->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
    // A plan is self-contained once finalized: what it will launch is
    // decided now, from its engine config's operation graph.
    const BackendDesc* cfg = simmath::DescAttr(*d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, 0);
    const BackendDesc* engine = cfg ? simmath::DescAttr(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, 0) : nullptr;
    const BackendDesc* graph = engine ? simmath::DescAttr(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, 0) : nullptr;
    if (!graph) return CUDNN_STATUS_BAD_PARAM;
    d->kernel = simmath::KernelForGraph(*graph);
  }
  d->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack) {
  BackendDesc* plan = AsDesc(executionPlan);
  BackendDesc* pack = AsDesc(variantPack);
  if (!simmath::LiveCudnn(handle) || !plan || !pack || plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !plan->finalized || !pack->finalized)
    return CUDNN_STATUS_BAD_PARAM;
  const simmath::BackendKernel& k = plan->kernel;
  simmath::Launch launch{k.name, {k.grid[0], k.grid[1], k.grid[2]}, {k.threads, 1, 1},
                         reinterpret_cast<CUstream>(handle->stream)};
  const CUresult r = simmath::LaunchKernel(launch);
  simmath::TruthLine("\"lib\":\"cudnn\",\"api\":\"cudnnBackendExecute\",\"op\":" + simmath::Quoted(k.op) +
                     ",\"grid\":[" + std::to_string(k.grid[0]) + "," + std::to_string(k.grid[1]) + "," +
                     std::to_string(k.grid[2]) + "],\"result\":" + std::to_string(r) +
                     ",\"kernel\":" + simmath::Quoted(k.name));
  return r == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

}  // extern "C"
