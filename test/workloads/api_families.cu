// api_families: one program calling, family by family, the runtime API that
// ordinary CUDA programs use beyond launches and plain copies (see
// README.md). Each family checks what CUDA documents (values read back,
// documented error codes) and prints "family <name> ok"; any surprise prints
// the call and its error and exits 1. Kernels only write scratch memory.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

bool Expect(cudaError_t got, cudaError_t want, const char* what, int line) {
  if (got == want) return true;
  std::printf("line %d: %s -> %s (%d), expected %s\n", line, what, cudaGetErrorName(got), static_cast<int>(got),
              cudaGetErrorName(want));
  ++g_failures;
  return false;
}
#define CHECK(call) Expect((call), cudaSuccess, #call, __LINE__)
#define EXPECT_ERROR(call, code) Expect((call), (code), #call, __LINE__)
#define REQUIRE(cond)                                            \
  do {                                                           \
    if (!(cond)) {                                               \
      std::printf("line %d: %s is false\n", __LINE__, #cond);    \
      ++g_failures;                                              \
    }                                                            \
  } while (0)

__global__ void fill(float* out, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void uses_dynamic_shared(float* out) {
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  out[threadIdx.x] = scratch[threadIdx.x];
}

void Profiler() {
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 4096));
  CHECK(cudaProfilerStart());
  fill<<<4, 256>>>(d, 1024, 1.0f);
  CHECK(cudaGetLastError());
  CHECK(cudaMemset(d, 0, 4096));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaProfilerStop());
  CHECK(cudaFree(d));
}

void DeviceSettings() {
  CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  unsigned flags = 0;
  CHECK(cudaGetDeviceFlags(&flags));
  REQUIRE((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync);
  REQUIRE((flags & cudaDeviceMapHost) != 0);
  EXPECT_ERROR(cudaSetDeviceFlags(0x1000), cudaErrorInvalidValue);
  size_t stack = 0;
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  REQUIRE(stack == 1024);
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  REQUIRE(stack == 4096);
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20));
  EXPECT_ERROR(cudaDeviceSetLimit(static_cast<cudaLimit>(0x7f), 1), cudaErrorUnsupportedLimit);
  CHECK(cudaSetDeviceFlags(cudaDeviceScheduleAuto));
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 1024));
}

void Functions() {
  cudaFuncAttributes attr{};
  CHECK(cudaFuncGetAttributes(&attr, fill));
  REQUIRE(attr.maxThreadsPerBlock == 1024 && attr.numRegs > 0 && attr.binaryVersion == 90);
  REQUIRE(attr.maxDynamicSharedSizeBytes == 48 * 1024);
  CHECK(cudaFuncSetAttribute(uses_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
  CHECK(cudaFuncGetAttributes(&attr, uses_dynamic_shared));
  REQUIRE(attr.maxDynamicSharedSizeBytes == 96 * 1024);
  CHECK(cudaFuncSetCacheConfig(fill, cudaFuncCachePreferL1));
  int blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill, 256, 0));
  REQUIRE(blocks == 8);  // 2048 threads per SM / 256
  int min_grid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, fill));
  REQUIRE(block > 0 && block <= 1024 && min_grid > 0);
  size_t smem = 0;
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&smem, uses_dynamic_shared, 2, 256));
  REQUIRE(smem > 0 && smem <= 96 * 1024);
  EXPECT_ERROR(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(&Functions)), cudaErrorInvalidDeviceFunction);
  cudaGetLastError();  // the documented error is also the thread's last error
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 1024 * sizeof(float)));
  uses_dynamic_shared<<<1, 256, 64 * 1024>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(d));
}

std::atomic<int> g_host_calls{0};
void CUDART_CB HostFn(void* data) { static_cast<std::atomic<int>*>(data)->fetch_add(1); }
void CUDART_CB StreamCallback(cudaStream_t, cudaError_t status, void* data) {
  if (status == cudaSuccess) static_cast<std::atomic<int>*>(data)->fetch_add(10);
}

void HostFunctions() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 1 << 20));
  g_host_calls = 0;
  fill<<<256, 256, 0, stream>>>(d, 1 << 18, 2.0f);
  CHECK(cudaLaunchHostFunc(stream, HostFn, &g_host_calls));
  CHECK(cudaStreamAddCallback(stream, StreamCallback, &g_host_calls, 0));
  fill<<<256, 256, 0, stream>>>(d, 1 << 18, 3.0f);
  EXPECT_ERROR(cudaStreamAddCallback(stream, StreamCallback, &g_host_calls, 1), cudaErrorInvalidValue);
  CHECK(cudaStreamSynchronize(stream));
  REQUIRE(g_host_calls.load() == 11);  // both ran before the synchronize returned
  CHECK(cudaFree(d));
  CHECK(cudaStreamDestroy(stream));
}

void Managed() {
  const size_t bytes = 1 << 20;
  float* m = nullptr;
  CHECK(cudaMallocManaged(&m, bytes));
  cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  cudaMemLocation host{cudaMemLocationTypeHost, 0};
  CHECK(cudaMemAdvise(m, bytes, cudaMemAdviseSetPreferredLocation, device));
  CHECK(cudaMemAdvise(m, bytes, cudaMemAdviseSetReadMostly, device));
  CHECK(cudaMemPrefetchAsync(m, bytes, device, 0, 0));
  fill<<<1024, 256>>>(m, bytes / sizeof(float), 4.0f);
  CHECK(cudaMemPrefetchAsync(m, bytes, host, 0, 0));
  CHECK(cudaDeviceSynchronize());
  float* d = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  EXPECT_ERROR(cudaMemPrefetchAsync(d, bytes, device, 0, 0), cudaErrorInvalidValue);  // not managed memory
  cudaGetLastError();
  CHECK(cudaFree(d));
  CHECK(cudaFree(m));
}

void Pools() {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t threshold = 64 << 20;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  uint64_t read_back = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &read_back));
  REQUIRE(read_back == threshold);
  cudaMemAccessDesc access{};
  access.location = props.location;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  CHECK(cudaMemPoolSetAccess(pool, &access, 1));
  cudaMemAccessFlags flags;
  cudaMemLocation where = props.location;
  CHECK(cudaMemPoolGetAccess(&flags, pool, &where));
  REQUIRE(flags == cudaMemAccessFlagsProtReadWrite);
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  void* p = nullptr;
  CHECK(cudaMallocFromPoolAsync(&p, 1 << 20, pool, stream));
  uint64_t used = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  REQUIRE(used == (1u << 20));
  CHECK(cudaMemsetAsync(p, 0, 1 << 20, stream));
  CHECK(cudaFreeAsync(p, stream));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  REQUIRE(used == 0);
  CHECK(cudaMemPoolTrimTo(pool, 0));
  cudaMemPool_t current;
  CHECK(cudaDeviceGetMemPool(&current, 0));
  CHECK(cudaDeviceSetMemPool(0, pool));
  CHECK(cudaDeviceSetMemPool(0, current));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaStreamDestroy(stream));
}

void Peers() {
  int can = -1;
  CHECK(cudaDeviceCanAccessPeer(&can, 0, 0));
  REQUIRE(can == 0);  // a device is not its own peer
  EXPECT_ERROR(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
  EXPECT_ERROR(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice);
  cudaGetLastError();
}

__device__ float g_table[256];
__constant__ int g_scale = 3;

void Symbols() {
  float host[256];
  for (int i = 0; i < 256; ++i) host[i] = static_cast<float>(i);
  CHECK(cudaMemcpyToSymbol(g_table, host, sizeof host));
  CHECK(cudaMemcpyToSymbol(g_table, host + 64, 16 * sizeof(float), 64 * sizeof(float)));  // at an offset
  float back[256] = {};
  CHECK(cudaMemcpyFromSymbol(back, g_table, sizeof back));
  REQUIRE(std::memcmp(host, back, sizeof back) == 0);
  int scale = 0;
  CHECK(cudaMemcpyFromSymbol(&scale, g_scale, sizeof scale));
  REQUIRE(scale == 3);  // the image's initial value
  void* address = nullptr;
  size_t size = 0;
  CHECK(cudaGetSymbolAddress(&address, g_table));
  CHECK(cudaGetSymbolSize(&size, g_table));
  REQUIRE(address != nullptr && size == sizeof host);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, sizeof host));
  CHECK(cudaMemcpyFromSymbol(d, g_table, sizeof host, 0, cudaMemcpyDeviceToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemcpyToSymbolAsync(g_table, d, sizeof host, 0, cudaMemcpyDeviceToDevice, stream));
  CHECK(cudaMemcpyFromSymbolAsync(back, g_table, sizeof back, 0, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  EXPECT_ERROR(cudaMemcpyToSymbol(g_table, host, sizeof host, 4), cudaErrorInvalidValue);  // past its end
  EXPECT_ERROR(cudaMemcpyToSymbol(host, host, 4), cudaErrorInvalidSymbol);  // not a device variable
  cudaGetLastError();
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(d));
}

__global__ void read_texture(cudaTextureObject_t tex, float* out) { out[threadIdx.x] = tex2D<float>(tex, threadIdx.x, 0); }

void Arrays() {
  const size_t width = 64, height = 32;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  CHECK(cudaMallocArray(&array, &desc, width, height, cudaArraySurfaceLoadStore));
  std::vector<float> host(width * height), back(width * height, 0.0f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const size_t row = width * sizeof(float);
  CHECK(cudaMemcpy2DToArray(array, 0, 0, host.data(), row, row, height, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy2DFromArray(back.data(), row, array, 0, 0, row, height, cudaMemcpyDeviceToHost));
  REQUIRE(host == back);
  cudaChannelFormatDesc read_desc{};
  cudaExtent extent{};
  unsigned flags = 0;
  CHECK(cudaArrayGetInfo(&read_desc, &extent, &flags, array));
  REQUIRE(read_desc.x == 32 && read_desc.f == cudaChannelFormatKindFloat && extent.width == width &&
          extent.height == height && (flags & cudaArraySurfaceLoadStore));
  // Device <-> array and array <-> array.
  float* d = nullptr;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(&d, &pitch, row, height));
  CHECK(cudaMemcpy2DFromArray(d, pitch, array, 0, 0, row, height, cudaMemcpyDeviceToDevice));
  cudaArray_t copy = nullptr;
  CHECK(cudaMallocArray(&copy, &desc, width, height));
  CHECK(cudaMemcpy2DToArray(copy, 0, 0, d, pitch, row, height, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy2DArrayToArray(copy, 0, 0, array, 0, 0, row, height, cudaMemcpyDeviceToDevice));
  // Textures and surfaces.
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModePoint;
  cudaTextureObject_t tex = 0;
  CHECK(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  read_texture<<<1, 32>>>(tex, d);
  CHECK(cudaGetLastError());
  cudaSurfaceObject_t surface = 0;
  CHECK(cudaCreateSurfaceObject(&surface, &resource));
  cudaResourceDesc no_ldst{};
  no_ldst.resType = cudaResourceTypeArray;
  no_ldst.res.array.array = copy;  // created without cudaArraySurfaceLoadStore
  cudaSurfaceObject_t refused = 0;
  EXPECT_ERROR(cudaCreateSurfaceObject(&refused, &no_ldst), cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaDestroySurfaceObject(surface));
  CHECK(cudaDestroyTextureObject(tex));
  // 3D: a pitched allocation and a 3D array, copied both ways.
  const cudaExtent volume{16 * sizeof(float), 8, 4};
  cudaPitchedPtr pitched{};
  CHECK(cudaMalloc3D(&pitched, volume));
  CHECK(cudaMemset3D(pitched, 0, volume));
  cudaArray_t array3d = nullptr;
  CHECK(cudaMalloc3DArray(&array3d, &desc, cudaExtent{16, 8, 4}));
  std::vector<float> cube(16 * 8 * 4), cube_back(cube.size(), 0.0f);
  for (size_t i = 0; i < cube.size(); ++i) cube[i] = static_cast<float>(i) * 0.5f;
  cudaMemcpy3DParms up{};
  up.srcPtr = cudaPitchedPtr{cube.data(), 16 * sizeof(float), 16, 8};
  up.dstArray = array3d;
  up.extent = cudaExtent{16, 8, 4};  // elements of the array
  up.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&up));
  cudaMemcpy3DParms across{};
  across.srcArray = array3d;
  across.dstPtr = pitched;
  across.extent = cudaExtent{16, 8, 4};
  across.kind = cudaMemcpyDeviceToDevice;
  CHECK(cudaMemcpy3D(&across));
  cudaMemcpy3DParms down{};
  down.srcPtr = pitched;
  down.dstPtr = cudaPitchedPtr{cube_back.data(), 16 * sizeof(float), 16, 8};
  down.extent = volume;  // bytes: no array takes part
  down.kind = cudaMemcpyDeviceToHost;
  CHECK(cudaMemcpy3DAsync(&down, 0));
  CHECK(cudaDeviceSynchronize());
  REQUIRE(cube == cube_back);
  CHECK(cudaFreeArray(array3d));
  CHECK(cudaFree(pitched.ptr));
  CHECK(cudaFreeArray(copy));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFree(d));
}

void HostMemory() {
  const size_t bytes = 1 << 20;
  void* host = std::malloc(bytes);
  CHECK(cudaHostRegister(host, bytes, cudaHostRegisterMapped));
  void* mapped = nullptr;
  CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
  REQUIRE(mapped == host);  // unified addressing: the same address
  unsigned flags = 0;
  CHECK(cudaHostGetFlags(&flags, host));
  REQUIRE((flags & cudaHostRegisterMapped) != 0);
  void* d = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  CHECK(cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, 0));  // now a pinned copy
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaHostUnregister(host));
  EXPECT_ERROR(cudaHostUnregister(host), cudaErrorHostMemoryNotRegistered);
  cudaGetLastError();
  CHECK(cudaFree(d));
  std::free(host);
}

std::atomic<int> g_graph_host_calls{0};
void CUDART_CB GraphHostFn(void* data) { static_cast<std::atomic<int>*>(data)->fetch_add(1); }

// Builds memset -> kernel -> copy back -> host function, plus an empty node
// and an event record after the host function.
cudaGraph_t BuildGraph(float* d, unsigned char* host, size_t bytes, int memset_value, cudaEvent_t event) {
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t set, kernel, copy, hostfn, empty, record;
  cudaMemsetParams memset{};
  memset.dst = d;
  memset.value = static_cast<unsigned>(memset_value);
  memset.elementSize = 1;
  memset.width = bytes;
  memset.height = 1;
  CHECK(cudaGraphAddMemsetNode(&set, graph, nullptr, 0, &memset));
  int n = static_cast<int>(bytes / sizeof(float));
  float value = 0.0f;
  float* out = d + n;  // the kernel writes the second half; the copy reads the first
  void* args[] = {&out, &n, &value};
  cudaKernelNodeParams k{};
  k.func = reinterpret_cast<void*>(fill);
  k.gridDim = dim3(4);
  k.blockDim = dim3(256);
  k.kernelParams = args;
  CHECK(cudaGraphAddKernelNode(&kernel, graph, &set, 1, &k));
  CHECK(cudaGraphAddMemcpyNode1D(&copy, graph, &kernel, 1, host, d, bytes, cudaMemcpyDeviceToHost));
  cudaHostNodeParams h{GraphHostFn, &g_graph_host_calls};
  CHECK(cudaGraphAddHostNode(&hostfn, graph, &copy, 1, &h));
  CHECK(cudaGraphAddEmptyNode(&empty, graph, nullptr, 0));
  CHECK(cudaGraphAddDependencies(graph, &hostfn, &empty, nullptr, 1));
  CHECK(cudaGraphAddEventRecordNode(&record, graph, &empty, 1, event));
  return graph;
}

void Graphs() {
  const size_t bytes = 4096;
  float* d = nullptr;
  CHECK(cudaMalloc(&d, 2 * bytes));
  unsigned char* host = nullptr;
  CHECK(cudaMallocHost(&host, bytes));
  std::memset(host, 0, bytes);
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t event;
  CHECK(cudaEventCreate(&event));
  g_graph_host_calls = 0;
  cudaGraph_t graph = BuildGraph(d, host, bytes, 1, event);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphUpload(exec, stream));
  REQUIRE(host[0] == 0);  // nothing ran yet
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  REQUIRE(host[0] == 1 && host[bytes - 1] == 1 && g_graph_host_calls.load() == 1);
  CHECK(cudaEventSynchronize(event));
  // Same topology, new memset value: the update takes it.
  cudaGraph_t same = BuildGraph(d, host, bytes, 2, event);
  cudaGraphExecUpdateResultInfo info{};
  CHECK(cudaGraphExecUpdate(exec, same, &info));
  REQUIRE(info.result == cudaGraphExecUpdateSuccess);
  CHECK(cudaGraphLaunch(exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  REQUIRE(host[0] == 2 && g_graph_host_calls.load() == 2);
  // A different topology is refused, as documented.
  cudaGraph_t other;
  CHECK(cudaGraphCreate(&other, 0));
  cudaGraphNode_t lone;
  CHECK(cudaGraphAddEmptyNode(&lone, other, nullptr, 0));
  EXPECT_ERROR(cudaGraphExecUpdate(exec, other, &info), cudaErrorGraphExecUpdateFailure);
  cudaGetLastError();
  REQUIRE(info.result == cudaGraphExecUpdateErrorTopologyChanged);
  // Copies and memsets inside a stream capture become nodes: no bytes move
  // until the graph runs.
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK(cudaMemsetAsync(d, 3, bytes, stream));
  fill<<<4, 256, 0, stream>>>(d + bytes / sizeof(float), 1024, 0.0f);
  CHECK(cudaMemcpyAsync(host, d, bytes, cudaMemcpyDeviceToHost, stream));
  cudaGraph_t captured;
  CHECK(cudaStreamEndCapture(stream, &captured));
  REQUIRE(host[0] == 2);
  cudaGraphExec_t captured_exec;
  CHECK(cudaGraphInstantiate(&captured_exec, captured, 0));
  CHECK(cudaGraphLaunch(captured_exec, stream));
  CHECK(cudaStreamSynchronize(stream));
  REQUIRE(host[0] == 3 && host[bytes - 1] == 3);
  // Conditional nodes: an IF whose condition defaults to 1 runs its body
  // (a 2048-byte memset), one defaulting to 0 does not.
  cudaGraph_t conditional;
  CHECK(cudaGraphCreate(&conditional, 0));
  for (unsigned value : {1u, 0u}) {
    cudaGraphConditionalHandle handle;
    CHECK(cudaGraphConditionalHandleCreate(&handle, conditional, value, cudaGraphCondAssignDefault));
    cudaGraphNodeParams p{};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = handle;
    p.conditional.type = cudaGraphCondTypeIf;
    p.conditional.size = 1;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, conditional, nullptr, nullptr, 0, &p));
    cudaMemsetParams body_set{};
    body_set.dst = d;
    body_set.value = value ? 5 : 6;
    body_set.elementSize = 1;
    body_set.width = 2048;
    body_set.height = 1;
    cudaGraphNode_t body_node;
    CHECK(cudaGraphAddMemsetNode(&body_node, p.conditional.phGraph_out[0], nullptr, 0, &body_set));
  }
  cudaGraphExec_t conditional_exec;
  CHECK(cudaGraphInstantiate(&conditional_exec, conditional, 0));
  CHECK(cudaGraphLaunch(conditional_exec, stream));
  CHECK(cudaMemcpyAsync(host, d, 1, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  REQUIRE(host[0] == 5);
  CHECK(cudaGraphExecDestroy(conditional_exec));
  CHECK(cudaGraphDestroy(conditional));
  CHECK(cudaGraphExecDestroy(captured_exec));
  CHECK(cudaGraphExecDestroy(exec));
  for (cudaGraph_t g : {graph, same, other, captured}) CHECK(cudaGraphDestroy(g));
  CHECK(cudaEventDestroy(event));
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(d));
}

// Exporting works; opening a handle needs another process, which the sim
// cannot share memory with: opened here (the exporting process) CUDA answers
// with an invalid-context error.
void Ipc() {
  void* d = nullptr;
  CHECK(cudaMalloc(&d, 1 << 20));
  cudaIpcMemHandle_t mem{};
  CHECK(cudaIpcGetMemHandle(&mem, d));
  EXPECT_ERROR(cudaIpcGetMemHandle(&mem, static_cast<char*>(d) + 256), cudaErrorInvalidValue);  // not the base
  void* opened = nullptr;
  EXPECT_ERROR(cudaIpcOpenMemHandle(&opened, mem, cudaIpcMemLazyEnablePeerAccess), cudaErrorDeviceUninitialized);
  cudaEvent_t event, plain;
  CHECK(cudaEventCreateWithFlags(&event, cudaEventInterprocess | cudaEventDisableTiming));
  CHECK(cudaEventCreate(&plain));
  cudaIpcEventHandle_t handle{};
  CHECK(cudaIpcGetEventHandle(&handle, event));
  EXPECT_ERROR(cudaIpcGetEventHandle(&handle, plain), cudaErrorInvalidResourceHandle);  // not interprocess
  cudaGetLastError();
  CHECK(cudaEventDestroy(plain));
  CHECK(cudaEventDestroy(event));
  CHECK(cudaFree(d));
}

struct Family {
  const char* name;
  void (*run)();
};
const Family kFamilies[] = {
    {"profiler", Profiler}, {"device", DeviceSettings}, {"functions", Functions}, {"host_functions", HostFunctions},
    {"managed", Managed},   {"pools", Pools},           {"peers", Peers},           {"symbols", Symbols},
    {"arrays", Arrays},     {"host_memory", HostMemory}, {"graphs", Graphs},
    {"ipc", Ipc},
};

}  // namespace

int main(int argc, char** argv) {
  int iterations = 1;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only.push_back(argv[++i]);
    } else if (!std::strcmp(argv[i], "--list")) {
      for (const Family& f : kFamilies) std::printf("%s\n", f.name);
      return 0;
    } else {
      std::fprintf(stderr, "usage: api_families [--iterations N] [--only FAMILY]... [--list]\n");
      return 2;
    }
  }
  for (int it = 0; it < iterations; ++it) {
    for (const Family& f : kFamilies) {
      bool wanted = only.empty();
      for (const std::string& name : only) wanted = wanted || name == f.name;
      if (!wanted) continue;
      const int before = g_failures;
      f.run();
      if (it == 0) std::printf("family %s %s\n", f.name, g_failures == before ? "ok" : "FAILED");
    }
  }
  std::printf("failures=%d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
