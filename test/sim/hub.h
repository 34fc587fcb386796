// The simulated driver's hub: state shared by the three simulated libraries.
// It lives in the simulated libcuda.so.1; the simulated libcudart.so.13 and
// libcupti.so.13 link against it and reach it through these C functions
// (prefix simhub_, so they never collide with a CUDA name). This mirrors the
// real stack, where CUPTI hooks into the driver and the runtime sits on it.
//
// Clock: the hub's device timeline runs on CLOCK_MONOTONIC_RAW ns
// ("sim clock"), deliberately not the agent's CLOCK_MONOTONIC, so the
// agent's clock mapping is exercised. CUPTI timestamps are reported on the
// sim clock unless a timestamp callback was registered with CUPTI.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- API calls (what CUPTI callbacks and RUNTIME/DRIVER records see) ----

// One runtime or driver API call, as the hub tells CUPTI about it.
typedef struct SimApiSite {
  int domain;                  // CUpti_CallbackDomain: 1 driver, 2 runtime
  uint32_t cbid;               // CUpti_runtime_api_trace_cbid / CUpti_driver_api_trace_cbid
  const char* function_name;   // "cudaMalloc", "cuMemAlloc_v2", ...
  const char* symbol_name;     // kernel device name on launches, else NULL
  const void* params;          // the <function>_params struct from generated_*_meta.h
  void* return_value;          // cudaError_t* / CUresult*; valid at exit
  uint32_t correlation_id;     // one counter for runtime and driver calls
  uint32_t context_uid;
  void* context;               // CUcontext (opaque)
  uint32_t thread_id;          // gettid()
  uint32_t process_id;
  uint64_t start_ns;           // sim clock, API enter
  uint64_t end_ns;             // sim clock, API exit (0 at enter)
} SimApiSite;

// Called at every API enter (is_exit=0) and exit (is_exit=1) while a hook is
// set. The runtime brackets its calls with these; nested driver calls made by
// the runtime are bracketed too, with their own correlation ids.
typedef void (*SimApiHook)(const SimApiSite* site, int is_exit);
void simhub_set_api_hook(SimApiHook hook);

// Runtime/driver side: start and finish an API call. simhub_api_enter fills
// correlation_id, thread/process ids, context and start_ns, and calls the hook.
void simhub_api_enter(SimApiSite* site);
void simhub_api_exit(SimApiSite* site);

// ---- Device work (what activity records describe) ----

enum SimOpKind {
  SIM_OP_KERNEL = 1,
  SIM_OP_MEMCPY = 2,
  SIM_OP_MEMSET = 3,
  SIM_OP_SYNC = 4,       // a synchronize call (stream/device/event)
  SIM_OP_MEM_ALLOC = 5,  // memory allocated (MEMORY2 semantics)
  SIM_OP_MEM_FREE = 6,
};

typedef struct SimOp {
  int kind;                 // SimOpKind
  uint32_t correlation_id;  // of the API call that launched it
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  uint64_t launch_ns;       // sim clock: the API call that enqueued it
  uint64_t start_ns;        // sim clock: never before launch, never before the previous op on its stream ended
  uint64_t end_ns;
  uint64_t bytes;
  uint64_t address;
  int copy_kind;            // CUpti_ActivityMemcpyKind
  int src_kind;             // CUpti_ActivityMemoryKind
  int dst_kind;
  int sync_type;            // CUpti_ActivitySynchronizationType for SIM_OP_SYNC
  const char* name;         // kernel device (mangled) name; static storage
  int grid[3];
  int block[3];
  uint32_t registers_per_thread;
  uint32_t static_shared_bytes;
  uint32_t dynamic_shared_bytes;
  uint32_t graph_id;
  // Added after the first version (append only, never reorder):
  uint32_t event_id;          // SIM_OP_SYNC on an event (event sync, stream wait event)
  uint64_t waited_until_ns;   // SIM_OP_SYNC: sim-clock end of the device work the call waited for
  uint64_t graph_node_id;     // kernels run by cuGraphLaunch: the executable graph's node (0: none)
  // Copies between two devices (copy_kind CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
  // CUPTI's MEMCPY2 record): the devices of the source and destination
  // memory; device_id is the device whose stream ran the copy. Otherwise
  // both equal device_id.
  uint32_t src_device_id;
  uint32_t dst_device_id;
} SimOp;

// Called once per op when it is enqueued (its times are already decided by
// the timing model); a SIM_OP_SYNC is reported when the call returns, and
// allocations when they happen. CUPTI turns ops into activity records.
typedef void (*SimOpHook)(const SimOp* op);
void simhub_set_op_hook(SimOpHook hook);

// The sim clock (CLOCK_MONOTONIC_RAW ns).
uint64_t simhub_now_ns(void);

// The clock CUPTI reports on. Without a source it is the sim clock; the
// simulated CUPTI sets the client's cuptiActivityRegisterTimestampCallback
// function here, and every sim-clock time is then reported in the source's
// own unit and base (any monotonic count: ns, TSC ticks...), through a
// linear map re-measured from samples of source() as the process runs
// (README "Clocks"). The truth log writes both clocks, converted with the
// same map as the records, so tests can compare exactly.
void simhub_set_timestamp_source(uint64_t (*source)(void));
uint64_t simhub_to_reported_ns(uint64_t sim_ns);

// Appends one line (a JSON object, no newline) to SIM_TRUTH_FILE, if set.
// Thread-safe; lines from one process never interleave.
void simhub_truth_line(const char* json_object);

// Resource events (context created/destroyed) for CUPTI resource callbacks.
typedef void (*SimResourceHook)(int is_destroy, void* context, uint32_t context_uid, uint32_t device_id);
void simhub_set_resource_hook(SimResourceHook hook);

// CUDA graph events for CUPTI resource callbacks. A node created while a
// stream is being captured is reported inside the API call that created it
// (between its enter and exit), as CUPTI issues GRAPHNODE_CREATED.
enum SimGraphEventKind {
  SIM_GRAPH_NODE_CREATED = 1,  // CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED
  SIM_GRAPH_EXEC_CREATED = 2,  // CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED
  SIM_GRAPH_NODE_CLONED = 3,   // CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED (instantiation)
};
typedef struct SimGraphEvent {
  int kind;           // SimGraphEventKind
  void* graph;        // CUgraph
  void* node;         // CUgraphNode (node events)
  int node_type;      // CUgraphNodeType (node events)
  void* graph_exec;   // CUgraphExec (exec events)
  uint32_t graph_id;  // the graph's (or executable graph's) unique id
  uint64_t node_id;   // the node's unique id (node events)
  void* original_node;          // CUgraphNode cloned from (clone events)
  uint64_t original_node_id;    // its id (clone events)
} SimGraphEvent;
typedef void (*SimGraphHook)(const SimGraphEvent* event);
void simhub_set_graph_hook(SimGraphHook hook);

// Ids CUPTI reports for driver objects (cuptiGetStreamId[Ex],
// cuptiGetGraphId, cuptiGetGraphExecId, cuptiGetGraphNodeId). Each returns 1
// and fills *id for a live object of the simulated driver, else 0. For a NULL
// stream, per_thread picks the calling thread's per-thread default stream
// instead of the legacy one.
int simhub_stream_id(void* stream, int per_thread, uint32_t* id);

// Devices (README "Several devices"): how many the process sees
// (SIM_DEVICE_COUNT), and the ordinal of the calling thread's current
// context's device (0 while it made none current). Plain queries: no API
// call, no callback.
int simhub_device_count(void);
int simhub_current_device(void);
int simhub_graph_id(void* graph, uint32_t* id);
int simhub_graph_exec_id(void* graph_exec, uint32_t* id);
int simhub_graph_node_id(void* node, uint64_t* id);

// ---- Collective kernels (the simulated NCCL, nccl/) ----
//
// A gate holds one collective kernel: the kernel starts as any kernel does
// but cannot end before every rank of its communicator has started its own
// (its GPU spins meanwhile). The simulated libnccl creates a gate, arms it on
// the launching thread, and launches the kernel through the driver; the
// driver announces the kernel's start through on_start once it is known
// (work before it on its stream may itself wait on a gate), and places its
// end at max(start, release) + transfer_ns once simhub_gate_release says when
// the last rank started. Work behind an unreleased gate on its stream (or on
// a stream waiting for it through an event) is placed then too: kernels,
// event record/wait, and the copies and memsets the host does not wait for
// are queued without blocking the host (their bytes move when placed, after
// the collective's result was written before simhub_gate_release); copies
// the host waits for, host functions and graph launches, synchronize calls
// and event synchronize block the host until it is placed. The hub frees the
// gate after its kernel is reported.
typedef struct SimGate SimGate;
typedef void (*SimGateStart)(void* arg, uint64_t start_ns);
SimGate* simhub_gate_create(uint64_t transfer_ns, SimGateStart on_start, void* arg);
// The next kernel launched on this thread (any cuLaunchKernel*) is held by
// this gate. Without a launch the gate is never used (and leaks).
void simhub_gate_arm(SimGate* gate);
void simhub_gate_release(SimGate* gate, uint64_t release_ns);
// 1 if [ptr, ptr + bytes) lies inside one allocation the sim made or
// registered (a collective's buffers: the simulated NCCL reads and writes
// them only then, where NVIDIA's kernel would fault otherwise); no API call.
int simhub_memory_holds(const void* ptr, size_t bytes);

// Fault switches (SIM_* environment variables) read once by the hub.
// Returns the value of SIM_<name> or NULL; e.g. simhub_fault("NO_DRIVER").
const char* simhub_fault(const char* name);

#ifdef __cplusplus
}
#endif
