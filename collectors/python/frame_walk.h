// Reading a thread's Python frames from memory: the hot walk that yields raw
// frames (code object, instruction offset) and the cold reads that turn a
// raw frame into file, function and line. Pure memory reads through a
// PyLayout; nothing here calls the interpreter, so tests run them on
// hand-built memory laid out as each version's headers say.
//
// Safety: only the calling thread's own frames are walked. Its chain changes
// only when that thread runs Python, which it is not doing while it is
// inside a CUDA call (with or without the GIL), so the chain is stable for
// the walk. Every code object is checked to be a code object (its type is
// PyCode_Type) before anything else is read from it, every pointer is checked
// for plausibility, and the walk is bounded, so a layout that does not match
// stops the walk instead of wandering. The one object another thread may
// replace under the walk, a free-threaded code object's array of
// thread-local bytecode copies, is read with SafeRead (safe_read.h).
#pragma once

#include <cstdint>
#include <string>

#include "collectors/python/py_layout.h"

namespace prof::python {

// Plain addresses: data, not logic.
// Addresses of the interpreter's type objects, found with dlsym.
struct PyTypes {
  uintptr_t code = 0;
  uintptr_t unicode = 0;
  uintptr_t bytes = 0;
  uintptr_t none = 0;  // _Py_NoneStruct (3.13+: f_executable may be None)
};

// One frame as the walk sees it: enough to tell stacks apart cheaply.
struct RawFrame {
  uint64_t code;         // PyCodeObject*
  int32_t instr;         // instruction offset in code units; -1: not started
  int32_t first_line;    // co_firstlineno (guards against a reused address)
  bool operator==(const RawFrame&) const = default;
};
static_assert(sizeof(RawFrame) == 16);

// Walks from thread state `tstate`, innermost first, into out[0..max).
// Returns the number of frames, or -1 when memory did not look like this
// layout (a pointer implausible or a code object of the wrong type).
int WalkFrames(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out, int max);

// The same walk over another thread's frames: every load is a SafeRead
// (process_vm_readv on the process itself), so memory that thread frees or
// unmaps under the walk yields -1, never a fault. One system call per load:
// for rare, rate-limited use only.
int WalkFramesSafe(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out, int max);

// Another thread's innermost frame pointer and that frame's instruction
// pointer, read safely: two reads taken before and after a WalkFramesSafe
// that agree say the walk saw one stable chain. False when unreadable.
bool ReadTop(const PyLayout& l, uintptr_t tstate, uintptr_t* frame, uint64_t* instr);

// What a raw frame means.
struct FrameText {
  std::string file;
  std::string function;  // co_qualname where the version has one, else co_name
  int line = -1;
};
// Cold: reads the code object's strings and line table. False when they do
// not look like str/bytes objects.
bool ReadFrameText(const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out);

// ReadFrameText through SafeRead: for a frame of another thread, whose code
// object may be freed under the read.
bool ReadFrameTextSafe(const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out);

// A str object's text as UTF-8 (compact strings only), at most max_bytes.
bool ReadUnicode(const PyLayout& l, const PyTypes& t, uintptr_t str, std::string* out, size_t max_bytes = 4096);

}  // namespace prof::python
