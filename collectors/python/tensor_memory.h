// PyTorch's tensor memory while windows record (PROF_TORCH_MEMORY).
//
// PyTorch's CUDA caching allocator keeps, when asked through its documented
// memory history (torch.cuda.memory._record_memory_history), a record of
// each of its actions: a block allocated for a tensor (with the Python stack
// that asked for it), a free requested and completed, a segment reserved
// from CUDA or released to it, each with a wall-clock time. The pending call
// of torch_ops.cpp (the interpreter's main thread, with the GIL) takes a
// snapshot of the allocator's segments and blocks and turns the history on
// as recording starts; at each window's end it takes the history and hands
// it over here as flat int64 records (kBlobVersion's layout below).
//
// The history gives each request's size; torch.cuda.memory_allocated counts
// blocks, which the allocator rounds up to 512 bytes and sometimes leaves
// unsplit (a large block keeps up to 1 MiB more than asked; a small one
// never less than 512 bytes spare). ReplayTensorMemory works the block sizes
// out by replaying the allocator's splits and merges over the snapshot, so
// every event carries the device's allocated and reserved totals as
// torch.cuda.memory_allocated and memory_reserved would have read them; the
// history's end state checks the replay.
//
// The records, int64 each:
//   header:   version, segments, entries, devices, flags (kFlag*)
//   segment:  device, address, total size, small pool (0/1), blocks,
//             then per block: address, size, state (kBlock*)
//   entry:    device, action (kAction*), time (Unix us), address, size, site
//             (index into the '\n'-separated site lines; -1 none)
//   device:   device, allocated bytes, reserved bytes (at the history's end)
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "base/tensor_memory_source.h"

namespace prof::python {

constexpr int64_t kBlobVersion = 1;
enum : int64_t { kFlagWrapped = 1, kFlagSettings = 2 };  // the ring wrapped; PYTORCH_CUDA_ALLOC_CONF changes the rules
enum : int64_t { kBlockFree = 0, kBlockAllocated = 1, kBlockAwaitingFree = 2 };
enum : int64_t { kActionAlloc = 0, kActionFreeRequested = 1, kActionFreeCompleted = 2, kActionSegmentAlloc = 3,
                 kActionSegmentFree = 4 };

// What one hand-over holds.
struct TensorMemoryBatch {
  std::vector<int64_t> records;
  std::string sites;          // '\n'-separated "file:line in function"
  int64_t epoch_offset_ns = 0;  // Unix ns minus agent ns when it was handed over
};

struct ReplayResult {
  std::vector<TensorMemoryEvent> events;  // time order; site_id: index + 1 into `sites` (0 none)
  std::vector<std::string> sites;
  std::string problem;  // "" when the replay ends where the allocator did
};

// Pure: the events of one hand-over, with block sizes and totals.
ReplayResult ReplayTensorMemory(const TensorMemoryBatch& batch);

class TensorMemory : public TensorMemorySource {
 public:
  // The main thread's pending call: whether the allocator's history is on.
  void SetRecording(bool on) { recording_.store(on, std::memory_order_relaxed); }
  bool recording() const { return recording_.load(std::memory_order_relaxed); }
  // The session, as a window ends: a hand-over is due.
  void Expect();
  // The main thread's pending call: the history it took, or why none
  // comes (status; "" when memory was not on at all).
  void Deliver(TensorMemoryBatch batch);
  void NotComing(const std::string& status);

  void Take(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* w) override;
  void ProcessExiting() override;

 private:
  std::atomic<bool> recording_{false};
  std::mutex mu_;
  std::condition_variable arrived_;
  bool due_ = false;
  std::deque<TensorMemoryBatch> batches_;
  std::string status_;
  // Replayed events after the last window's end (the next window's, when
  // windows follow each other with the history on), with their sites.
  std::vector<TensorMemoryEvent> later_;
  std::vector<std::string> later_sites_;
};

}  // namespace prof::python
