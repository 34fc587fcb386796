// What cudnnBackendExecute launches for an operation graph (README "Math
// libraries"): scaled dot-product attention (the SDPA operations, or the
// matmul / pointwise / reduction graph the cuDNN frontend builds for it)
// gets a flash-attention kernel named as cuDNN's generated SDPA kernels
// are, sized by the problem; any other graph one generic kernel.
#pragma once

#include <cudnn.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace simmath {

struct BackendDesc;

struct BackendKernel {
  std::string name = "cudnn_generated_fort_native_graph_sm90_kernel0";
  std::string op = "graph";  // "sdpa_fprop", "sdpa_bprop", "graph"
  unsigned grid[3] = {1, 1, 1};
  unsigned threads = 128;
};

// The query rows per block and key/value columns per block of the model.
inline constexpr int64_t kSdpaTileQ = 64;
inline constexpr int64_t kSdpaTileKv = 64;

BackendKernel KernelForGraph(const BackendDesc& graph);

// Accessors of cudnn_backend.cpp's descriptors.
const BackendDesc* DescAttr(const BackendDesc& d, int name, size_t index);
size_t DescCount(const BackendDesc& d, int name);
std::vector<int64_t> IntsAttr(const BackendDesc& d, int name);
int DataTypeAttr(const BackendDesc& d, int name);
cudnnBackendDescriptorType_t DescType(const BackendDesc& d);

}  // namespace simmath
