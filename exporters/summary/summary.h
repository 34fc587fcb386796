// The per-window summary: nsys-stats-style tables, memory, a per-step table
// and findings. ComputeSummary() does the arithmetic (tests check its
// numbers); RenderSummary() turns it into the .summary.txt text. `prof
// summary` runs the same two functions on windows read back from traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/window.h"
#include "exporters/summary/findings.h"

namespace prof {

// One row of cuda_gpu_kern_sum / cuda_api_sum / cuda_gpu_mem_time_sum.
struct TimeRow {
  std::string name;
  double percent = 0;  // of the table's total time
  uint64_t total_ns = 0;
  uint64_t count = 0;
  double avg_ns = 0;
  double median_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  double stddev_ns = 0;  // sample standard deviation, 0 for one instance
};

// TimeRow's fields in bytes: data, not logic.
// One row of cuda_gpu_mem_size_sum (bytes; rendered in MB = 10^6 bytes).
struct SizeRow {
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t count = 0;
  double avg_bytes = 0;
  double median_bytes = 0;
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;
  double stddev_bytes = 0;
};

// Allocator activity on one device and memory kind (AllocSample).
struct MemoryRow {
  int device = -1;  // -1: host memory
  uint8_t mem_kind = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t bytes_freed = 0;
  uint64_t peak_bytes = 0;  // highest live total seen in the window
};

// Where a stretch of wall time went, each nanosecond counted once. While
// the GPU runs anything, by what ran (a kernel, else a communication kernel,
// else a copy, else a memset, when several overlap); while it runs nothing,
// by what the host was in: a synchronizing call, another CUDA call (launch,
// copy setup, runtime), or none. The first four add up to the GPU busy time.
struct TimeBreakdown {
  uint64_t kernel_ns = 0;   // compute kernels
  uint64_t comm_ns = 0;     // communication kernels (IsCommunicationKernelName)
  uint64_t memcpy_ns = 0;
  uint64_t memset_ns = 0;
  uint64_t runtime_ns = 0;  // GPU idle, a host thread inside a CUDA call that is not a synchronize
  uint64_t sync_ns = 0;     // GPU idle, a host thread inside a blocking synchronize
  uint64_t other_ns = 0;    // GPU idle, no host thread inside a CUDA call
  uint64_t total() const { return kernel_ns + comm_ns + memcpy_ns + memset_ns + runtime_ns + sync_ns + other_ns; }
};

// GPU idle between consecutive pieces of work (kernel, copy, memset) on one
// stream, split the way Holistic Trace Analysis splits it: host wait (the
// next piece's launch call began after the previous piece ended: the host
// had not queued it yet), kernel wait (queued in time, gap below
// kKernelWaitNs: launch overhead), other (queued in time, longer gap:
// waiting on another stream or event).
inline constexpr uint64_t kKernelWaitNs = 30;  // HTA's consecutive_kernel_delay default
struct StreamIdleRow {
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t gaps = 0;  // gaps of positive length
  uint64_t host_wait_ns = 0;
  uint64_t kernel_wait_ns = 0;
  uint64_t other_ns = 0;
};

struct StepRow {
  uint64_t step = 0;
  uint64_t wall_ns = 0;
  uint64_t gpu_busy_ns = 0;  // union of GPU work intersected with the step
  double gpu_busy_percent = 0;
  uint64_t kernels = 0;      // kernels that started on the GPU in the step
  uint64_t launches = 0;     // launch calls made in the step
  uint64_t syncs = 0;        // synchronizing calls made in the step
  uint64_t copies = 0;       // memcpy calls made in the step
  uint64_t allocs = 0;       // allocation and free calls made in the step
  TimeBreakdown breakdown;   // adds up to wall_ns
};

// Launch call entry -> GPU start of its work.
struct LatencyStats {
  uint64_t count = 0;
  double median_ns = 0;
  double p99_ns = 0;
  uint64_t max_ns = 0;
};

// GPU time by Python call site: the innermost frame of the user's own code
// above the calls (python_sites.h).
struct CallSiteRow {
  std::string site;       // "train.py:57 in train_step"; "(no Python frames)", "(library code only)"
  std::string file;       // the frame's full file name ("" for the two rows above)
  uint64_t gpu_ns = 0;    // GPU time of the kernels, copies and memsets its calls launched
  uint64_t kernels = 0;   // kernels those calls ran
  uint64_t launches = 0;  // launch calls
  uint64_t syncs = 0;     // blocking synchronizations
  uint64_t copies = 0;    // memcpy calls
  uint64_t allocs = 0;    // allocation and free calls
  uint64_t calls = 0;     // every recorded call
};

// Kernels that code compiled at run time launched, by what compiled them
// (summary_compiled.cpp): a torch.compile graph (Inductor's generated module)
// or @triton.jit kernels launched from one call site.
struct CompiledCodeRow {
  bool graph = false;       // a torch.compile graph; else @triton.jit
  std::string code;         // the generated module's file; "@triton.jit <kernel names>"
  std::string called_from;  // "model.py:80 in TinyLM.forward" (call-site text of the caller frame)
  uint64_t gpu_ns = 0;      // GPU time of the kernels, copies and memsets it launched
  uint64_t kernels = 0;
  uint64_t launches = 0;    // launch calls
  uint64_t kernel_names = 0;  // distinct kernel names
};

// PyTorch's operators by name (summary_operators.cpp), as key_averages()
// counts them.
struct OperatorRow {
  std::string name;           // "aten::mm"
  uint64_t calls = 0;
  uint64_t self_gpu_ns = 0;   // GPU time of the work launched by calls directly inside it
  uint64_t total_gpu_ns = 0;  // ... and inside the operators it called
  uint64_t kernels = 0;       // kernels launched directly inside it
  uint64_t cpu_ns = 0;        // its spans, summed
};
inline constexpr size_t kOperatorRowsShown = 30;

// PyTorch's tensor memory on one device (summary_tensor_memory.cpp): the
// caching allocator's allocated bytes as torch.cuda.memory_allocated reads
// them, and what is live at their peak.
struct TensorLineRow {
  // "train.py:57 in forward"; without a Python frame (autograd's threads,
  // C++) "in <operator>" around the allocation (any thread's, entered
  // last), or "" when none.
  std::string site;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};
struct TensorBlockRow {
  uint64_t bytes = 0;
  std::string site;
  uint64_t alloc_ns = 0;  // when, from the window's start
};
struct TensorMemoryRow {
  int device = 0;
  uint64_t start_allocated = 0, end_allocated = 0;
  uint64_t peak_allocated = 0, reserved_at_peak = 0, peak_reserved = 0;
  uint64_t peak_ns = 0;   // from the window's start
  int64_t peak_step = -1;  // the step it is in; -1 none
  std::vector<std::pair<uint64_t, uint64_t>> step_peaks;  // (step, its peak allocated bytes)
  uint64_t allocs = 0, frees = 0;
  uint64_t held_from_before = 0;     // live at the peak, allocated before the window
  std::vector<TensorLineRow> lines;   // live at the peak, by bytes descending
  // With module paths (PROF_TORCH_OPS=...,modules): the same by the module
  // around the operator each block was allocated in (site: its path, ""
  // outside every module).
  std::vector<TensorLineRow> modules;
  std::vector<TensorBlockRow> largest;  // live at the peak, largest first
};
inline constexpr size_t kTensorRowsShown = 10;

// GPU time by nn.Module call path (summary_operators.cpp): the work of the
// operators run in a module's forward, and of the backward operators
// autograd ran for them.
struct ModuleRow {
  std::string path;           // "blocks.0.attn.qkv"; the outermost module by its class name
  uint64_t self_gpu_ns = 0;   // operators directly in it
  uint64_t total_gpu_ns = 0;  // ... and in the modules it called
  uint64_t kernels = 0;       // kernels of the operators directly in it
  uint32_t depth = 0;         // in the tree of calls: 0 outermost
};
inline constexpr size_t kModuleRowsShown = 40;

// NCCL calls of one operation and message size (nccl-tests' S bytes) on
// communicators of one size.
struct CollectiveRow {
  std::string name;        // "AllReduce", ... as NCCL names it
  uint64_t bytes = 0;      // S
  int ranks = 0;
  uint64_t count = 0;      // calls
  uint64_t kernels = 0;    // calls whose kernel is on record (the time columns)
  uint64_t total_ns = 0;   // kernel time, including the wait for the last rank
  double avg_ns = 0;
  double algbw_gbps = 0;   // S / avg
  double busbw_gbps = 0;   // algbw x nccl-tests' factor for the operation and rank count
};

struct IdleGap {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string host_activity;  // the CUDA call that covers at least half of the gap, or ""
};

inline constexpr size_t kLiveRowsShown = 20;  // live allocations listed

struct Summary {
  WindowMeta meta;
  uint64_t span_start_ns = 0;  // what busy % is measured against
  uint64_t span_end_ns = 0;
  uint64_t gpu_busy_ns = 0;
  double gpu_busy_percent = 0;
  bool has_gpu_work = false;

  std::vector<TimeRow> kernels;    // by total time, descending
  std::vector<TimeRow> api_calls;
  std::vector<TimeRow> mem_time;
  std::vector<SizeRow> mem_size;   // by total bytes, descending
  bool mem_size_from_host = false; // no GPU copy records: sizes from the calls

  std::vector<MemoryRow> memory;
  std::vector<LiveAllocation> live;  // largest first
  // Call site of the allocating call of live[i], for the first
  // kLiveRowsShown (python_sites.h's CallSiteText; "" when unknown).
  std::vector<std::string> live_sites;
  std::vector<StepRow> steps;
  TimeBreakdown breakdown;                 // over [span_start_ns, span_end_ns)
  std::vector<StreamIdleRow> stream_idle;  // by device, then stream
  LatencyStats launch_latency;
  double median_kernel_ns = 0;
  double median_kernel_gap_ns = 0;  // GPU idle between consecutive kernels on a stream
  // GPU time in the span: compute only (kernels that are not NCCL's, copies,
  // memsets), communication only (NCCL kernels), both at once, and idle.
  // Findings take "GPU busy" as compute_busy_percent: a GPU waiting in a
  // collective is not busy computing.
  uint64_t gpu_compute_ns = 0;
  uint64_t gpu_comm_ns = 0;
  uint64_t gpu_overlap_ns = 0;
  uint64_t gpu_idle_ns = 0;
  double compute_busy_percent = 0;
  std::vector<CollectiveRow> collectives;  // by total time, descending
  std::vector<IdleGap> idle_gaps;   // ≥ kIdleGapMinNs, longest first
  uint64_t idle_gap_total_ns = 0;

  std::string python_status;            // empty: not a CPython process (no table)
  std::vector<CallSiteRow> call_sites;  // by GPU time, then calls, descending
  std::vector<CompiledCodeRow> compiled_code;  // by GPU time, then launches, descending
  uint64_t compiled_total_gpu_ns = 0;          // GPU time of every kernel, copy and memset (the % base)
  std::vector<OperatorRow> operators;          // by self GPU time, then total, descending
  std::vector<ModuleRow> modules;              // a tree, depth first: each module after the one that called it
  uint64_t operator_total_gpu_ns = 0;          // GPU time of every kernel, copy and memset (the % base)
  std::vector<TensorMemoryRow> tensor_memory;  // by device

  std::vector<Finding> findings;
};

class WindowIndex;
class CompactWindow;

// nsys's operation name for a CUPTI copy kind: "[CUDA memcpy Host-to-Device]".
std::string CopyOperation(uint8_t cupti_copy_kind);

Summary ComputeSummary(const Window& window);
// The same with the window's index already built: the agent's writer builds
// one per window and shares it with the Chrome trace (window_files.cpp).
Summary ComputeSummary(const Window& window, const WindowIndex& index);
// The same numbers from a window held compact (`prof summary`): the same
// code reads it.
Summary ComputeSummary(const CompactWindow& window);
std::string RenderSummary(const Summary& summary);
// The summary's first lines (name, steps, host, window and GPU busy).
std::string SummaryHeader(const Summary& summary);
// Fills summary->python_status and call_sites (summary_call_sites.cpp).
void ComputeCallSites(const Window& window, const WindowIndex& index, Summary* summary);
void ComputeCallSites(const CompactWindow& window, const WindowIndex& index, Summary* summary);
// Fills summary->compiled_code (summary_compiled.cpp); RenderCompiledCode
// appends its table, only when it has rows.
void ComputeCompiledCode(const Window& window, const WindowIndex& index, Summary* summary);
void ComputeCompiledCode(const CompactWindow& window, const WindowIndex& index, Summary* summary);
void RenderCompiledCode(const Summary& summary, std::string* out);
// Fills summary->operators (summary_operators.cpp); RenderOperators appends
// its table, only when the window has operators.
void ComputeOperators(const Window& window, const WindowIndex& index, Summary* summary);
void ComputeOperators(const CompactWindow& window, const WindowIndex& index, Summary* summary);
void RenderOperators(const Summary& summary, std::string* out);
// Fills summary->tensor_memory (summary_tensor_memory.cpp) from the
// window's PyTorch allocator events; RenderTensorMemory appends its section
// when the window has them or says why not.
void ComputeTensorMemory(const Window& rest, Summary* summary);
void RenderTensorMemory(const Summary& summary, std::string* out);
// How the summary and the page name where a block was allocated
// (TensorLineRow::site), and the row of what the window did not allocate.
std::string TensorSiteText(const std::string& site);
std::string TensorModuleText(const std::string& path);  // TensorMemoryRow::modules' site
extern const char* const kTensorHeldText;
std::string RenderSummary(const Window& window);
std::string RenderSummary(const Window& window, const WindowIndex& index);

// Which per-step rows the summary and the report page list, so that both
// stay readable and bounded for a window of 100,000 steps (every step is in
// the trace as ProfilerStep#N): all of them up to kStepRowsAll; past that,
// the first kStepRowsFirst and the kStepRowsSlowest slowest of the others,
// as indices into steps in step order.
constexpr size_t kStepRowsAll = 300;
constexpr size_t kStepRowsFirst = 100;
constexpr size_t kStepRowsSlowest = 100;
std::vector<size_t> ListedStepRows(const std::vector<StepRow>& steps);

}  // namespace prof
