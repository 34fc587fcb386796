#include "collectors/python/py_layout.h"

#include <cstring>

namespace prof::python {
const PyLayout* LayoutFor(int major, int minor, bool free_threaded) {
  if (major != 3) return nullptr;
  if (free_threaded) {
    switch (minor) {
      case 14: return &kPy314t;
      case 15: return &kPy315t;
      default: return nullptr;  // 3.13t: frames differ (no tlbc_index), not supported
    }
  }
  switch (minor) {
    case 10: return &kPy310;
    case 11: return &kPy311;
    case 12: return &kPy312;
    case 13: return &kPy313;
    case 14: return &kPy314;
    case 15: return &kPy315;
    default: return nullptr;
  }
}

std::string DebugOffsetsMismatch(const PyLayout& l, const uint8_t* offsets, size_t size) {
  const PyLayout::DebugPositions& d = l.debug;
  if (d.version < 0) return {};
  if (offsets == nullptr || size < 24 || std::memcmp(offsets, "xdebugpy", 8) != 0) {
    return "_PyRuntime does not start with the \"xdebugpy\" debug offsets";
  }
  auto field = [&](int position, uint64_t* out) {
    if (position < 0 || static_cast<size_t>(position) + 8 > size) return false;
    std::memcpy(out, offsets + position, 8);
    return true;
  };
  uint64_t version = 0, free_threaded = 0;
  field(d.version, &version);
  field(d.free_threaded, &free_threaded);
  int major = static_cast<int>((version >> 24) & 0xFF), minor = static_cast<int>((version >> 16) & 0xFF);
  if (major != 3 || minor != l.minor) {
    return "its debug offsets describe CPython " + std::to_string(major) + "." + std::to_string(minor);
  }
  if ((free_threaded != 0) != l.free_threaded) {
    return std::string("its debug offsets describe a ") + (free_threaded != 0 ? "free-threaded" : "default") + " build";
  }
  struct Check {
    const char* name;
    int position;
    int expected;
  };
  // Data, not logic: one row per offset that both _Py_DebugOffsets and the layout give.
  const Check checks[] = {
      {"thread_state.current_frame", d.current_frame, l.tstate_frame},
      {"interpreter_frame.previous", d.frame_previous, l.frame_previous},
      {"interpreter_frame.executable", d.frame_executable, l.frame_code},
      {"interpreter_frame.instr_ptr", d.frame_instr_ptr, l.frame_instr},
      {"interpreter_frame.owner", d.frame_owner, l.frame_owner},
      {"interpreter_frame.tlbc_index", d.frame_tlbc_index, l.free_threaded ? l.frame_tlbc_index : 0},
      {"code_object.filename", d.code_filename, l.code_filename},
      {"code_object.name", d.code_name, l.code_name},
      {"code_object.qualname", d.code_qualname, l.code_qualname},
      {"code_object.linetable", d.code_linetable, l.code_linetable},
      {"code_object.firstlineno", d.code_firstlineno, l.code_firstlineno},
      {"code_object.co_code_adaptive", d.code_adaptive, l.code_adaptive},
      {"code_object.co_tlbc", d.code_tlbc, l.free_threaded ? l.code_tlbc : 0},
      {"pyobject.ob_type", d.object_type, l.object_type},
      {"bytes_object.ob_size", d.bytes_size, l.bytes_size},
      {"bytes_object.ob_sval", d.bytes_data, l.bytes_data},
      {"unicode_object.state", d.unicode_state, l.unicode_state},
      {"unicode_object.length", d.unicode_length, l.unicode_length},
      {"unicode_object.asciiobject_size", d.unicode_ascii_size, l.unicode_ascii_header},
  };
  for (const Check& c : checks) {
    if (c.position < 0) continue;
    uint64_t value = 0;
    if (!field(c.position, &value)) return std::string("its debug offsets end before ") + c.name;
    if (value != static_cast<uint64_t>(c.expected)) {
      return std::string("its debug offsets put ") + c.name + " at " + std::to_string(value) + ", libprof expects " +
             std::to_string(c.expected);
    }
  }
  return {};
}

}  // namespace prof::python
