#include "collectors/python/py_layout.h"

namespace prof::python {
namespace {

PyLayout Make310() {
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

PyLayout Make311() {
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

PyLayout Make312() {
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

PyLayout Make313() {
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

const PyLayout kLayouts[] = {Make310(), Make311(), Make312(), Make313()};

}  // namespace

const PyLayout* LayoutFor(int major, int minor) {
  if (major != 3) return nullptr;
  for (const PyLayout& l : kLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

}  // namespace prof::python
