// cuBLASLt's descriptors (matmul, matrix layout, preference) are opaque
// fixed-size structs the caller may allocate itself (the *Init_internal
// entry points), so the sim keeps each descriptor's state inside that
// struct: a magic word, then every documented attribute at a fixed offset,
// 8-byte attributes first. The attribute tables (ids, sizes, defaults)
// come from cublasLt.h's comments on each attribute.
#pragma once

#include <cublasLt.h>
#include <stddef.h>
#include <stdint.h>

namespace simmath {

struct AttrSpec {
  int id;
  uint8_t size;     // bytes of the documented type
  int64_t default_value;  // stored in `size` bytes (floats: their bit pattern)
};

struct AttrTable {
  const AttrSpec* specs;
  int count;
  uint64_t magic;  // marks a descriptor of this kind as initialised
};

const AttrTable& MatmulDescAttrs();
const AttrTable& LayoutAttrs();
const AttrTable& PreferenceAttrs();

// Writes the magic and every default into `storage` (`bytes` long); false
// when the table does not fit (never for NVIDIA's opaque sizes).
bool AttrInit(const AttrTable& t, void* storage, size_t bytes);
bool AttrLive(const AttrTable& t, const void* storage);

// cublasLt*SetAttribute / GetAttribute as documented: INVALID_VALUE for an
// unknown attribute, a NULL buffer or a size other than the attribute's;
// Get with sizeInBytes 0 reports the size in *sizeWritten.
cublasStatus_t AttrSet(const AttrTable& t, void* storage, int id, const void* buf, size_t size);
cublasStatus_t AttrGet(const AttrTable& t, const void* storage, int id, void* buf, size_t size, size_t* written);

// The stored value of attribute `id`, widened (sign-extended for 4-byte ints).
int64_t AttrValue(const AttrTable& t, const void* storage, int id);

}  // namespace simmath
