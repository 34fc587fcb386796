// Where CPython keeps what a stack walk reads, per supported minor version
// (3.10 through 3.13, x86-64 and aarch64 Linux, default build: no
// free-threading, no Py_TRACE_REFS). Every number is a fact taken from that
// version's own headers (Include/cpython/pystate.h, Include/internal/
// pycore_frame.h, Include/cpython/code.h, Include/cpython/unicodeobject.h);
// scripts/python-layouts.sh prints them again from an installed
// interpreter's headers, and test/unit/python checks the table against
// those printouts (test/unit/python/layouts/<version>.txt).
//
// No CPython header is included anywhere in libprof: the agent is built
// once and meets whichever interpreter the host runs.
#pragma once

#include <cstdint>

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
  int owner_cstack = -1;   // FRAME_OWNED_BY_CSTACK (3.12+): the interpreter's entry shim, not user code

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

  // bytes.
  int bytes_size = 16;
  int bytes_data = 32;

  int object_type = 8;  // ob_type
};

namespace layouts {
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
  l.owner_cstack = 3;
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
  return l;
}

}  // namespace layouts

// The supported layouts, as constants: the walk is compiled once per layout
// (frame_walk.cpp), so every offset is an immediate.
inline constexpr PyLayout kPy310 = layouts::Make310();
inline constexpr PyLayout kPy311 = layouts::Make311();
inline constexpr PyLayout kPy312 = layouts::Make312();
inline constexpr PyLayout kPy313 = layouts::Make313();

// The layout of CPython 3.<minor>, or nullptr when that version is not
// supported.
const PyLayout* LayoutFor(int major, int minor);

}  // namespace prof::python
