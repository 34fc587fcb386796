#include "collectors/python/frame_walk.h"

#include <cstring>
#include <memory>
#include <vector>

#include "collectors/python/line_table.h"
#include "collectors/python/safe_read.h"

namespace prof::python {
namespace {

// How memory is read. Direct: plain loads, for the calling thread's own
// frames and objects they keep alive. Safe: every load a SafeRead (a system
// call that cannot fault), for memory another thread owns and may free; a
// failed read yields zeros and marks the whole read as failed.
struct DirectMem {
  template <typename T>
  T Load(uintptr_t base, int offset) {
    T v;
    std::memcpy(&v, reinterpret_cast<const void*>(base + static_cast<uintptr_t>(offset)), sizeof v);
    return v;
  }
  void Copy(uintptr_t from, void* to, size_t bytes) { std::memcpy(to, reinterpret_cast<const void*>(from), bytes); }
  static constexpr bool kSafe = false;
  bool failed = false;
};

struct SafeMem {
  template <typename T>
  T Load(uintptr_t base, int offset) {
    T v{};
    if (failed || !SafeRead(base + static_cast<uintptr_t>(offset), &v, sizeof v)) failed = true, v = T{};
    return v;
  }
  void Copy(uintptr_t from, void* to, size_t bytes) {
    if (failed || !SafeRead(from, to, bytes)) failed = true, std::memset(to, 0, bytes);
  }
  static constexpr bool kSafe = true;
  bool failed = false;
};

// A user-space, 8-byte aligned address above the zero page.
bool Plausible(uintptr_t p) { return p >= 4096 && p < (uintptr_t{1} << 56) && (p & 7) == 0; }

template <typename Mem>
bool IsCode(Mem& m, const PyLayout& l, const PyTypes& t, uintptr_t code) {
  return Plausible(code) && m.template Load<uintptr_t>(code, l.object_type) == t.code;
}

// The innermost frame pointer of a thread state (may be 0).
template <typename Mem>
uintptr_t FirstFrame(Mem& m, const PyLayout& l, uintptr_t tstate) {
  if (l.tstate_cframe >= 0) {
    auto cframe = m.template Load<uintptr_t>(tstate, l.tstate_cframe);
    if (!Plausible(cframe)) return 0;
    return m.template Load<uintptr_t>(cframe, l.cframe_current_frame);
  }
  return m.template Load<uintptr_t>(tstate, l.tstate_frame);
}

// Free-threaded builds: the first code unit of the bytecode copy a frame
// runs (thread-local bytecode index `index` > 0), or 0 when it cannot be
// read. The code object is alive (the frame holds a reference), but its
// co_tlbc array may be replaced by another thread that needs a larger one,
// which frees the old array once every *attached* thread has passed a
// quiescent point; the calling thread is detached while in a C call, so the
// array is read with SafeRead. A copy the thread runs stays in place while
// the thread holds its index, so a per-thread cache keyed by (code, array,
// index) spares the read; the caller checks the instruction lies inside the
// copy and asks again (fresh) when it does not.
struct TlbcEntry {
  uintptr_t code, array, base;
  int32_t index;
};
// On the heap: libprof.so's thread-locals live in the static TLS block,
// which a dlopen (CUDA_INJECTION64_PATH) finds only a few hundred bytes of.
thread_local std::unique_ptr<TlbcEntry[]> t_tlbc;

template <typename Mem>
uintptr_t TlbcBase(Mem& m, const PyLayout& l, uintptr_t code, int32_t index, bool fresh) {
  uintptr_t array;
  if constexpr (Mem::kSafe) {
    array = m.template Load<uintptr_t>(code, l.code_tlbc);
  } else {
    array = __atomic_load_n(reinterpret_cast<const uintptr_t*>(code + static_cast<uintptr_t>(l.code_tlbc)),
                            __ATOMIC_ACQUIRE);
  }
  if (!Plausible(array)) return 0;
  if (!t_tlbc) t_tlbc = std::make_unique<TlbcEntry[]>(64);
  TlbcEntry& e = t_tlbc[((code >> 4) ^ static_cast<uintptr_t>(index)) & 63];
  if (!fresh && e.code == code && e.array == array && e.index == index) return e.base;
  int64_t size = 0;
  uintptr_t base = 0;
  SafeSpan spans[2] = {
      {array + static_cast<uintptr_t>(l.code_array_size), &size, sizeof size},
      {array + static_cast<uintptr_t>(l.code_array_entries) + 8 * static_cast<uintptr_t>(index), &base, sizeof base}};
  if (index < 0 || !SafeRead(spans, 2) || index >= size || !Plausible(base)) return 0;
  e = {code, array, base, index};
  return base;
}

}  // namespace

namespace {

// The walk's body; inlined into one copy per supported layout, where `l` is
// a constant and each field an immediate.
template <typename Mem>
__attribute__((always_inline)) inline int Walk(Mem& m, const PyLayout& l, const PyTypes& t, uintptr_t tstate,
                                               RawFrame* out, int max) {
  if (!Plausible(tstate)) return -1;
  uintptr_t frame = FirstFrame(m, l, tstate);
  int n = 0;
  // Skipped frames (entry shims, frames still being set up) are few; the
  // bound only stops a cycle in corrupt memory.
  for (int visited = 0; frame != 0 && n < max && visited < 4 * max + 64; ++visited) {
    if (!Plausible(frame)) return -1;
    uintptr_t next = m.template Load<uintptr_t>(frame, l.frame_previous);
    if (l.frame_model == FrameModel::kFrameObject) {
      uintptr_t code = m.template Load<uintptr_t>(frame, l.frame_code);
      if (!IsCode(m, l, t, code)) return -1;
      out[n++] = {code, m.template Load<int32_t>(frame, l.frame_instr), m.template Load<int32_t>(code, l.code_firstlineno)};
      frame = next;
      continue;
    }
    auto owner = m.template Load<int8_t>(frame, l.frame_owner);
    if (l.owner_boundary >= 0 && owner >= l.owner_boundary) {  // an entry shim: no Python function
      frame = next;
      continue;
    }
    // 3.14+: a tagged stack reference; the pointer is the untagged bits.
    uintptr_t code = m.template Load<uintptr_t>(frame, l.frame_code) & ~l.executable_tag_bits;
    if (!IsCode(m, l, t, code)) {
      if (code == 0 || (code == t.none && t.none != 0)) {  // a frame running no code object
        frame = next;
        continue;
      }
      return -1;
    }
    uintptr_t instr = m.template Load<uintptr_t>(frame, l.frame_instr);
    uintptr_t first = code + static_cast<uintptr_t>(l.code_adaptive);
    auto units = m.template Load<int64_t>(code, l.code_size);
    int32_t tlbc = l.frame_tlbc_index >= 0 ? m.template Load<int32_t>(frame, l.frame_tlbc_index) : 0;
    if (tlbc != 0) {  // free-threaded: this thread runs its own copy of the bytecode
      first = TlbcBase(m, l, code, tlbc, false);
      if (first != 0 && (instr < first || instr >= first + 2 * static_cast<uintptr_t>(units))) {
        first = TlbcBase(m, l, code, tlbc, true);
      }
      if (first == 0) {  // the copy cannot be found: the frame, without its line
        out[n++] = {code, -1, m.template Load<int32_t>(code, l.code_firstlineno)};
        frame = next;
        continue;
      }
    }
    int64_t offset = (static_cast<int64_t>(instr) - static_cast<int64_t>(first)) / 2;
    // A frame being set up (before its first traceable instruction) is not
    // yet part of the stack, as the interpreter's own tracebacks say. Such a
    // frame is the newest one, or sits under code its setup ran (a __del__
    // run by the allocation of a generator): until the first frame kept,
    // every frame is checked; below it, only offsets within the first 64
    // code units are (a setup prologue is that short), which spares the
    // load for nearly every frame of a deep stack.
    if (owner != l.owner_generator && (n == 0 || offset < 64) &&
        offset < m.template Load<int32_t>(code, l.code_firsttraceable)) {
      frame = next;
      continue;
    }
    // The instruction pointer must lie inside the code object's own units.
    if (offset < 0 || offset >= units) return -1;
    out[n++] = {code, static_cast<int32_t>(offset), m.template Load<int32_t>(code, l.code_firstlineno)};
    frame = next;
  }
  return m.failed ? -1 : n;
}

template <const PyLayout& L>
int WalkFor(const PyTypes& t, uintptr_t tstate, RawFrame* out, int max) {
  DirectMem m;
  return Walk(m, L, t, tstate, out, max);
}

}  // namespace

int WalkFrames(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out, int max) {
  if (&l == &kPy310) return WalkFor<kPy310>(t, tstate, out, max);
  if (&l == &kPy311) return WalkFor<kPy311>(t, tstate, out, max);
  if (&l == &kPy312) return WalkFor<kPy312>(t, tstate, out, max);
  if (&l == &kPy313) return WalkFor<kPy313>(t, tstate, out, max);
  if (&l == &kPy314) return WalkFor<kPy314>(t, tstate, out, max);
  if (&l == &kPy314t) return WalkFor<kPy314t>(t, tstate, out, max);
  if (&l == &kPy315) return WalkFor<kPy315>(t, tstate, out, max);
  if (&l == &kPy315t) return WalkFor<kPy315t>(t, tstate, out, max);
  DirectMem m;
  return Walk(m, l, t, tstate, out, max);  // a layout built at run time (tests)
}

int WalkFramesSafe(const PyLayout& l, const PyTypes& t, uintptr_t tstate, RawFrame* out, int max) {
  SafeMem m;
  return Walk(m, l, t, tstate, out, max);
}

bool ReadTop(const PyLayout& l, uintptr_t tstate, uintptr_t* frame, uint64_t* instr) {
  SafeMem m;
  *frame = Plausible(tstate) ? FirstFrame(m, l, tstate) : 0;
  *instr = Plausible(*frame) ? m.Load<uint64_t>(*frame, l.frame_instr) : 0;
  return !m.failed;
}

namespace {

template <typename Mem>
bool ReadUnicodeWith(Mem& m, const PyLayout& l, const PyTypes& t, uintptr_t str, std::string* out, size_t max_bytes) {
  out->clear();
  if (!Plausible(str) || m.template Load<uintptr_t>(str, l.object_type) != t.unicode) return false;
  auto length = m.template Load<int64_t>(str, l.unicode_length);
  auto state = m.template Load<uint32_t>(str, l.unicode_state);
  unsigned kind = (state >> l.unicode_kind_bit) & 7;
  bool compact = (state >> l.unicode_compact_bit) & 1;
  bool ascii = (state >> l.unicode_ascii_bit) & 1;
  if (m.failed || !compact || length < 0) return false;
  size_t n = static_cast<size_t>(length);
  if (ascii) {
    n = n < max_bytes ? n : max_bytes;
    out->resize(n);
    m.Copy(str + static_cast<uintptr_t>(l.unicode_ascii_header), out->data(), n);
    return !m.failed;
  }
  if (kind != 1 && kind != 2 && kind != 4) return false;
  // The characters, copied once (at most as many as fit max_bytes as UTF-8).
  n = n < max_bytes ? n : max_bytes;
  std::vector<uint8_t> raw(n * kind);
  m.Copy(str + static_cast<uintptr_t>(l.unicode_compact_header), raw.data(), raw.size());
  if (m.failed) return false;
  DirectMem local;
  auto data = reinterpret_cast<uintptr_t>(raw.data());
  for (size_t i = 0; i < n && out->size() + 4 <= max_bytes; ++i) {
    uint32_t c = kind == 1 ? local.Load<uint8_t>(data, static_cast<int>(i))
                 : kind == 2 ? local.Load<uint16_t>(data, static_cast<int>(2 * i))
                             : local.Load<uint32_t>(data, static_cast<int>(4 * i));
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

template <typename Mem>
bool ReadFrameTextWith(Mem& m, const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out) {
  uintptr_t code = f.code;
  if (!IsCode(m, l, t, code)) return false;
  if (!ReadUnicodeWith(m, l, t, m.template Load<uintptr_t>(code, l.code_filename), &out->file, 4096)) return false;
  int name_at = l.code_qualname >= 0 ? l.code_qualname : l.code_name;
  if (!ReadUnicodeWith(m, l, t, m.template Load<uintptr_t>(code, name_at), &out->function, 4096)) return false;
  auto table = m.template Load<uintptr_t>(code, l.code_linetable);
  if (!Plausible(table) || m.template Load<uintptr_t>(table, l.object_type) != t.bytes) return false;
  auto size = m.template Load<int64_t>(table, l.bytes_size);
  if (m.failed || size < 0 || size > (int64_t{1} << 30)) return false;
  std::vector<uint8_t> copy;
  auto bytes = reinterpret_cast<const uint8_t*>(table + static_cast<uintptr_t>(l.bytes_data));
  if constexpr (Mem::kSafe) {  // another thread's code object: the table is copied first
    copy.resize(static_cast<size_t>(size));
    m.Copy(table + static_cast<uintptr_t>(l.bytes_data), copy.data(), copy.size());
    bytes = copy.data();
  }
  auto first_line = m.template Load<int32_t>(code, l.code_firstlineno);
  if (m.failed) return false;
  int byte_offset = f.instr < 0 ? -1 : f.instr * 2;
  // 3.10's f_lasti -1 (not started) and a free-threaded frame whose
  // bytecode copy could not be read: the function's first line.
  out->line = f.instr < 0 ? first_line
              : l.line_format == LineTableFormat::kPep626
                  ? LineForOffsetPep626(bytes, static_cast<size_t>(size), first_line, byte_offset)
                  : LineForOffsetLocation(bytes, static_cast<size_t>(size), first_line, byte_offset);
  return true;
}

}  // namespace

bool ReadUnicode(const PyLayout& l, const PyTypes& t, uintptr_t str, std::string* out, size_t max_bytes) {
  DirectMem m;
  return ReadUnicodeWith(m, l, t, str, out, max_bytes);
}

bool ReadFrameText(const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out) {
  DirectMem m;
  return ReadFrameTextWith(m, l, t, f, out);
}

bool ReadFrameTextSafe(const PyLayout& l, const PyTypes& t, const RawFrame& f, FrameText* out) {
  SafeMem m;
  return ReadFrameTextWith(m, l, t, f, out);
}

}  // namespace prof::python
