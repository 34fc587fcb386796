// Python stacks on recorded CUDA calls (PROF_PYTHON, PROF_PYTHON_DEPTH).
//
// Capture() runs in the interposed wrapper of a recorded call, on the
// calling thread, only while a window records. The first call detects the
// interpreter (dlsym of a few CPython symbols in the process: a CPython
// process exports them; anything else is "not a CPython process" and costs
// nothing more). Then, per call:
//
//   PyGILState_GetThisThreadState()  the calling thread's own thread state,
//                                    from thread-specific storage: needs no
//                                    GIL, calls nothing that does
//   WalkFrames()                     raw frames (code object, instruction)
//   thread cache                     raw stack -> stack id, no lock (warm)
//   StackTable (mutex)               first sight of a stack: read file,
//                                    function and line, intern (cold)
//
// Stack ids: 0 = no stack recorded (stacks off, not Python, or the walk
// failed), 1 = the thread has no Python frames (a C++ thread, an autograd
// thread), 2.. = interned stacks. A stack is a list of frame ids, innermost
// first; a frame is (file, function, line), each interned once.
//
// Calls on another thread's behalf (backward attribution). A call from a
// thread without Python frames is charged to a Python thread's stack, and
// marked with that thread's id (PythonInfo::via), when a Python thread that
// launches kernels is out of the interpreter at the time: in a C call, as
// loss.backward() is while PyTorch's autograd threads launch its kernels.
// Reading another thread's frames is done without the GIL and without a
// single plain load from that thread's memory: every read is
// process_vm_readv on the process itself (safe_read.h), which returns an
// error or stale bytes, never a fault, when the memory was freed; and the
// walk counts only when the thread was out of the interpreter before and
// after it and its innermost frame and instruction did not change (a thread
// out of the interpreter cannot push or pop frames). See Borrow().
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/stack_source.h"
#include "model/window.h"
#include "collectors/python/frame_walk.h"
#include "collectors/python/py_layout.h"

namespace prof::python {

struct ThreadCache;  // python_stacks.cpp: per-thread state of captures

inline constexpr uint32_t kNoStack = 0;
inline constexpr uint32_t kNoPythonFrames = 1;
inline constexpr int kMaxDepth = 256;

// The interned stacks and frames of the process. Thread-safe; every entry
// point but Find() takes the mutex (Find is the thread caches' fallback, so
// it is the cold path too).
class StackTable {
 public:
  StackTable();
  // The stack id of `raw` (n frames), interning it (and its frames, read
  // through the layout) on first sight. *stored: the stored raw frames,
  // stable for the process's life (thread caches compare against them).
  // kNoStack when the table is full or a frame cannot be read.
  // via: 0 for the calling thread's own stack; else the id of the thread
  // whose stack this is, read from the calling thread (its frames are read
  // with SafeRead).
  uint32_t Intern(const RawFrame* raw, int n, uint64_t hash, const PyLayout& l, const PyTypes& t,
                  const RawFrame** stored, uint32_t via = 0);
  // Copies the frames and stacks for a sealed window.
  void Snapshot(PythonInfo* out);
  size_t stack_count();

 private:
  struct Stack {
    std::vector<RawFrame> raw;
    std::vector<uint32_t> frames;
    uint32_t via = 0;
  };
  struct RawFrameHash {
    size_t operator()(const RawFrame& f) const;
  };
  struct FrameKey {
    uint32_t file_id, function_id;
    int32_t line;
    bool operator==(const FrameKey&) const = default;
  };
  struct FrameKeyHash {
    size_t operator()(const FrameKey& k) const;
  };
  uint32_t FrameIdLocked(const FrameText& text);

  std::mutex mu_;
  std::deque<Stack> stacks_;  // id -> stack; a deque keeps raw arrays in place
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  std::unordered_map<RawFrame, uint32_t, RawFrameHash> frame_of_raw_;
  std::unordered_map<FrameKey, uint32_t, FrameKeyHash> frame_ids_;
  std::vector<PyFrame> frames_;  // id -> frame; id 0 unused
};

// Hash of a raw stack, the same one the capture computes while walking.
uint64_t HashRawFrames(const RawFrame* raw, int n);

class PythonStacks final : public StackSource {
 public:
  // enabled: PROF_PYTHON is not 0; depth: PROF_PYTHON_DEPTH.
  PythonStacks(bool enabled, int depth);

  // The calling thread's stack id (see above); now_ns: the call's time,
  // launch: the call launches a kernel. Never throws, never blocks on
  // anything but the table's mutex at a stack's first sight.
  uint32_t Capture(uint64_t now_ns, bool launch) override;

  // Frames, stacks and the status line, for a sealed window. The status is
  // empty while no window has asked for a stack, or when the process is
  // not CPython (nothing to say).
  void Snapshot(PythonInfo* out) override;

  // For tests: interpreter facts given directly (no dlsym).
  struct Interpreter {
    const PyLayout* layout = nullptr;
    PyTypes types;
    uintptr_t (*this_thread_state)() = nullptr;
    int (*is_finalizing)() = nullptr;
    int (*is_initialized)() = nullptr;
    std::string version;  // "3.11.2"
    uintptr_t runtime = 0;  // &_PyRuntime (3.11's GIL state)
  };
  void UseInterpreterForTest(const Interpreter& interp);

 private:
  enum State : uint8_t { kUnknown, kOn, kOff };
  void Detect();
  void TurnOff(const std::string& why);
  uint32_t Lookup(ThreadCache& cache, const RawFrame* raw, int n, uint64_t hash);

 public:
  // A Python thread that has launched kernels, as calls on its behalf see
  // it. Slots are never freed (a thread's slot is cleared at its exit and
  // reused); all fields are atomics written by their own thread.
  struct Launcher {
    std::atomic<uint32_t> tid{0};           // 0: free
    std::atomic<uintptr_t> tstate{0};
    std::atomic<uint64_t> last_launch_ns{0};
    std::atomic<uint64_t> last_call_ns{0};  // any recorded call of its own
  };
  static constexpr int kMaxLaunchers = 64;
  // How long a thread without Python frames trusts what it last found
  // (unless the Python thread has made a call of its own since): a found
  // stack, and finding none.
  static constexpr uint64_t kTrustFoundNs = 1'000'000;
  static constexpr uint64_t kTrustNoneNs = 100'000;
  // For tests: whether borrowing is possible with this interpreter.
  bool CanBorrow() const { return can_borrow_; }

 private:
  // Makes the calling thread a candidate (its first recorded launch).
  void Claim(ThreadCache& cache, uintptr_t tstate, uint64_t now_ns);
  uint32_t Borrow(uint64_t now_ns);
  // Whether the thread with this state is out of the interpreter; false
  // when that cannot be read.
  bool OutOfInterpreter(uintptr_t tstate);
  Launcher launchers_[kMaxLaunchers];
  std::atomic<int> launcher_high_{0};  // slots in use are below it
  bool can_borrow_ = false;            // set at detection

  const bool enabled_;
  const int depth_;
  std::atomic<uint8_t> state_{kUnknown};
  std::mutex detect_mu_;
  Interpreter interp_;
  std::string status_;      // under detect_mu_
  bool report_status_ = false;
  StackTable table_;
};

}  // namespace prof::python
