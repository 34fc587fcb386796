// The state behind a cudnnHandle_t (`struct cudnnContext*` in cudnn_graph.h).
#pragma once

#include <cudnn.h>
#include <stdint.h>

struct cudnnContext {
  uint64_t magic;       // kLiveCudnn while created; cleared by cudnnDestroy
  cudaStream_t stream;  // cudnnSetStream; NULL: the legacy default stream
};

namespace simmath {
inline constexpr uint64_t kLiveCudnn = 0x73696d63646e6e48ull;
inline bool LiveCudnn(cudnnHandle_t h) { return h && h->magic == kLiveCudnn; }
}  // namespace simmath
