// cuBLASLt's matmul, matrix-layout and preference descriptors: create /
// init / destroy and the attribute calls (lt_attributes.h).
#include <cublasLt.h>

#include <new>

#include "lt_attributes.h"

namespace {

using simmath::AttrTable;

template <typename Opaque>
cublasStatus_t Create(const AttrTable& t, Opaque** out) {
  if (!out) return CUBLAS_STATUS_INVALID_VALUE;
  Opaque* d = new (std::nothrow) Opaque();
  if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
  if (!simmath::AttrInit(t, d, sizeof(Opaque))) {
    delete d;
    return CUBLAS_STATUS_INTERNAL_ERROR;
  }
  *out = d;
  return CUBLAS_STATUS_SUCCESS;
}

// *Init_internal: the caller's storage must be at least the opaque size.
template <typename Opaque>
cublasStatus_t Init(const AttrTable& t, Opaque* d, size_t size) {
  if (!d || size < sizeof(Opaque)) return CUBLAS_STATUS_INVALID_VALUE;
  return simmath::AttrInit(t, d, sizeof(Opaque)) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INTERNAL_ERROR;
}

template <typename Opaque>
cublasStatus_t Destroy(const AttrTable& t, Opaque* d) {
  if (!d) return CUBLAS_STATUS_SUCCESS;  // like free(NULL)
  if (!simmath::AttrLive(t, d)) return CUBLAS_STATUS_INVALID_VALUE;
  d->data[0] = 0;
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t Set(const AttrTable& t, void* d, int attr, const void* buf, size_t size) {
  if (!simmath::AttrLive(t, d)) return CUBLAS_STATUS_INVALID_VALUE;
  return simmath::AttrSet(t, d, attr, buf, size);
}

cublasStatus_t Get(const AttrTable& t, const void* d, int attr, void* buf, size_t size, size_t* written) {
  if (!simmath::AttrLive(t, d)) return CUBLAS_STATUS_INVALID_VALUE;
  return simmath::AttrGet(t, d, attr, buf, size, written);
}

cublasStatus_t SetMatmulTypes(cublasLtMatmulDesc_t d, cublasComputeType_t compute, cudaDataType_t scale) {
  int32_t c = compute, s = scale;
  cublasStatus_t r = simmath::AttrSet(simmath::MatmulDescAttrs(), d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &c, sizeof(c));
  if (r == CUBLAS_STATUS_SUCCESS)
    r = simmath::AttrSet(simmath::MatmulDescAttrs(), d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &s, sizeof(s));
  return r;
}

cublasStatus_t SetLayoutShape(cublasLtMatrixLayout_t l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  const AttrTable& t = simmath::LayoutAttrs();
  uint32_t ty = static_cast<uint32_t>(type);
  simmath::AttrSet(t, l, CUBLASLT_MATRIX_LAYOUT_TYPE, &ty, sizeof(ty));
  simmath::AttrSet(t, l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof(rows));
  simmath::AttrSet(t, l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols));
  simmath::AttrSet(t, l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  cublasStatus_t r = Create(simmath::MatmulDescAttrs(), matmulDesc);
  return r == CUBLAS_STATUS_SUCCESS ? SetMatmulTypes(*matmulDesc, computeType, scaleType) : r;
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType, cudaDataType_t scaleType) {
  cublasStatus_t r = Init(simmath::MatmulDescAttrs(), matmulDesc, size);
  return r == CUBLAS_STATUS_SUCCESS ? SetMatmulTypes(matmulDesc, computeType, scaleType) : r;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  return Destroy(simmath::MatmulDescAttrs(), matmulDesc);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  return Set(simmath::MatmulDescAttrs(), matmulDesc, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  return Get(simmath::MatmulDescAttrs(), matmulDesc, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  cublasStatus_t r = Create(simmath::LayoutAttrs(), matLayout);
  return r == CUBLAS_STATUS_SUCCESS ? SetLayoutShape(*matLayout, type, rows, cols, ld) : r;
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  cublasStatus_t r = Init(simmath::LayoutAttrs(), matLayout, size);
  return r == CUBLAS_STATUS_SUCCESS ? SetLayoutShape(matLayout, type, rows, cols, ld) : r;
}

// The matrix layout's entry points, like the matmul descriptor's above: one per API function.
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  return Destroy(simmath::LayoutAttrs(), matLayout);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  return Set(simmath::LayoutAttrs(), matLayout, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  return Get(simmath::LayoutAttrs(), matLayout, attr, buf, sizeInBytes, sizeWritten);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return Create(simmath::PreferenceAttrs(), pref);
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  return Init(simmath::PreferenceAttrs(), pref, size);
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return Destroy(simmath::PreferenceAttrs(), pref);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  return Set(simmath::PreferenceAttrs(), pref, attr, buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  return Get(simmath::PreferenceAttrs(), pref, attr, buf, sizeInBytes, sizeWritten);
}

}  // extern "C"
