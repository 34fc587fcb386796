// Where CPython keeps what a stack walk reads, per supported minor version
// and build (3.10 through 3.15 default builds; 3.14t and 3.15t
// free-threaded builds; x86-64 and aarch64 Linux, no Py_TRACE_REFS, no
// Py_DEBUG). Every number is a fact taken from that version's own headers
// (Include/cpython/pystate.h, Include/internal/pycore_frame.h and
// pycore_interpframe_structs.h, Include/cpython/code.h,
// Include/cpython/unicodeobject.h, Include/internal/pycore_stackref.h,
// Include/internal/pycore_debug_offsets.h); scripts/python-layouts.sh prints
// them again from an installed interpreter's headers, and test/unit/collectors/python
// checks the table against those printouts
// (test/unit/collectors/python/layouts/<version>.txt).
//
// 3.13 and later describe their own layout in _PyRuntime.debug_offsets
// (_Py_DebugOffsets); `debug` says where that description keeps each offset
// the walk reads, so the running interpreter's own numbers are checked
// against the table before any frame is walked (DebugOffsetsMismatch).
//
// No CPython header is included anywhere in libprof: the agent is built
// once and meets whichever interpreter the host runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace prof::python {

// How a version chains its frames.
enum class FrameModel : uint8_t {
  kFrameObject,       // 3.10: PyThreadState.frame -> PyFrameObject, f_back, f_lasti
  kInterpreterFrame,  // 3.11+: _PyInterpreterFrame, previous, instruction pointer
};

// How co_linetable is encoded.
enum class LineTableFormat : uint8_t {
  kPep626,    // 3.10: (bytecode delta, line delta) byte pairs
  kLocation,  // 3.11+: PEP 657 location table
};

struct PyLayout {
  int minor = 0;  // 3.<minor>
  FrameModel frame_model = FrameModel::kInterpreterFrame;
  LineTableFormat line_format = LineTableFormat::kLocation;

  // PyThreadState -> the innermost frame. With a cframe (3.11, 3.12):
  // tstate + tstate_cframe is a _PyCFrame*, and its current_frame sits at
  // cframe_current_frame. Without (3.10 frame, 3.13 current_frame):
  // tstate_cframe < 0 and tstate_frame is the frame pointer's offset.
  int tstate_cframe = -1;
  int cframe_current_frame = -1;
  int tstate_frame = -1;

  // The frame.
  int frame_previous = 0;  // f_back (3.10) / previous
  int frame_code = 0;      // f_code (3.10-3.12) / f_executable (3.13)
  int frame_instr = 0;     // f_lasti int (3.10) / prev_instr (3.11, 3.12) / instr_ptr (3.13): a pointer
  int frame_owner = -1;    // char owner (3.11+)
  int owner_generator = 1; // FRAME_OWNED_BY_GENERATOR
  // The first owner value of frames that run no Python function: 3.12 and
  // 3.13's FRAME_OWNED_BY_CSTACK (the interpreter's entry shim, 3), 3.14
  // and 3.15's FRAME_OWNED_BY_INTERPRETER (3; 3.14 also has CSTACK, 4).
  // Frames with an owner at or above it are skipped, as CPython's own
  // _PyFrame_IsIncomplete does. -1: none (3.11).
  int owner_boundary = -1;
  // 3.14+: f_executable is a _PyStackRef whose low Py_TAG_BITS bits are
  // tags; the object pointer is bits & ~tag_bits. 0: a plain pointer.
  uintptr_t executable_tag_bits = 0;
  // Free-threaded builds (3.14t, 3.15t): each thread may run its own copy
  // of a code object's bytecode (thread-local bytecode). The frame's
  // int32 tlbc_index selects it from the code object's co_tlbc array
  // (_PyCodeArray: Py_ssize_t size, then char* entries[]); entry 0 is
  // co_code_adaptive itself. -1: not a free-threaded build.
  int frame_tlbc_index = -1;
  int code_tlbc = -1;
  int code_array_size = 0;
  int code_array_entries = 8;

  // The code object.
  int code_filename = 0;
  int code_name = 0;
  int code_qualname = -1;       // 3.11+
  int code_firstlineno = 0;     // int
  int code_linetable = 0;       // bytes
  int code_code = -1;           // 3.10: co_code bytes
  int code_adaptive = -1;       // 3.11+: first code unit, inline in the object
  int code_firsttraceable = -1; // 3.11+: int _co_firsttraceable
  int code_size = 16;           // ob_size: 3.11+ code units in the object

  // str: compact strings keep their characters right after the header.
  int unicode_length = 16;
  int unicode_state = 32;
  int unicode_ascii_header = 0;    // sizeof(PyASCIIObject)
  int unicode_compact_header = 0;  // sizeof(PyCompactUnicodeObject)
  // Bits of the state word: kind (3 bits), compact, ascii. A free-threaded
  // build keeps `interned` in a byte of its own, so they start at bit 8.
  int unicode_kind_bit = 2;
  int unicode_compact_bit = 5;
  int unicode_ascii_bit = 6;

  // bytes.
  int bytes_size = 16;
  int bytes_data = 32;

  int object_type = 8;  // ob_type

  bool free_threaded = false;

  // Whether another thread is out of the interpreter (in a C call, or
  // waiting to get back in), for calls made on its behalf (backward
  // attribution, python_stacks.h). 3.11: the GIL in _PyRuntime (locked,
  // last_holder); 3.13+: PyThreadState.state, _Py_THREAD_ATTACHED while the
  // thread may run Python. -1: not known for this version (3.10, 3.12).
  int runtime_gil_locked = -1;
  int runtime_gil_holder = -1;
  int tstate_state = -1;
  int state_attached = 1;

  // Where _Py_DebugOffsets (3.13+, the first member of _PyRuntime) keeps
  // each offset above: byte positions of its uint64 fields, per minor
  // version (the struct is the same in both builds of a version). -1: the
  // version has no such field (or no debug offsets at all: 3.10-3.12).
  struct DebugPositions {
    int version = -1;  // PY_VERSION_HEX
    int free_threaded = -1;
    int current_frame = -1;
    int frame_previous = -1, frame_executable = -1, frame_instr_ptr = -1, frame_owner = -1;
    int frame_tlbc_index = -1;
    int code_filename = -1, code_name = -1, code_qualname = -1, code_linetable = -1, code_firstlineno = -1;
    int code_adaptive = -1, code_tlbc = -1;
    int object_type = -1;
    int bytes_size = -1, bytes_data = -1;
    int unicode_state = -1, unicode_length = -1, unicode_ascii_size = -1;
  } debug;
};

namespace layouts {
// Per-version data, not logic: each Make* below is one CPython's offsets, from its headers.
constexpr PyLayout Make310() {
  PyLayout l;
  l.minor = 10;
  l.frame_model = FrameModel::kFrameObject;
  l.line_format = LineTableFormat::kPep626;
  l.tstate_frame = 24;  // PyThreadState.frame
  l.frame_previous = 24;  // PyFrameObject.f_back
  l.frame_code = 32;
  l.frame_instr = 96;  // int f_lasti, in code units
  l.code_filename = 104;
  l.code_name = 112;
  l.code_firstlineno = 40;
  l.code_linetable = 120;
  l.code_code = 48;
  l.unicode_ascii_header = 48;
  l.unicode_compact_header = 72;
  return l;
}

constexpr PyLayout Make311() {
  PyLayout l;
  l.minor = 11;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 8;  // after uint8_t use_tracing
  l.frame_previous = 48;
  l.frame_code = 32;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 69;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 72;
  l.code_linetable = 136;
  l.code_adaptive = 184;
  l.code_firsttraceable = 168;
  l.runtime_gil_locked = 376;
  l.runtime_gil_holder = 368;
  l.unicode_ascii_header = 48;
  l.unicode_compact_header = 72;
  return l;
}

constexpr PyLayout Make312() {
  PyLayout l;
  l.minor = 12;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 0;
  l.frame_previous = 8;
  l.frame_code = 0;
  l.frame_instr = 56;  // prev_instr
  l.frame_owner = 70;
  l.owner_boundary = 3;  // FRAME_OWNED_BY_CSTACK
  l.runtime_gil_locked = -1;  // 3.12 moved the GIL into the interpreter state
  l.runtime_gil_holder = -1;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_firstlineno = 68;
  l.code_linetable = 136;
  l.code_adaptive = 192;
  l.code_firsttraceable = 176;
  l.unicode_ascii_header = 40;
  l.unicode_compact_header = 56;
  return l;
}

constexpr PyLayout Make313() {
  PyLayout l = Make312();
  l.minor = 13;
  l.tstate_cframe = -1;
  l.cframe_current_frame = -1;
  l.tstate_frame = 72;  // PyThreadState.current_frame
  l.frame_code = 0;     // f_executable
  l.frame_instr = 56;   // instr_ptr: the current instruction, not the previous
  l.code_adaptive = 200;
  l.code_firsttraceable = 184;
  l.tstate_state = 40;
  auto& d = l.debug;
  d.version = 8;
  d.free_threaded = 16;
  d.current_frame = 184;
  d.frame_previous = 232;
  d.frame_executable = 240;
  d.frame_instr_ptr = 248;
  d.frame_owner = 264;
  d.code_filename = 280;
  d.code_name = 288;
  d.code_qualname = 296;
  d.code_linetable = 304;
  d.code_firstlineno = 312;
  d.code_adaptive = 344;
  d.object_type = 360;
  d.bytes_size = 520;
  d.bytes_data = 528;
  d.unicode_state = 544;
  d.unicode_length = 552;
  d.unicode_ascii_size = 560;
  return l;
}

// 3.14: frames from pycore_interpframe_structs.h (f_executable a tagged
// _PyStackRef, `stackpointer` after instr_ptr, owner after a uint16
// return_offset), owners THREAD 0, GENERATOR 1, FRAME_OBJECT 2,
// INTERPRETER 3, CSTACK 4; the code object gained _co_unique_id.
constexpr PyLayout Make314() {
  PyLayout l = Make313();
  l.minor = 14;
  l.frame_owner = 74;
  l.owner_boundary = 3;  // FRAME_OWNED_BY_INTERPRETER
  l.executable_tag_bits = 3;
  l.code_adaptive = 208;
  l.code_firsttraceable = 192;
  l.tstate_state = 44;
  auto& d = l.debug;
  d.current_frame = 208;
  d.frame_previous = 256;
  d.frame_executable = 264;
  d.frame_instr_ptr = 272;
  d.frame_owner = 288;
  d.frame_tlbc_index = 304;
  d.code_filename = 320;
  d.code_name = 328;
  d.code_qualname = 336;
  d.code_linetable = 344;
  d.code_firstlineno = 352;
  d.code_adaptive = 384;
  d.code_tlbc = 392;
  d.object_type = 408;
  d.bytes_size = 600;
  d.bytes_data = 608;
  d.unicode_state = 624;
  d.unicode_length = 632;
  d.unicode_ascii_size = 640;
  return l;
}

// A free-threaded build of a 3.14-layout version: PyObject's header is 32
// bytes (ob_tid, flags, mutex, gc bits, local and shared reference counts,
// then ob_type at 24), frames carry tlbc_index before return_offset, code
// objects carry co_tlbc before co_code_adaptive, and a str's `interned` is a
// byte of its own ahead of the state's bit fields.
constexpr PyLayout MakeFreeThreaded(PyLayout l) {
  l.free_threaded = true;
  l.object_type = 24;
  l.code_size = 32;
  l.bytes_size = 32;
  l.bytes_data = 48;
  l.unicode_length = 32;
  l.unicode_state = 48;
  l.unicode_ascii_header = 56;
  l.unicode_compact_header = 72;
  l.unicode_kind_bit = 8;
  l.unicode_compact_bit = 11;
  l.unicode_ascii_bit = 12;
  l.frame_owner = 78;
  l.frame_tlbc_index = 72;
  l.code_filename = 128;
  l.code_name = 136;
  l.code_qualname = 144;
  l.code_firstlineno = 84;
  l.code_linetable = 152;
  l.code_firsttraceable = 208;
  l.code_tlbc = 224;
  l.code_adaptive = 232;
  return l;
}

constexpr PyLayout Make314t() {
  PyLayout l = MakeFreeThreaded(Make314());
  l.executable_tag_bits = 1;  // 3.14t: Py_TAG_DEFERRED is the only tag bit
  return l;
}

// 3.15: the same frame and code object as 3.14; FRAME_OWNED_BY_CSTACK is
// gone (INTERPRETER 3 is the last owner) and both builds tag stack
// references with the same Py_TAG_BITS 3. _Py_DebugOffsets gained
// thread-state, type, heap-type and gc fields, which moves most positions.
constexpr PyLayout Make315() {
  PyLayout l = Make314();
  l.minor = 15;
  l.tstate_state = 48;
  auto& d = l.debug;
  d.frame_previous = 320;
  d.frame_executable = 328;
  d.frame_instr_ptr = 336;
  d.frame_owner = 352;
  d.frame_tlbc_index = 368;
  d.code_filename = 384;
  d.code_name = 392;
  d.code_qualname = 400;
  d.code_linetable = 408;
  d.code_firstlineno = 416;
  d.code_adaptive = 448;
  d.code_tlbc = 456;
  d.object_type = 472;
  d.bytes_size = 696;
  d.bytes_data = 704;
  d.unicode_state = 720;
  d.unicode_length = 728;
  d.unicode_ascii_size = 736;
  return l;
}

constexpr PyLayout Make315t() { return MakeFreeThreaded(Make315()); }

}  // namespace layouts

// The supported layouts, as constants: the walk is compiled once per layout
// (frame_walk.cpp), so every offset is an immediate.
inline constexpr PyLayout kPy310 = layouts::Make310();
inline constexpr PyLayout kPy311 = layouts::Make311();
inline constexpr PyLayout kPy312 = layouts::Make312();
inline constexpr PyLayout kPy313 = layouts::Make313();
inline constexpr PyLayout kPy314 = layouts::Make314();
inline constexpr PyLayout kPy314t = layouts::Make314t();
inline constexpr PyLayout kPy315 = layouts::Make315();
inline constexpr PyLayout kPy315t = layouts::Make315t();

// The layout of CPython 3.<minor> (its free-threaded build when
// free_threaded), or nullptr when that version and build is not supported.
const PyLayout* LayoutFor(int major, int minor, bool free_threaded = false);

// Checks the interpreter's own _Py_DebugOffsets (`offsets`: the first
// `size` bytes of _PyRuntime) against `l`: the cookie "xdebugpy", the
// version's major and minor, the build (free-threaded or not) and every
// offset the walk reads that the struct describes. Empty when all agree;
// otherwise one line naming the first difference. Versions before 3.13
// (no debug offsets) always agree.
std::string DebugOffsetsMismatch(const PyLayout& l, const uint8_t* offsets, size_t size);

}  // namespace prof::python
