// cuDNN's backend descriptor API (cuDNN API reference, cudnn_graph
// library: cudnnBackendCreateDescriptor, ...SetAttribute, ...GetAttribute,
// ...Finalize, ...DestroyDescriptor, ...Initialize), with the statuses it
// documents. cudnnBackendExecute is in cudnn_backend_execute.cpp.
#include <cudnn.h>

#include <cstring>
#include <new>
#include <string>

#include "cudnn_backend_attributes.h"
#include "cudnn_backend_descriptor.h"
#include "cudnn_backend_finalize.h"

namespace simdnn {
namespace {

constexpr uint64_t kLiveDescriptor = 0x73696d446e6e4244ull;  // "simDnnBD"

std::string Named(const char* what, int value) { return std::string(what) + " " + std::to_string(value); }

// The elements of a CUDNN_TYPE_BACKEND_DESCRIPTOR value: each a live,
// finalized descriptor, copied.
cudnnStatus_t SnapshotsOf(const void* elements, int64_t count, std::vector<Snapshot>* out, std::string* why) {
  const auto* handles = static_cast<const cudnnBackendDescriptor_t*>(elements);
  for (int64_t i = 0; i < count; ++i) {
    Descriptor* d = Live(handles[i]);
    if (!d) return *why = "element is not a live backend descriptor", CUDNN_STATUS_BAD_PARAM;
    if (!d->state.finalized) return *why = "element descriptor is not finalized", CUDNN_STATUS_BAD_PARAM;
    out->push_back(std::make_shared<const State>(d->state));
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace simdnn

using simdnn::Refuse;

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                                           cudnnBackendDescriptor_t* descriptor) {
  const char* api = "cudnnBackendCreateDescriptor";
  if (!descriptor) return Refuse(api, CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "descriptor is NULL");
  if (!simdnn::KnownDescriptorType(descriptorType))
    return Refuse(api, CUDNN_STATUS_NOT_SUPPORTED, simdnn::Named("unknown descriptor type", descriptorType));
  auto* d = new (std::nothrow) simdnn::Descriptor{simdnn::kLiveDescriptor, {}};
  if (!d) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->state.type = descriptorType;
  *descriptor = simdnn::Register(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  simdnn::Descriptor* d = simdnn::Live(descriptor);
  if (!d) return Refuse("cudnnBackendDestroyDescriptor", CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  simdnn::Unregister(d);
  d->magic = 0;
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

// Deprecated in cuDNN 9: returns the descriptor to its just-created state.
cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  simdnn::Descriptor* d = simdnn::Live(descriptor);
  if (!d) return Refuse("cudnnBackendInitialize", CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  const int type = d->state.type;
  d->state = simdnn::State{};
  d->state.type = type;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t elementCount,
                                       const void* arrayOfElements) {
  const char* api = "cudnnBackendSetAttribute";
  simdnn::Descriptor* d = simdnn::Live(descriptor);
  if (!d) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  // The reference: NOT_INITIALIZED when "the backend descriptor ... is
  // already in the finalized state".
  if (d->state.finalized) return Refuse(api, CUDNN_STATUS_NOT_INITIALIZED, "descriptor already finalized");
  const simdnn::AttrSpec* spec = simdnn::FindAttr(d->state.type, attributeName);
  if (!spec)
    return Refuse(api, CUDNN_STATUS_BAD_PARAM,
                  simdnn::Named("no such attribute for this descriptor type:", attributeName));
  if (spec->flags & simdnn::kGetOnly)
    return Refuse(api, CUDNN_STATUS_BAD_PARAM, simdnn::Named("attribute is not settable:", attributeName));
  if (attributeType < 0 || attributeType >= 64 || !(spec->types & (uint64_t{1} << attributeType)))
    return Refuse(api, CUDNN_STATUS_BAD_PARAM, simdnn::Named("wrong attribute type for attribute", attributeName));
  if (elementCount < spec->min_count || elementCount > spec->max_count)
    return Refuse(api, CUDNN_STATUS_BAD_PARAM,
                  simdnn::Named("element count outside the documented range for attribute", attributeName));
  if (elementCount > 0 && !arrayOfElements) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "arrayOfElements is NULL");
  simdnn::Value v{attributeType, elementCount, {}, {}};
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    std::string why;
    if (cudnnStatus_t st = simdnn::SnapshotsOf(arrayOfElements, elementCount, &v.descs, &why);
        st != CUDNN_STATUS_SUCCESS)
      return Refuse(api, st, why);
  } else {
    const size_t bytes = simdnn::ElementBytes(attributeType) * static_cast<size_t>(elementCount);
    v.bytes.resize(bytes);
    if (bytes) memcpy(v.bytes.data(), arrayOfElements, bytes);
  }
  d->state.attrs[attributeName] = std::move(v);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t attributeName,
                                       cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,
                                       int64_t* elementCount, void* arrayOfElements) {
  const char* api = "cudnnBackendGetAttribute";
  simdnn::Descriptor* d = simdnn::Live(descriptor);
  if (!d) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  if (!d->state.finalized) return Refuse(api, CUDNN_STATUS_NOT_INITIALIZED, "descriptor not finalized");
  const simdnn::AttrSpec* spec = simdnn::FindAttr(d->state.type, attributeName);
  if (!spec)
    return Refuse(api, CUDNN_STATUS_BAD_PARAM,
                  simdnn::Named("no such attribute for this descriptor type:", attributeName));
  if (attributeType < 0 || attributeType >= 64 || !(spec->types & (uint64_t{1} << attributeType)))
    return Refuse(api, CUDNN_STATUS_BAD_PARAM, simdnn::Named("wrong attribute type for attribute", attributeName));
  if (requestedElementCount < 0) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "requestedElementCount negative");
  // elementCount may be NULL: cudnn-frontend passes NULL when it reads a
  // value of known size (a workspace size, an engine), and cuDNN accepts it.
  int64_t ignored = 0;
  if (!elementCount) elementCount = &ignored;
  auto it = d->state.attrs.find(attributeName);
  if (it == d->state.attrs.end()) {  // never set and nothing computed: no elements
    *elementCount = 0;
    return CUDNN_STATUS_SUCCESS;
  }
  const simdnn::Value& v = it->second;
  if (v.type != attributeType)
    return Refuse(api, CUDNN_STATUS_BAD_PARAM, simdnn::Named("attribute was set with another type:", attributeName));
  *elementCount = v.count;
  const int64_t n = requestedElementCount < v.count ? requestedElementCount : v.count;
  if (!arrayOfElements || n == 0) return CUDNN_STATUS_SUCCESS;
  if (attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // The caller created the descriptors; cuDNN fills them.
    auto* out = static_cast<cudnnBackendDescriptor_t*>(arrayOfElements);
    for (int64_t i = 0; i < n; ++i) {
      simdnn::Descriptor* target = simdnn::Live(out[i]);
      if (!target || target->state.type != v.descs[i]->type)
        return Refuse(api, CUDNN_STATUS_BAD_PARAM, "output element is not a live descriptor of the attribute's type");
    }
    for (int64_t i = 0; i < n; ++i) simdnn::Live(out[i])->state = *v.descs[i];
  } else {
    memcpy(arrayOfElements, v.bytes.data(), simdnn::ElementBytes(attributeType) * static_cast<size_t>(n));
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  const char* api = "cudnnBackendFinalize";
  simdnn::Descriptor* d = simdnn::Live(descriptor);
  if (!d) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "not a live backend descriptor");
  if (d->state.finalized) return Refuse(api, CUDNN_STATUS_BAD_PARAM, "descriptor already finalized");
  std::string missing;
  simdnn::ForEachAttr(d->state.type, [&](const simdnn::AttrSpec& spec) {
    if ((spec.flags & simdnn::kRequired) && missing.empty() && !d->state.attrs.count(spec.name))
      missing = simdnn::Named("required attribute not set:", spec.name);
  });
  if (!missing.empty()) return Refuse(api, CUDNN_STATUS_BAD_PARAM, missing);
  std::string why;
  if (cudnnStatus_t st = simdnn::FinalizeState(d->state, &why); st != CUDNN_STATUS_SUCCESS) return Refuse(api, st, why);
  d->state.finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
