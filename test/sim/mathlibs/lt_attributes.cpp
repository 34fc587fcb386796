#include "lt_attributes.h"

#include <cstring>

namespace simmath {
namespace {

constexpr size_t kMagicBytes = sizeof(uint64_t);

const AttrSpec* Find(const AttrTable& t, int id, size_t* offset) {
  size_t at = kMagicBytes;
  for (int i = 0; i < t.count; ++i) {
    if (t.specs[i].id == id) {
      *offset = at;
      return &t.specs[i];
    }
    at += t.specs[i].size;
  }
  return nullptr;
}

size_t TotalBytes(const AttrTable& t) {
  size_t at = kMagicBytes;
  for (int i = 0; i < t.count; ++i) at += t.specs[i].size;
  return at;
}


// Ordered 8-byte attributes first, then 4-byte, then 1-byte, so every one
// is naturally aligned.
const AttrSpec kMatmulDesc[] = {
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8, 0},
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4, CUBLAS_COMPUTE_32F},
    {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4, CUDA_R_32F},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4, CUBLASLT_POINTER_MODE_HOST},
    {CUBLASLT_MATMUL_DESC_TRANSA, 4, CUBLAS_OP_N},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4, CUBLAS_OP_N},
    {CUBLASLT_MATMUL_DESC_TRANSC, 4, CUBLAS_OP_N},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4, CUBLAS_FILL_MODE_FULL},
    {CUBLASLT_MATMUL_DESC_EPILOGUE, 4, CUBLASLT_EPILOGUE_DEFAULT},
    {CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4, -1},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4, -1},
    {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1, 0},
};

// Data, not logic: one row per matrix-layout attribute, as cublasLt.h lists them.
const AttrSpec kLayout[] = {
    {CUBLASLT_MATRIX_LAYOUT_ROWS, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_COLS, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_LD, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_TYPE, 4, CUDA_R_32F},
    {CUBLASLT_MATRIX_LAYOUT_ORDER, 4, CUBLASLT_ORDER_COL},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 1},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4, 0},
};

const AttrSpec kPreference[] = {
    {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 8, 0},
    {CUBLASLT_MATMUL_PREF_IMPL_MASK, 8, -1},
    {CUBLASLT_MATMUL_PREF_SEARCH_MODE, 4, CUBLASLT_SEARCH_BEST_FIT},
    {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 4, CUBLASLT_REDUCTION_SCHEME_MASK},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, 4, 0},  // float 0.0f
};


}  // namespace

const AttrTable& MatmulDescAttrs() {
  static const AttrTable t{kMatmulDesc, sizeof(kMatmulDesc) / sizeof(kMatmulDesc[0]), 0x73696d4c744d4d44ull};
  return t;
}
const AttrTable& LayoutAttrs() {
  static const AttrTable t{kLayout, sizeof(kLayout) / sizeof(kLayout[0]), 0x73696d4c744c4159ull};
  return t;
}
const AttrTable& PreferenceAttrs() {
  static const AttrTable t{kPreference, sizeof(kPreference) / sizeof(kPreference[0]), 0x73696d4c74505246ull};
  return t;
}

bool AttrInit(const AttrTable& t, void* storage, size_t bytes) {
  if (TotalBytes(t) > bytes) return false;
  memset(storage, 0, bytes);
  memcpy(storage, &t.magic, kMagicBytes);
  size_t at = kMagicBytes;
  for (int i = 0; i < t.count; ++i) {
    const int64_t v = t.specs[i].default_value;
    memcpy(static_cast<char*>(storage) + at, &v, t.specs[i].size);  // little-endian: the low bytes
    at += t.specs[i].size;
  }
  return true;
}

bool AttrLive(const AttrTable& t, const void* storage) {
  uint64_t magic = 0;
  if (storage) memcpy(&magic, storage, kMagicBytes);
  return magic == t.magic;
}

cublasStatus_t AttrSet(const AttrTable& t, void* storage, int id, const void* buf, size_t size) {
  size_t offset = 0;
  const AttrSpec* spec = Find(t, id, &offset);
  if (!spec || !buf || size != spec->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(static_cast<char*>(storage) + offset, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t AttrGet(const AttrTable& t, const void* storage, int id, void* buf, size_t size, size_t* written) {
  size_t offset = 0;
  const AttrSpec* spec = Find(t, id, &offset);
  if (!spec) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (!written) return CUBLAS_STATUS_INVALID_VALUE;
    *written = spec->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != spec->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, static_cast<const char*>(storage) + offset, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

int64_t AttrValue(const AttrTable& t, const void* storage, int id) {
  size_t offset = 0;
  const AttrSpec* spec = Find(t, id, &offset);
  if (!spec) return 0;
  const char* p = static_cast<const char*>(storage) + offset;
  switch (spec->size) {
    case 1: { int8_t v; memcpy(&v, p, 1); return v; }
    case 4: { int32_t v; memcpy(&v, p, 4); return v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
  }
}

}  // namespace simmath
