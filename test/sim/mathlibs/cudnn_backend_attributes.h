// What cuDNN's backend API documents about each attribute ("Backend
// Descriptor Types" in the cuDNN API reference): which descriptor type
// owns it, the attribute types a caller may pass, how many elements, and
// whether finalizing needs it or only cudnnBackendGetAttribute may touch it
// (values cuDNN computes: heuristic results, workspace sizes, ...).
#pragma once

#include <cudnn.h>
#include <stdint.h>

#include <limits>

namespace simdnn {

// Constants from cuDNN's headers: numbers, not logic.
// Descriptor and attribute types that cuDNN 9.20-9.26 add to the
// toolkit's 9.19 cudnn_graph.h the sim is compiled against (values from
// 9.26's header). PyTorch 2.15 is built against 9.26 and its cuDNN
// frontend uses them (a softmax operation in every attention graph) when
// the sim reports 9.26. Their attributes: cudnn_backend_attributes_newer.cpp.
inline constexpr int kDescOperationDiagonalBandMask = 44;
inline constexpr int kDescOperationSoftmax = 45;
inline constexpr int kDescOperationTranspose = 46;
inline constexpr int kDescOperationSlice = 47;
inline constexpr int kDescOperationMoeGroupedMatmulBwd = 48;
inline constexpr int kDescOperationRopeFwd = 49;
inline constexpr int kDescOperationRopeBwd = 50;
inline constexpr int kTypeReshapeMode = 31;
inline constexpr int kTypeOperationGraphMode = 32;

inline constexpr int64_t kMany = std::numeric_limits<int64_t>::max();

enum AttrFlags : unsigned {
  kSettable = 0,
  kRequired = 1u << 0,  // cudnnBackendFinalize answers BAD_PARAM while it is unset
  kGetOnly = 1u << 1,   // computed by cuDNN at finalize; SetAttribute answers BAD_PARAM
};

struct AttrSpec {
  int name;        // cudnnBackendAttributeName_t
  int descriptor;  // cudnnBackendDescriptorType_t that has it
  uint64_t types;  // bit (1 << cudnnBackendAttributeType_t) per accepted type
  int64_t min_count, max_count;
  unsigned flags;
};

// The attribute `name` of descriptor type `descriptor`; NULL when that
// type has no such attribute.
const AttrSpec* FindAttr(int descriptor, int name);

// Calls `visit(spec)` for every attribute of a descriptor type.
template <typename Visit>
void ForEachAttr(int descriptor, Visit visit);

// Bytes one element of an attribute type occupies in arrayOfElements (the
// C type cudnn_graph.h documents for it); 0 for an unknown type.
size_t ElementBytes(cudnnBackendAttributeType_t type);

// Whether cudnn_graph.h (9.19, or 9.26 for the types listed above) names
// this descriptor type.
bool KnownDescriptorType(int type);

// The attribute tables (the toolkit header's, the newer releases'), for ForEachAttr.
const AttrSpec* AttrTable(size_t* count);
const AttrSpec* NewerAttrTable(size_t* count);

template <typename Visit>
void ForEachAttr(int descriptor, Visit visit) {
  for (auto table_of : {AttrTable, NewerAttrTable}) {
    size_t n = 0;
    const AttrSpec* table = table_of(&n);
    for (size_t i = 0; i < n; ++i)
      if (table[i].descriptor == descriptor) visit(table[i]);
  }
}

}  // namespace simdnn
