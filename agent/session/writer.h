// The writer thread ("libprof-writer"): turns WindowJobs into sealed Windows
// and hands them to the sink (the exporters), off the application threads.
// It is the only consumer of the per-thread event buffers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/session/alloc_tracker.h"
#include "agent/session/collective_store.h"
#include "base/device_collector.h"
#include "agent/session/event_buffers.h"
#include "agent/session/nvtx_store.h"
#include "base/stack_source.h"
#include "base/tensor_memory_source.h"
#include "agent/session/window_job.h"

namespace prof {

// Writes a sealed window's files; false with a one-line error. On success
// a non-empty message is a note on why nothing was written. `files` gets
// the path of each file placed (the log line names them).
using WindowSink =
    std::function<bool(const Window& window, std::string* error, std::vector<std::string>* files)>;

struct WriterDeps {
  EventBuffers* buffers = nullptr;
  AllocTracker* allocs = nullptr;
  DeviceCollector* collector = nullptr;
  NvtxStore* nvtx = nullptr;  // may be null
  CollectiveStore* collectives = nullptr;  // may be null
  WindowSink sink;
  // Optional: fills versions and device properties (needs the CUDA libs).
  std::function<void(Window*)> enrich;
  // Optional: the Python stacks the host events refer to.
  StackSource* python = nullptr;
  // Optional: PyTorch's tensor memory (PROF_TORCH_MEMORY).
  TensorMemorySource* tensor_memory = nullptr;
};

// Calls only CUPTI recorded (no wrapper saw them: CUDA_INJECTION64_PATH)
// carry CUPTI's times, taken outside the callback in which a step marker was
// observed: the call that starts a step (a launch, a copy) begins a little
// before its boundary, a synchronize that ends one may end a little after.
// A step boundary inside such a call on the main thread moves to the call's
// nearer end, so the trace's step slices and the summary's per-step rows hold
// the marking call in the step it belongs to. Part of SealWindow, for steps
// taken at calls only (WindowJob::steps_at_calls): a time step's boundary
// is read off the clock and may truly fall inside a call.
void AlignStepsWithCuptiCalls(Window* w);

// Builds the sealed Window for a job: device records first (that wait is
// what gives in-flight calls time to finish), then host events, samples,
// ranges and strings. Used by the thread; tests call it directly.
Window SealWindow(WindowJob job, const WriterDeps& deps);

class WriterThread : public WindowWriter {
 public:
  explicit WriterThread(WriterDeps deps);
  ~WriterThread() override;

  void SubmitWindow(WindowJob job) override;
  void SubmitDiscard(uint64_t before_ns) override;
  void ReleaseHeld(bool write, const std::string& step_description, const std::string& note) override;

  // Waits until every submitted job is done, at most timeout_ns. True if
  // the queue drained. Used at exit, so the partial window is on disk
  // before the process goes.
  bool Drain(uint64_t timeout_ns);

  // fork child: the thread does not exist there; forget queued jobs and
  // start a fresh thread lazily.
  void ResetAfterFork();

  uint64_t windows_written();
  uint64_t windows_failed();

 private:
  struct Job {
    bool is_window = false;
    WindowJob window;
    uint64_t discard_before_ns = 0;
    // ReleaseHeld: neither a window nor a discard.
    bool is_release = false;
    bool release_write = false;
    std::string release_description;
    std::string release_note;
  };
  // Writes a sealed window's files and logs the outcome (writer thread).
  void WriteSealed(Window& w, uint64_t first, uint64_t last, const std::string& note);
  void EnsureThread();  // mu_ held
  void Run();

  WriterDeps deps_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stop_ = false;
  bool thread_started_ = false;
  std::thread thread_;
  uint64_t written_ = 0;
  uint64_t failed_ = 0;
  // WindowJob::hold's window, sealed, until ReleaseHeld (writer thread only).
  std::unique_ptr<Window> held_;
};

}  // namespace prof
