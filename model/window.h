// A sealed, immutable window: everything an exporter needs, nothing live.
// The session builds one at the end of each active window and hands it to
// the writer thread; exporters are pure functions of it, so tests hand-build
// Windows.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/events.h"

namespace prof {

// Static properties of one GPU, as Kineto's deviceProperties lists them.
struct DeviceProps {
  int id = 0;
  std::string name;
  uint64_t total_global_mem = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int max_regs_per_block = 0;
  int max_regs_per_sm = 0;
  int max_shared_per_block = 0;
  int max_shared_per_sm = 0;
};

// Device records (kernels, copies, memsets) one loss counter holds, by kind:
// a window says which of its tables undercount. The kinds sum to the counter.
struct DeviceLossKinds {
  uint64_t kernels = 0;
  uint64_t copies = 0;
  uint64_t memsets = 0;

  // Kinds other than kernel, memcpy and memset are not counted here.
  void Add(DeviceKind kind, uint64_t n = 1) {
    if (kind == DeviceKind::kKernel) kernels += n;
    if (kind == DeviceKind::kMemcpy) copies += n;
    if (kind == DeviceKind::kMemset) memsets += n;
  }
  void Add(const DeviceLossKinds& o) {
    kernels += o.kernels;
    copies += o.copies;
    memsets += o.memsets;
  }
  uint64_t total() const { return kernels + copies + memsets; }
};

// Counts of what was lost, written into the trace and summary.
struct LossCounts {
  uint64_t host_events_dropped = 0;      // per-thread buffers full (PROF_BUFFER_MB)
  uint64_t device_records_dropped = 0;   // our CUPTI buffer pool exhausted
  uint64_t cupti_records_dropped = 0;    // cuptiActivityGetNumDroppedRecords
  uint64_t device_records_missing = 0;   // launched in window, never delivered by the deadline
  uint64_t device_records_untimed = 0;   // of calls in the window, delivered by CUPTI without timestamps
  uint64_t unknown_activity_kinds = 0;   // CUPTI records of kinds we do not decode
  uint64_t alloc_samples_dropped = 0;
  uint64_t nvtx_ranges_dropped = 0;      // NVTX range store full (PROF_BUFFER_MB/16)
  uint64_t nvtx_names_dropped = 0;       // NVTX name table full (PROF_BUFFER_MB/16): named kDroppedNameText
  uint64_t collectives_dropped = 0;      // NCCL call store full
  // Calls the window saw return through a recording wrapper whose host
  // event had not arrived when it was sealed (the thread descheduled between
  // the call's return and its record for longer than the writer waits).
  uint64_t host_events_late = 0;
  // Calls of the window whose own RUNTIME/DRIVER record (what shows a call
  // no wrapper recorded) had not come by the deadline, or never came
  // after CUPTI dropped records.
  uint64_t api_records_missing = 0;
  // Time steps: how long after the window's first step began recording was
  // actually on (the agent thread, which turns it on at step boundaries, ran
  // that late). Calls made in that stretch are not in the window.
  uint64_t unrecorded_start_ns = 0;
  // device_records_missing, _untimed and _dropped by kind of record (a
  // dropped record of a kind libprof does not keep is in the total only).
  // CUPTI's own drop count says no kind.
  DeviceLossKinds missing_kinds;
  DeviceLossKinds untimed_kinds;
  DeviceLossKinds dropped_kinds;
  // Launches of the window whose GPU records CUPTI wrote for another client
  // of its activity API (the program's own torch.profiler held it: a CUPTI
  // that allows one client), not for libprof.
  uint64_t device_records_elsewhere = 0;
};

struct WindowMeta {
  uint64_t first_step = 0;  // files are named by this
  uint64_t last_step = 0;
  bool partial = false;          // ended by exit/signal before its last step
  std::string partial_reason;    // "exit", "SIGTERM", ...
  uint64_t start_ns = 0;         // agent clock: first active step began
  uint64_t end_ns = 0;           // agent clock: last active step ended
  int64_t epoch_offset_ns = 0;   // agent clock + this = Unix epoch ns
  int rank = 0;                  // 0 when the job has no rank
  bool rank_known = false;       // PROF_RANK or a launcher variable was set: files get _rank<R>
  int world_size = 1;
  int nccl_version = 0;          // NCCL_VERSION_CODE of the process's NCCL; 0 unknown or none
  int pid = 0;
  std::string name;              // PROF_NAME or <host>_<process>_<pid>
  std::string hostname;
  std::string process;           // the program's name (basename of argv[0]: python3, train)
  std::string cupti_mode;        // "activity" or "interception-only (<cause>)"
  bool has_gpu_timings = false;  // false in interception-only mode
  std::string libprof_version;
  int cuda_runtime_version = 0;
  int cuda_driver_version = 0;
  uint32_t cupti_api_version = 0;
  std::vector<std::pair<std::string, std::string>> config;  // PROF_* as applied
  std::string step_description;  // PROF_STEP=auto: what was chosen (or why it fell back); empty otherwise
  std::string range_description; // PROF_RANGE: which range this window is; empty otherwise
  // PROF_TORCH_MEMORY: "" (not a PyTorch process with CUDA, or off), "on",
  // or what kept the window's tensor memory out or inexact.
  std::string tensor_memory;
  LossCounts losses;
};

// A Python frame: file and function (interned strings) and the line it was
// executing.
struct PyFrame {
  uint32_t file_id;
  uint32_t function_id;
  int32_t line;  // -1 when the code has no line there
  uint32_t reserved;
};

// The Python stacks HostEvent::stack_id refers to.
struct PythonInfo {
  // "on (CPython 3.11.2)", "off (<why>)"; empty when the process is not
  // CPython or PROF_PYTHON=0 (nothing to say).
  std::string status;
  std::vector<PyFrame> frames;                // frame id -> frame; id 0 unused
  std::vector<std::vector<uint32_t>> stacks;  // stack id -> frame ids, innermost first; 0 none, 1 empty
  // stack id -> the thread whose stack it is, for a stack charged to calls
  // a thread without Python frames made while that Python thread waited in
  // a C call (backward attribution); 0 or absent: the calling thread's own.
  std::vector<uint32_t> via;
  uint32_t Via(uint32_t stack_id) const { return stack_id < via.size() ? via[stack_id] : 0; }
};

struct Window {
  WindowMeta meta;
  std::vector<HostEvent> host_events;        // sorted by start_ns
  std::vector<DeviceRecord> device_records;  // sorted by start_ns
  std::vector<StepSpan> steps;               // ascending step numbers
  std::vector<NvtxRange> nvtx_ranges;
  std::vector<CollectiveCall> collectives;   // NCCL calls, sorted by start_ns
  std::vector<CommInfo> communicators;       // NCCL communicators of this process
  std::vector<AllocSample> alloc_samples;    // in time order
  // PyTorch's tensor allocations (PROF_TORCH_MEMORY), in time order.
  std::vector<TensorMemoryEvent> tensor_memory;
  std::vector<LiveAllocation> live_at_end;   // allocations live when the window ended
  std::vector<DeviceProps> devices;
  std::vector<std::pair<uint32_t, std::string>> thread_names;  // tid -> name
  std::vector<std::string> strings;          // interned: id -> text; id 0 is ""
  PythonInfo python;                         // stacks of the host events' calling threads

  const std::string& String(uint32_t id) const {
    static const std::string* const kEmpty = new std::string;  // never destroyed: used at exit
    return id < strings.size() ? strings[id] : *kEmpty;
  }
};

}  // namespace prof
