// The attributes cuDNN 9.20-9.26 add to the toolkit's 9.19 cudnn_graph.h
// (numbers, types and required/optional from 9.26's cudnn_graph.h, whose
// comments carry the reference's descriptor documentation). The toolkit's
// header cannot name them, so they are numbers here.
#include "cudnn_backend_attributes.h"

namespace simdnn {
namespace {

// cudnn_backend_attributes.cpp's type masks again, over int: 9.20+ types are not in the 9.19 enum.
constexpr uint64_t T(int t) { return uint64_t{1} << t; }
constexpr uint64_t kDesc = T(CUDNN_TYPE_BACKEND_DESCRIPTOR);
constexpr uint64_t kI64 = T(CUDNN_TYPE_INT64);
constexpr uint64_t kDt = T(CUDNN_TYPE_DATA_TYPE);
constexpr uint64_t kBool = T(CUDNN_TYPE_BOOLEAN);
constexpr uint64_t kReal = T(CUDNN_TYPE_FLOAT) | T(CUDNN_TYPE_DOUBLE);
constexpr uint64_t kFloat = T(CUDNN_TYPE_FLOAT);

// One element of a tensor descriptor, required or optional.
#define RT(name, desc) \
  { name, desc, kDesc, 1, 1, kRequired }
#define OT(name, desc) \
  { name, desc, kDesc, 1, 1, kSettable }

// Data, not logic: one row per attribute that cuDNN 9.20-9.26 add.
const AttrSpec kNewer[] = {
    // Operation graph (9.21, 9.NEXT), tensor (9.22, 9.24), reduction (9.24), reshape
    {805, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, kBool, 1, 1, kSettable},  // IS_OVERRIDE_SHAPE_ENABLED
    {806, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, T(kTypeOperationGraphMode), 1, 1, kSettable},  // MODE
    {910, CUDNN_BACKEND_TENSOR_DESCRIPTOR, kReal | kI64, 1, 1, kSettable},  // CONSTANT_VALUE (by-value tensors)
    {914, CUDNN_BACKEND_TENSOR_DESCRIPTOR, kI64, 1, 1, kSettable},          // RAGGED_OFFSET_MULTIPLIER
    OT(1613, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR),                 // GROUP_OFFSET_DESC
    {2202, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, T(kTypeReshapeMode), 1, 1, kSettable},  // RESHAPE_MODE
    // SDPA forward (9.21-9.25)
    OT(2811, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // SUBGRAPH
    {2812, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, kI64, 0, kMany, kSettable},  // SUBGRAPH_INPUT_UID
    {2813, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, kI64, 0, kMany, kSettable},  // SUBGRAPH_OUTPUT_UID
    OT(2814, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // SOFTMAX_DESC
    OT(2815, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DROPOUT_SEED_DESC
    OT(2816, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DROPOUT_OFFSET_DESC
    OT(2817, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DROPOUT_RNG_DUMP_DESC
    {2818, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, kReal, 1, 1, kSettable},     // DROPOUT_PROBABILITY
    {2819, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, kBool, 1, 1, kSettable},     // UNFUSE_FMA
    OT(2820, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // CU_SEQ_LEN_QDESC
    OT(2821, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // CU_SEQ_LEN_KVDESC
    OT(2822, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DESCALE_QDESC
    OT(2823, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DESCALE_KDESC
    OT(2824, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DESCALE_VDESC
    OT(2825, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // DESCALE_SDESC
    OT(2826, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // SCALE_SDESC
    OT(2827, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // SCALE_ODESC
    OT(2828, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // AMAX_SDESC
    OT(2829, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR),                           // AMAX_ODESC
    // SDPA backward (unpublished in 9.26's header, present in its enum)
    OT(2863, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR),                           // SINK_DESC
    OT(2864, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR),                           // DSINK_DESC
    {2865, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, kI64, 1, 1, kSettable},      // MAX_TOTAL_SEQ_LEN_Q
    {2866, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, kI64, 1, 1, kSettable},      // MAX_TOTAL_SEQ_LEN_KV
    OT(2867, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR),                           // SUBGRAPH
    {2868, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, kI64, 0, kMany, kSettable},  // SUBGRAPH_INPUT_UID
    {2869, CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR, kI64, 0, kMany, kSettable},  // SUBGRAPH_OUTPUT_UID
    // MoE grouped matmul backward (9.22)
    {2951, kDescOperationMoeGroupedMatmulBwd, kDt, 1, 1, kRequired},  // MATH_PREC
    RT(2952, kDescOperationMoeGroupedMatmulBwd),                      // TOKEN_DESC
    RT(2953, kDescOperationMoeGroupedMatmulBwd),                      // DWEIGHT_DESC
    RT(2954, kDescOperationMoeGroupedMatmulBwd),                      // FIRST_TOKEN_OFFSET_DESC
    RT(2955, kDescOperationMoeGroupedMatmulBwd),                      // DOUTPUT_DESC
    // Diagonal band mask (9.20, 9.24); its comparison mode is a pointwise
    // comparison. 9.26's header marks both bounds required but says its
    // documentation is pending; cudnn-frontend sets only the bounds a mask
    // has (a causal mask: the right one), so neither is required here.
    RT(3000, kDescOperationDiagonalBandMask),                                               // XDESC
    OT(3001, kDescOperationDiagonalBandMask),                                               // SEQ_LEN_KVDESC
    OT(3002, kDescOperationDiagonalBandMask),                                               // SEQ_LEN_QDESC
    OT(3003, kDescOperationDiagonalBandMask),                                               // LEFT_BOUND_DESC
    OT(3004, kDescOperationDiagonalBandMask),                                               // SHIFT_RIGHT_BOUND_DESC
    OT(3005, kDescOperationDiagonalBandMask),                                               // BDESC
    RT(3006, kDescOperationDiagonalBandMask),                                               // YDESC
    {3007, kDescOperationDiagonalBandMask, T(CUDNN_TYPE_POINTWISE_MODE), 1, 1, kRequired},  // COMPARISON_MODE
    OT(3008, kDescOperationDiagonalBandMask),                                               // CU_SEQ_LEN_KVDESC
    OT(3009, kDescOperationDiagonalBandMask),                                               // CU_SEQ_LEN_QDESC
    // Softmax (9.20)
    RT(3100, kDescOperationSoftmax),  // XDESC
    RT(3101, kDescOperationSoftmax),  // YDESC
    OT(3102, kDescOperationSoftmax),  // STATS_DESC
    OT(3103, kDescOperationSoftmax),  // MAX_DESC
    OT(3104, kDescOperationSoftmax),  // SUM_EXP_DESC
    OT(3105, kDescOperationSoftmax),  // SINK_DESC
    // Transpose, slice (9.22)
    RT(3200, kDescOperationTranspose),                                   // XDESC
    RT(3201, kDescOperationTranspose),                                   // YDESC
    {3202, kDescOperationTranspose, kI64, 1, CUDNN_DIM_MAX, kRequired},  // PERMUTATION
    RT(3300, kDescOperationSlice),                                       // XDESC
    RT(3301, kDescOperationSlice),                                       // YDESC
    {3302, kDescOperationSlice, kI64, 1, CUDNN_DIM_MAX, kRequired},      // START_INDICES
    {3303, kDescOperationSlice, kI64, 1, CUDNN_DIM_MAX, kRequired},      // LIMIT_INDICES
    {3304, kDescOperationSlice, kI64, 1, CUDNN_DIM_MAX, kSettable},      // STRIDES
    // RoPE forward (9.24) and backward (9.25): a host fp32 scale, an int64 width
    RT(3400, kDescOperationRopeFwd),                         // XDESC
    RT(3401, kDescOperationRopeFwd),                         // YDESC
    RT(3402, kDescOperationRopeFwd),                         // FREQSDESC
    {3403, kDescOperationRopeFwd, kFloat, 1, 1, kSettable},  // OUTPUT_SCALE
    {3404, kDescOperationRopeFwd, kI64, 1, 1, kSettable},    // ROPE_DIM
    RT(3410, kDescOperationRopeBwd),                         // DYDESC
    RT(3411, kDescOperationRopeBwd),                         // DXDESC
    RT(3412, kDescOperationRopeBwd),                         // FREQSDESC
    {3413, kDescOperationRopeBwd, kFloat, 1, 1, kSettable},  // OUTPUT_SCALE
    {3414, kDescOperationRopeBwd, kI64, 1, 1, kSettable},    // ROPE_DIM
};

#undef RT
#undef OT

}  // namespace

const AttrSpec* NewerAttrTable(size_t* count) {
  *count = sizeof(kNewer) / sizeof(kNewer[0]);
  return kNewer;
}

}  // namespace simdnn
