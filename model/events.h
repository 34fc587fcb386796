// The event model: fixed-size records that collectors append and exporters
// read. Every time is on the agent clock (base/clock.h), in nanoseconds.
// Strings are interned (base/strings.h) and records carry ids.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/api_ids.h"

namespace prof {

// Flags on a HostEvent.
enum HostEventFlags : uint8_t {
  kHostEventNone = 0,
  kHostEventDriver = 1 << 0,       // a driver API call (cu*), not runtime
  kHostEventViaProcAddr = 1 << 1,  // reached through cuGetProcAddress
  kHostEventViaCupti = 1 << 2,     // recorded from CUPTI's callbacks: no wrapper saw the call
};

// One intercepted runtime/driver call, written by the calling thread into its
// own buffer while a window records: no lock, no allocation, no system call.
struct HostEvent {
  uint64_t start_ns;        // agent clock, call entry
  uint64_t end_ns;          // agent clock, call return
  uint64_t ptr;             // the pointer that matters: allocation, dst, kernel stub
  uint64_t bytes;           // bytes allocated/copied/set; 0 where meaningless
  uint64_t stream;          // cudaStream_t / CUstream as an integer; 0 = legacy default
  uint32_t correlation_id;  // CUPTI correlation id of this call; 0 when unknown
  uint32_t name_id;         // interned kernel name for launches; 0 = none
  uint32_t tid;             // OS thread id (gettid)
  int32_t result;           // cudaError_t or CUresult, returned unchanged
  uint16_t api;             // ApiId
  int16_t device;           // device ordinal; -1 when unknown
  // The last word is shared: cudaMemcpyKind is 0..4 and two flag bits are
  // in use, which leaves 24 bits for the calling thread's Python stack.
  uint32_t copy_kind : 3;   // cudaMemcpyKind for copies
  uint32_t flags : 5;       // HostEventFlags
  uint32_t stack_id : 24;   // interned Python stack (PythonInfo): 0 none, 1 no Python frames
};
static_assert(sizeof(HostEvent) == 64, "HostEvent is one cache line");

// What a DeviceRecord describes.
enum class DeviceKind : uint8_t {
  kKernel,
  kMemcpy,
  kMemset,
  kSync,         // CUPTI synchronization record
  kMemAlloc,     // CUPTI MEMORY2 allocation
  kMemFree,      // CUPTI MEMORY2 release
  kRuntimeApi,   // CUPTI RUNTIME record (calls we did not interpose, e.g. static cudart)
  kDriverApi,    // CUPTI DRIVER record
  kOverhead,     // CUPTI OVERHEAD record
};

// One GPU-side (or CUPTI-reported) activity, decoded from CUPTI's structs.
struct DeviceRecord {
  uint64_t start_ns;        // agent clock
  uint64_t end_ns;          // agent clock
  uint64_t bytes;           // copy/memset/allocation size
  uint64_t address;         // allocation address; memset/copy dst where known
  uint32_t correlation_id;  // ties the record to the launching call
  uint32_t name_id;         // kernel name (mangled; demangled at export) or API name
  uint32_t stream_id;       // CUPTI stream id
  uint32_t context_id;
  uint32_t device_id;
  uint32_t graph_id;        // 0 when not launched from a graph
  int32_t grid[3];
  int32_t block[3];
  uint32_t registers_per_thread;
  uint32_t static_shared_bytes;
  uint32_t dynamic_shared_bytes;
  uint32_t cbid;            // runtime/driver callback id for API records; sync type for kSync
  uint32_t thread_id;       // for API records: OS thread that made the call
  uint8_t kind;             // DeviceKind
  uint8_t copy_kind;        // CUpti_ActivityMemcpyKind
  uint8_t src_kind;         // CUpti_ActivityMemoryKind
  uint8_t dst_kind;         // CUpti_ActivityMemoryKind
  uint32_t memory_pool;     // kMemAlloc/kMemFree: CUpti_ActivityMemoryPoolType, 0 = not from a pool
  // A graph node's work (graph_id != 0): the Python stack of the call that
  // created the node (captured it, or added it), through instantiation's
  // clones; 0 when not known. The same ids as HostEvent::stack_id.
  uint32_t capture_stack_id;
  uint64_t graph_node_id;   // the node's id (cuptiGetGraphNodeId), 0 when not from a graph
  uint32_t reserved[2];     // pads to 128 bytes
};
static_assert(sizeof(DeviceRecord) == 128, "DeviceRecord is two cache lines");

// A step boundary: ProfilerStep#step spans [start_ns, end_ns).
struct StepSpan {
  uint64_t step;
  uint64_t start_ns;
  uint64_t end_ns;
};

// The name of a module call's NVTX range, as the agent's module hooks push it
// (collectors/python/torch_ops.cpp): "nn.Module: <attribute path>".
inline constexpr std::string_view kModuleRangePrefix = "nn.Module: ";

// An NVTX push/pop or start/end range seen through NVTX injection. A range
// PyTorch's NVTX profiler pushed for an operator (collectors/nvtx/torch_op_name.h)
// carries the operator's id, sequence number and input shapes apart from
// its name ("aten::mm").
struct NvtxRange {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t name_id;
  uint32_t tid;
  uint32_t depth;      // nesting depth on its thread, 0 = outermost
  uint32_t op_id = 0;      // PyTorch's op_id; 0: not an operator's range
  uint32_t shapes_id = 0;  // the input shapes' text ("[[16, 8], [8, 64]]"); 0: none
  int32_t seq = -1;        // the autograd sequence number; -1: none
  bool module_call = false;  // libprof's own "nn.Module: <path>" range (collectors/python/torch_ops.h)
};

// NCCL operations (collectors/nccl), in the order of NCCL's own names.
enum class CollFunc : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kCount,
};

// Where a CollectiveCall was seen.
enum class CollSource : uint8_t { kWrapper = 1, kProfilerPlugin = 2 };

// One NCCL collective or point-to-point call made while a window records,
// seen by the NCCL wrappers (NCCL as a shared library) or by libprof's NCCL
// profiler plugin (NCCL linked in), never both.
struct CollectiveCall {
  uint64_t start_ns;        // agent clock: the call (wrapper) or its enqueue (plugin)
  uint64_t end_ns;
  uint64_t comm_id;         // the communicator's id, equal on every rank (CommInfo::id)
  uint64_t count;           // elements as passed: sendcount (AllGather), recvcount (ReduceScatter), per peer (AlltoAll)
  uint64_t seq;             // 1-based, per communicator: collectives counted together, sends/receives apart
  uint64_t stream;          // cudaStream_t as an integer (0 when the plugin does not say)
  uint32_t tid;
  uint32_t correlation_id;  // CUPTI correlation id of the launch that enqueued its kernel; 0 unknown
  int32_t root_or_peer;     // root (Broadcast, Reduce, Gather, Scatter), peer (Send, Recv), else -1
  int32_t result;           // ncclResult_t (wrapper), 0 for the plugin
  uint8_t func;             // CollFunc
  int8_t datatype;          // ncclDataType_t; -1 unknown
  uint8_t source;           // CollSource
  uint8_t reserved[5];
};
static_assert(sizeof(CollectiveCall) == 72);

// One communicator this process is a rank of.
struct CommInfo {
  uint64_t id = 0;       // equal on every rank: a hash of its unique id (wrappers) or NCCL's commHash (plugin)
  int rank = 0;          // this process's rank in it
  int nranks = 0;
  uint64_t parent = 0;   // ncclCommSplit: the parent's id
  int color = -1;        // ncclCommSplit's colour
  uint8_t source = 0;    // CollSource
};

// Memory kinds the allocator tracker distinguishes.
enum class MemKind : uint8_t { kDevice, kHostPinned, kManaged, kAsyncPool, kVmm };

// One allocation or free, with the device's running total after it.
struct AllocSample {
  uint64_t ts_ns;
  uint64_t ptr;
  int64_t delta_bytes;   // +bytes on allocation, -bytes on free
  uint64_t total_bytes;  // live bytes on this device (kind) after the event
  uint32_t tid;
  uint16_t api;          // ApiId that did it
  int16_t device;        // -1 for host memory
  uint8_t mem_kind;      // MemKind
  uint8_t reserved[7];
};
static_assert(sizeof(AllocSample) == 48);

// One action of PyTorch's CUDA caching allocator, from its memory history
// (collectors/python/tensor_memory.h): a tensor's block allocated or freed,
// or a segment reserved from CUDA or released to it.
enum class TensorMemoryKind : uint8_t { kAlloc, kFree, kSegmentAlloc, kSegmentFree };

struct TensorMemoryEvent {
  uint64_t ts_ns;
  uint64_t addr;
  int64_t bytes;             // the block's (segment's) size: + allocated (reserved), - freed (released)
  uint64_t total_allocated;  // the device's allocated bytes after it, as torch.cuda.memory_allocated
  uint64_t total_reserved;   // and its reserved bytes, as torch.cuda.memory_reserved
  uint32_t site_id;          // interned "file:line in function" of the allocating Python line; 0 unknown
  int16_t device;
  uint8_t kind;              // TensorMemoryKind
  uint8_t reserved;
};
static_assert(sizeof(TensorMemoryEvent) == 48);

// An allocation still live at a point in time (window end, process exit).
struct LiveAllocation {
  uint64_t ptr;
  uint64_t bytes;
  uint64_t alloc_ns;
  uint16_t api;
  int16_t device;
  uint8_t mem_kind;
  uint8_t reserved[3];
};

}  // namespace prof
