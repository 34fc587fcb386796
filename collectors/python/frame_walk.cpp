#include "collectors/python/frame_walk.h"

#include <cstring>

#include "collectors/python/line_table.h"

namespace prof::python {
namespace {

template <typename T>
T Load(uintptr_t base, int offset) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(base + static_cast<uintptr_t>(offset)), sizeof v);
  return v;
}

// A user-space, 8-byte aligned address above the zero page.
bool Plausible(uintptr_t p) { return p >= 4096 && p < (uintptr_t{1} << 56) && (p & 7) == 0; }

bool IsCode(const PyLayout& l, const PyTypes& t, uintptr_t code) {
  return Plausible(code) && Load<uintptr_t>(code, l.object_type) == t.code;
}

// The innermost frame pointer of a thread state (may be 0).
uintptr_t FirstFrame(const PyLayout& l, uintptr_t tstate) {
  if (l.tstate_cframe >= 0) {
    uintptr_t cframe = Load<uintptr_t>(tstate, l.tstate_cframe);
    if (!Plausible(cframe)) return 0;
    return Load<uintptr_t>(cframe, l.cframe_current_frame);
  }
  return Load<uintptr_t>(tstate, l.tstate_frame);
}

}  // namespace

namespace {

// The walk's body; inlined into one copy per supported layout, where `l` is
// a constant and each field an immediate.
__attribute__((always_inline)) inline int Walk(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out,
                                               int max) {
  if (!Plausible(tstate)) return -1;
  uintptr_t frame = FirstFrame(l, tstate);
  int n = 0;
  // Skipped frames (entry shims, frames still being set up) are few; the
  // bound only stops a cycle in corrupt memory.
  for (int visited = 0; frame != 0 && n < max && visited < 4 * max + 64; ++visited) {
    if (!Plausible(frame)) return -1;
    uintptr_t next = Load<uintptr_t>(frame, l.frame_previous);
    if (l.frame_model == FrameModel::kFrameObject) {
      uintptr_t code = Load<uintptr_t>(frame, l.frame_code);
      if (!IsCode(l, t, code)) return -1;
      out[n++] = {code, Load<int32_t>(frame, l.frame_instr), Load<int32_t>(code, l.code_firstlineno)};
      frame = next;
      continue;
    }
    auto owner = Load<int8_t>(frame, l.frame_owner);
    if (owner == l.owner_cstack) {  // the interpreter's entry frame: no user code
      frame = next;
      continue;
    }
    uintptr_t code = Load<uintptr_t>(frame, l.frame_code);
    if (!IsCode(l, t, code)) {
      if (code == t.none && t.none != 0) {  // 3.13: a frame running no code object
        frame = next;
        continue;
      }
      return -1;
    }
    uintptr_t instr = Load<uintptr_t>(frame, l.frame_instr);
    uintptr_t first = code + static_cast<uintptr_t>(l.code_adaptive);
    int64_t offset = (static_cast<int64_t>(instr) - static_cast<int64_t>(first)) / 2;
    // A frame being set up (before its first traceable instruction) is not
    // yet part of the stack, as the interpreter's own tracebacks say. Such a
    // frame is the newest one, or sits under code its setup ran (a __del__
    // run by the allocation of a generator): until the first frame kept,
    // every frame is checked; below it, only offsets within the first 64
    // code units are (a setup prologue is that short), which spares the
    // load for nearly every frame of a deep stack.
    if (owner != l.owner_generator && (n == 0 || offset < 64) &&
        offset < Load<int32_t>(code, l.code_firsttraceable)) {
      frame = next;
      continue;
    }
    // The instruction pointer must lie inside the code object's own units.
    if (offset < 0 || offset >= Load<int64_t>(code, l.code_size)) return -1;
    out[n++] = {code, static_cast<int32_t>(offset), Load<int32_t>(code, l.code_firstlineno)};
    frame = next;
  }
  return n;
}

template <const PyLayout& L>
int WalkFor(const PyTypes& t, uintptr_t tstate, RawFrame* out, int max) {
  return Walk(L, t, tstate, out, max);
}

}  // namespace

int WalkFrames(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out, int max) {
  if (&l == &kPy310) return WalkFor<kPy310>(t, tstate, out, max);
  if (&l == &kPy311) return WalkFor<kPy311>(t, tstate, out, max);
  if (&l == &kPy312) return WalkFor<kPy312>(t, tstate, out, max);
  if (&l == &kPy313) return WalkFor<kPy313>(t, tstate, out, max);
  return Walk(l, t, tstate, out, max);  // a layout built at run time (none today)
}

bool ReadUnicode(const PyLayout& l, const PyTypes& t, uintptr_t str, std::string* out, size_t max_bytes) {
  out->clear();
  if (!Plausible(str) || Load<uintptr_t>(str, l.object_type) != t.unicode) return false;
  auto length = Load<int64_t>(str, l.unicode_length);
  uint32_t state = Load<uint32_t>(str, l.unicode_state);
  unsigned kind = (state >> 2) & 7;
  bool compact = (state >> 5) & 1;
  bool ascii = (state >> 6) & 1;
  if (!compact || length < 0) return false;
  size_t n = static_cast<size_t>(length);
  if (ascii) {
    n = n < max_bytes ? n : max_bytes;
    out->assign(reinterpret_cast<const char*>(str + static_cast<uintptr_t>(l.unicode_ascii_header)), n);
    return true;
  }
  if (kind != 1 && kind != 2 && kind != 4) return false;
  auto data = str + static_cast<uintptr_t>(l.unicode_compact_header);
  for (size_t i = 0; i < n && out->size() + 4 <= max_bytes; ++i) {
    uint32_t c = kind == 1 ? Load<uint8_t>(data, static_cast<int>(i))
                 : kind == 2 ? Load<uint16_t>(data, static_cast<int>(2 * i))
                             : Load<uint32_t>(data, static_cast<int>(4 * i));
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 63)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 63)));
      out->push_back(static_cast<char>(0x80 | (c & 63)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (c >> 18)));
      out->push_back(static_cast<char>(0x80 | ((c >> 12) & 63)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 63)));
      out->push_back(static_cast<char>(0x80 | (c & 63)));
    }
  }
  return true;
}

bool ReadFrameText(const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out) {
  uintptr_t code = f.code;
  if (!IsCode(l, t, code)) return false;
  if (!ReadUnicode(l, t, Load<uintptr_t>(code, l.code_filename), &out->file)) return false;
  int name_at = l.code_qualname >= 0 ? l.code_qualname : l.code_name;
  if (!ReadUnicode(l, t, Load<uintptr_t>(code, name_at), &out->function)) return false;
  uintptr_t table = Load<uintptr_t>(code, l.code_linetable);
  if (!Plausible(table) || Load<uintptr_t>(table, l.object_type) != t.bytes) return false;
  auto size = Load<int64_t>(table, l.bytes_size);
  if (size < 0 || size > (int64_t{1} << 30)) return false;
  auto bytes = reinterpret_cast<const uint8_t*>(table + static_cast<uintptr_t>(l.bytes_data));
  int first_line = Load<int32_t>(code, l.code_firstlineno);
  int byte_offset = f.instr < 0 ? -1 : f.instr * 2;
  out->line = l.line_format == LineTableFormat::kPep626
                  ? LineForOffsetPep626(bytes, static_cast<size_t>(size), first_line, byte_offset)
                  : LineForOffsetLocation(bytes, static_cast<size_t>(size), first_line, byte_offset);
  return true;
}

}  // namespace prof::python
