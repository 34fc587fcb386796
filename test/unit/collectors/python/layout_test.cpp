// The per-version layout table (collectors/python/py_layout.cpp) against the
// offsets each version's own headers give (layouts/<version>.txt, printed by
// scripts/python-layouts.sh from the installed headers), and the frame walk
// on memory laid out from those header offsets, not from the table.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectors/python/frame_walk.h"
#include "collectors/python/py_layout.h"

namespace py = prof::python;

namespace {

std::map<std::string, long> Facts(const std::string& version) {
  std::ifstream in(std::string(PYTHON_TEST_DATA) + "/layouts/" + version + ".txt");
  REQUIRE(in);
  std::map<std::string, long> facts;
  std::string key, value;
  while (in >> key >> value) {
    if (key != "version") facts[key] = std::stol(value);
  }
  // Older printouts name the code object's ob_size only as bytes.size (both
  // are PyVarObject.ob_size).
  if (facts.count("code.size") == 0) facts["code.size"] = facts["bytes.size"];
  return facts;
}

// Zeroed, 16-byte aligned memory standing in for interpreter objects.
class Arena {
 public:
  uintptr_t Alloc(size_t bytes) {
    blocks_.emplace_back(new uint64_t[(bytes + 15) / 8 + 2]());
    return reinterpret_cast<uintptr_t>(blocks_.back().get());
  }
  template <typename T>
  static void Put(uintptr_t base, long offset, T value) {
    std::memcpy(reinterpret_cast<void*>(base + static_cast<uintptr_t>(offset)), &value, sizeof value);
  }

 private:
  std::vector<std::unique_ptr<uint64_t[]>> blocks_;
};

// A fake interpreter image built from one version's header facts.
struct Image {
  std::map<std::string, long> f;
  int minor;
  Arena arena;
  py::PyTypes types;

  bool ft;

  Image(const std::string& version, int m) : f(Facts(version)), minor(m), ft(version.back() == 't') {
    types.code = arena.Alloc(64);
    types.unicode = arena.Alloc(64);
    types.bytes = arena.Alloc(64);
    types.none = arena.Alloc(64);
  }

  uintptr_t Str(const std::string& text) {
    uintptr_t s = arena.Alloc(static_cast<size_t>(f["unicode.ascii_size"]) + text.size() + 1);
    Arena::Put<uintptr_t>(s, f["object.type"], types.unicode);
    Arena::Put<int64_t>(s, f["unicode.length"], static_cast<int64_t>(text.size()));
    // kind 1 (one byte per character), compact, ascii: where this build's headers put them.
    Arena::Put<uint32_t>(s, f["unicode.state"],
                         (1u << f["unicode.kind_bit"]) | (1u << f["unicode.compact_bit"]) | (1u << f["unicode.ascii_bit"]));
    std::memcpy(reinterpret_cast<void*>(s + static_cast<uintptr_t>(f["unicode.ascii_size"])), text.data(), text.size());
    return s;
  }

  // A code object of `units` code units whose line table maps every unit to
  // first_line + unit / 2 (location table) or the same in PEP 626 pairs.
  uintptr_t Code(const std::string& file, const std::string& name, int first_line, int units, int first_traceable = 0) {
    size_t size = static_cast<size_t>(minor >= 11 ? f["code.code_adaptive"] + 2 * units : 256);
    uintptr_t c = arena.Alloc(size);
    Arena::Put<uintptr_t>(c, f["object.type"], types.code);
    Arena::Put<uintptr_t>(c, f["code.filename"], Str(file));
    Arena::Put<uintptr_t>(c, f["code.name"], Str(name.substr(name.rfind('.') + 1)));
    if (minor >= 11) {
      Arena::Put<uintptr_t>(c, f["code.qualname"], Str(name));
      Arena::Put<int64_t>(c, f["code.size"], units);  // ob_size: code units
      Arena::Put<int32_t>(c, f["code.firsttraceable"], first_traceable);
    }
    Arena::Put<int32_t>(c, f["code.firstlineno"], first_line);
    std::vector<uint8_t> table;
    for (int u = 0; u < units; u += 2) {
      if (minor >= 11) table.push_back(static_cast<uint8_t>(0x80 | ((u == 0 ? 10 : 11) << 3) | 1));  // 2 units, +0/+1
      else table.insert(table.end(), {4, static_cast<uint8_t>(u == 0 ? 0 : 1)});                    // 4 bytes, +0/+1
    }
    uintptr_t b = arena.Alloc(static_cast<size_t>(f["bytes.sval"]) + table.size());
    Arena::Put<uintptr_t>(b, f["object.type"], types.bytes);
    Arena::Put<int64_t>(b, f["bytes.size"], static_cast<int64_t>(table.size()));
    std::memcpy(reinterpret_cast<void*>(b + static_cast<uintptr_t>(f["bytes.sval"])), table.data(), table.size());
    Arena::Put<uintptr_t>(c, f["code.linetable"], b);
    return c;
  }

  // 3.14+: f_executable as a tagged _PyStackRef (a deferred or
  // reference-counted bit set, as the interpreter stores code objects).
  uintptr_t Executable(uintptr_t code) const { return minor >= 14 ? code | 1 : code; }

  // A free-threaded frame running its thread's own copy of the bytecode:
  // the code object's co_tlbc array gets `index + 1` entries, entry 0 the
  // object's own co_code_adaptive, entry `index` a copy.
  uintptr_t CopyFor(uintptr_t code, int index, int units) {
    uintptr_t copy = arena.Alloc(static_cast<size_t>(2 * units));
    uintptr_t array = arena.Alloc(static_cast<size_t>(f["code_array.entries"] + 8 * (index + 1)));
    Arena::Put<int64_t>(array, f["code_array.size"], index + 1);
    Arena::Put<uintptr_t>(array, f["code_array.entries"], code + static_cast<uintptr_t>(f["code.code_adaptive"]));
    Arena::Put<uintptr_t>(array, f["code_array.entries"] + 8 * index, copy);
    Arena::Put<uintptr_t>(code, f["code.tlbc"], array);
    return copy;
  }

  // A frame running `code` at code unit `unit`, linked to `previous`.
  uintptr_t Frame(uintptr_t code, int unit, uintptr_t previous, int owner = 0) {
    uintptr_t fr = arena.Alloc(160);
    if (minor == 10) {
      Arena::Put<uintptr_t>(fr, f["frame.back"], previous);
      Arena::Put<uintptr_t>(fr, f["frame.code"], code);
      Arena::Put<int32_t>(fr, f["frame.lasti"], unit);
      return fr;
    }
    Arena::Put<uintptr_t>(fr, f["frame.previous"], previous);
    Arena::Put<uintptr_t>(fr, f["frame.code"], Executable(code));
    Arena::Put<uintptr_t>(fr, f["frame.instr"], code + static_cast<uintptr_t>(f["code.code_adaptive"] + 2 * unit));
    Arena::Put<int8_t>(fr, f["frame.owner"], static_cast<int8_t>(owner));
    return fr;
  }

  uintptr_t ThreadState(uintptr_t innermost) {
    uintptr_t ts = arena.Alloc(512);
    if (minor == 10) {
      Arena::Put<uintptr_t>(ts, f["tstate.frame"], innermost);
    } else if (minor <= 12) {
      uintptr_t cframe = arena.Alloc(64);
      Arena::Put<uintptr_t>(cframe, f["cframe.current_frame"], innermost);
      Arena::Put<uintptr_t>(ts, f["tstate.cframe"], cframe);
    } else {
      Arena::Put<uintptr_t>(ts, f["tstate.current_frame"], innermost);
    }
    return ts;
  }
};

// Per-version data: which offsets each CPython has, checked field by field.
void CheckTable(const std::string& version, int minor) {
  std::map<std::string, long> f = Facts(version);
  bool ft = version.back() == 't';
  const py::PyLayout* l = py::LayoutFor(3, minor, ft);
  REQUIRE(l != nullptr);
  if (minor == 10) {
    CHECK(l->tstate_frame == f["tstate.frame"]);
    CHECK(l->frame_previous == f["frame.back"]);
    CHECK(l->frame_instr == f["frame.lasti"]);
    CHECK(l->code_code == f["code.code"]);
  } else {
    if (minor <= 12) {
      CHECK(l->tstate_cframe == f["tstate.cframe"]);
      CHECK(l->cframe_current_frame == f["cframe.current_frame"]);
    } else {
      CHECK(l->tstate_cframe == -1);
      CHECK(l->tstate_frame == f["tstate.current_frame"]);
    }
    CHECK(l->frame_previous == f["frame.previous"]);
    CHECK(l->frame_instr == f["frame.instr"]);
    CHECK(l->frame_owner == f["frame.owner"]);
    // The first owner that is no Python function's frame: CSTACK on 3.12
    // and 3.13, INTERPRETER from 3.14 on (3.14's CSTACK lies above it).
    CHECK(l->owner_boundary == (minor >= 14 ? f["owner.interpreter"] : f["owner.cstack"]));
    if (minor == 14) CHECK(f["owner.cstack"] > f["owner.interpreter"]);
    CHECK(l->owner_generator == f["owner.generator"]);
    CHECK(l->executable_tag_bits == static_cast<uintptr_t>(minor >= 14 ? f["stackref.tag_bits"] : 0));
    CHECK(l->free_threaded == ft);
    if (ft) {
      CHECK(l->frame_tlbc_index == f["frame.tlbc_index"]);
      CHECK(l->code_tlbc == f["code.tlbc"]);
      CHECK(l->code_array_size == f["code_array.size"]);
      CHECK(l->code_array_entries == f["code_array.entries"]);
    } else {
      CHECK(l->frame_tlbc_index == -1);
    }
    CHECK(l->code_qualname == f["code.qualname"]);
    CHECK(l->code_firsttraceable == f["code.firsttraceable"]);
    CHECK(l->code_adaptive == f["code.code_adaptive"]);
    CHECK(l->code_size == f["code.size"]);  // PyVarObject.ob_size
  }
  CHECK(l->frame_code == f["frame.code"]);
  CHECK(l->code_filename == f["code.filename"]);
  CHECK(l->code_name == f["code.name"]);
  CHECK(l->code_firstlineno == f["code.firstlineno"]);
  CHECK(l->code_linetable == f["code.linetable"]);
  CHECK(l->unicode_ascii_header == f["unicode.ascii_size"]);
  CHECK(l->unicode_compact_header == f["unicode.compact_size"]);
  CHECK(l->unicode_length == f["unicode.length"]);
  CHECK(l->unicode_state == f["unicode.state"]);
  CHECK(l->unicode_kind_bit == f.at("unicode.kind_bit"));
  CHECK(l->unicode_compact_bit == f.at("unicode.compact_bit"));
  CHECK(l->unicode_ascii_bit == f.at("unicode.ascii_bit"));
  CHECK(l->bytes_size == f["bytes.size"]);
  CHECK(l->bytes_data == f["bytes.sval"]);
  CHECK(l->object_type == f["object.type"]);
  // What says another thread is out of the interpreter (backward attribution).
  CHECK(l->runtime_gil_locked == (f.count("runtime.gil_locked") ? f["runtime.gil_locked"] : -1));
  CHECK(l->runtime_gil_holder == (f.count("runtime.gil_holder") ? f["runtime.gil_holder"] : -1));
  CHECK(l->tstate_state == (f.count("tstate.state") ? f["tstate.state"] : -1));
  if (minor >= 13) CHECK(l->state_attached == f["thread.attached"]);
  if (minor == 11) CHECK(l->runtime_gil_locked >= 0);
  if (minor >= 13) CHECK(l->tstate_state >= 0);
  // Where the interpreter's _Py_DebugOffsets keeps each offset (3.13+).
  const auto& d = l->debug;
  if (minor < 13) {
    CHECK(d.version == -1);
    return;
  }
  CHECK(f["runtime.debug_offsets"] == 0);  // the first member of _PyRuntime
  const std::pair<int, const char*> positions[] = {
      {d.version, "version"}, {d.free_threaded, "free_threaded"},
      {d.current_frame, "thread_state.current_frame"},
      {d.frame_previous, "interpreter_frame.previous"}, {d.frame_executable, "interpreter_frame.executable"},
      {d.frame_instr_ptr, "interpreter_frame.instr_ptr"}, {d.frame_owner, "interpreter_frame.owner"},
      {d.code_filename, "code_object.filename"}, {d.code_name, "code_object.name"},
      {d.code_qualname, "code_object.qualname"}, {d.code_linetable, "code_object.linetable"},
      {d.code_firstlineno, "code_object.firstlineno"}, {d.code_adaptive, "code_object.co_code_adaptive"},
      {d.object_type, "pyobject.ob_type"}, {d.bytes_size, "bytes_object.ob_size"},
      {d.bytes_data, "bytes_object.ob_sval"}, {d.unicode_state, "unicode_object.state"},
      {d.unicode_length, "unicode_object.length"}, {d.unicode_ascii_size, "unicode_object.asciiobject_size"}};
  for (const auto& [position, name] : positions) {
    INFO(name);
    CHECK(position == f[std::string("debug.") + name]);
  }
  if (minor >= 14) {
    CHECK(d.frame_tlbc_index == f["debug.interpreter_frame.tlbc_index"]);
    CHECK(d.code_tlbc == f["debug.code_object.co_tlbc"]);
  } else {
    CHECK(d.frame_tlbc_index == -1);
    CHECK(d.code_tlbc == -1);
  }
}

// The _Py_DebugOffsets an interpreter of this version and build would hold,
// laid out from its header facts: positions and values both from the
// printout, the way _Py_DebugOffsets_INIT fills them in.
std::vector<uint8_t> DebugOffsetsImage(const std::string& version, int minor) {
  std::map<std::string, long> f = Facts(version);
  bool ft = version.back() == 't';
  std::vector<uint8_t> blob(1024, 0);
  auto put = [&](const std::string& position, uint64_t value) {
    REQUIRE(f.count("debug." + position) == 1);
    std::memcpy(blob.data() + f["debug." + position], &value, 8);
  };
  std::memcpy(blob.data(), "xdebugpy", 8);
  put("version", (uint64_t{3} << 24) | (static_cast<uint64_t>(minor) << 16) | 0x02F0);
  put("free_threaded", ft ? 1 : 0);
  put("thread_state.current_frame", static_cast<uint64_t>(f["tstate.current_frame"]));
  put("interpreter_frame.previous", static_cast<uint64_t>(f["frame.previous"]));
  put("interpreter_frame.executable", static_cast<uint64_t>(f["frame.code"]));
  put("interpreter_frame.instr_ptr", static_cast<uint64_t>(f["frame.instr"]));
  put("interpreter_frame.owner", static_cast<uint64_t>(f["frame.owner"]));
  if (minor >= 14) {
    put("interpreter_frame.tlbc_index", ft ? static_cast<uint64_t>(f["frame.tlbc_index"]) : 0);
    put("code_object.co_tlbc", ft ? static_cast<uint64_t>(f["code.tlbc"]) : 0);
  }
  put("code_object.filename", static_cast<uint64_t>(f["code.filename"]));
  put("code_object.name", static_cast<uint64_t>(f["code.name"]));
  put("code_object.qualname", static_cast<uint64_t>(f["code.qualname"]));
  put("code_object.linetable", static_cast<uint64_t>(f["code.linetable"]));
  put("code_object.firstlineno", static_cast<uint64_t>(f["code.firstlineno"]));
  put("code_object.co_code_adaptive", static_cast<uint64_t>(f["code.code_adaptive"]));
  put("pyobject.ob_type", static_cast<uint64_t>(f["object.type"]));
  put("bytes_object.ob_size", static_cast<uint64_t>(f["bytes.size"]));
  put("bytes_object.ob_sval", static_cast<uint64_t>(f["bytes.sval"]));
  put("unicode_object.state", static_cast<uint64_t>(f["unicode.state"]));
  put("unicode_object.length", static_cast<uint64_t>(f["unicode.length"]));
  put("unicode_object.asciiobject_size", static_cast<uint64_t>(f["unicode.ascii_size"]));
  return blob;
}

void CheckDebugOffsets(const std::string& version, int minor) {
  bool ft = version.back() == 't';
  const py::PyLayout& l = *py::LayoutFor(3, minor, ft);
  std::vector<uint8_t> blob = DebugOffsetsImage(version, minor);
  CHECK(py::DebugOffsetsMismatch(l, blob.data(), blob.size()).empty());
  // A moved field is named, and so is the other build or another version.
  std::vector<uint8_t> moved = blob;
  moved[static_cast<size_t>(l.debug.frame_owner)] += 2;
  CHECK(py::DebugOffsetsMismatch(l, moved.data(), moved.size()).find("interpreter_frame.owner") != std::string::npos);
  std::vector<uint8_t> other = blob;
  other[static_cast<size_t>(l.debug.free_threaded)] ^= 1;
  CHECK(py::DebugOffsetsMismatch(l, other.data(), other.size()).find("build") != std::string::npos);
  std::vector<uint8_t> newer = blob;
  newer[static_cast<size_t>(l.debug.version) + 2] += 1;  // the minor version byte
  CHECK(py::DebugOffsetsMismatch(l, newer.data(), newer.size()).find("describe CPython 3.") != std::string::npos);
  std::vector<uint8_t> none(1024, 0);
  CHECK(!py::DebugOffsetsMismatch(l, none.data(), none.size()).empty());
}

void CheckWalk(const std::string& version, int minor) {
  Image im(version, minor);
  const py::PyLayout& l = *py::LayoutFor(3, minor, im.ft);
  uintptr_t main_code = im.Code("/job/train.py", "main", 100, 40);
  uintptr_t step_code = im.Code("/job/train.py", "Trainer.step", 50, 20);
  uintptr_t loader = im.Code("/job/data.py", "batches", 10, 12);
  uintptr_t outer = im.Frame(main_code, 9, 0);                     // line 100 + 9/2 -> 104 (+1 per 2 units)
  uintptr_t mid = im.Frame(step_code, 4, outer);                    // line 52
  uintptr_t top = im.Frame(loader, 6, mid, minor >= 11 ? static_cast<int>(im.f["owner.generator"]) : 0);
  uintptr_t innermost = top;
  if (minor >= 12 && im.f["owner.cstack"] >= 0) {  // the entry shim (owned by the C stack) is skipped
    innermost = im.Frame(im.Code("<shim>", "<shim>", 1, 4), 0, top, static_cast<int>(im.f["owner.cstack"]));
  }
  if (minor >= 14) {  // 3.14+: the eval loop's entry frame, owned by the interpreter, runs None
    innermost = im.Frame(im.types.none, 0, innermost, static_cast<int>(im.f["owner.interpreter"]));
  }
  if (minor >= 11) {  // a frame still being set up (before its first traceable unit) is skipped
    innermost = im.Frame(im.Code("/job/train.py", "setup", 200, 8, /*first_traceable=*/3), 1, innermost);
  }
  uintptr_t ts = im.ThreadState(innermost);
  py::RawFrame raw[8];
  int n = py::WalkFrames(l, im.types, ts, raw, 8);
  REQUIRE(n == 3);
  const char* files[] = {"/job/data.py", "/job/train.py", "/job/train.py"};
  std::string functions[] = {"batches", minor >= 11 ? "Trainer.step" : "step", "main"};
  int lines[] = {13, 52, 104};
  for (int i = 0; i < 3; ++i) {
    py::FrameText text;
    REQUIRE(py::ReadFrameText(l, im.types, raw[i], &text));
    CHECK(text.file == files[i]);
    CHECK(text.function == functions[i]);
    CHECK(text.line == lines[i]);
  }
  // Depth limit keeps the innermost frames.
  CHECK(py::WalkFrames(l, im.types, ts, raw, 2) == 2);
  if (im.ft) {
    // A thread running its own copy of `Trainer.step` (thread-local
    // bytecode index 2): the offset is taken in that copy.
    uintptr_t copy = im.CopyFor(step_code, 2, 20);
    Arena::Put<int32_t>(mid, im.f["frame.tlbc_index"], 2);
    Arena::Put<uintptr_t>(mid, im.f["frame.instr"], copy + 2 * 8);  // unit 8: line 54
    REQUIRE(py::WalkFrames(l, im.types, ts, raw, 8) == 3);
    py::FrameText text;
    REQUIRE(py::ReadFrameText(l, im.types, raw[1], &text));
    CHECK(text.line == 54);
    // An index past the array (the copy cannot be found): the frame is kept
    // without its line, at the function's first line.
    Arena::Put<int32_t>(mid, im.f["frame.tlbc_index"], 5);
    REQUIRE(py::WalkFrames(l, im.types, ts, raw, 8) == 3);
    REQUIRE(py::ReadFrameText(l, im.types, raw[1], &text));
    CHECK(text.line == 50);
    Arena::Put<int32_t>(mid, im.f["frame.tlbc_index"], 0);
    Arena::Put<uintptr_t>(mid, im.f["frame.instr"], step_code + static_cast<uintptr_t>(im.f["code.code_adaptive"] + 8));
  }
  // A frame whose code is not a code object: the walk stops and says so.
  Arena::Put<uintptr_t>(mid, im.f["frame.code"], im.Executable(im.types.bytes));
  CHECK(py::WalkFrames(l, im.types, ts, raw, 8) == -1);
  // A thread state with no frame: no Python frames.
  CHECK(py::WalkFrames(l, im.types, im.ThreadState(0), raw, 8) == 0);
}

}  // namespace

TEST_CASE("the CPython 3.10 layout is the one 3.10's headers give, and a 3.10 stack walks") {
  CheckTable("3.10", 10);
  CheckWalk("3.10", 10);
}

TEST_CASE("the CPython 3.11 layout is the one 3.11's headers give, and a 3.11 stack walks") {
  CheckTable("3.11", 11);
  CheckWalk("3.11", 11);
}

TEST_CASE("the CPython 3.12 layout is the one 3.12's headers give, and a 3.12 stack walks") {
  CheckTable("3.12", 12);
  CheckWalk("3.12", 12);
}

TEST_CASE("the CPython 3.13 layout is the one 3.13's headers give, and a 3.13 stack walks") {
  CheckTable("3.13", 13);
  CheckWalk("3.13", 13);
}

TEST_CASE("the CPython 3.14 layout is the one 3.14's headers give, and a 3.14 stack walks") {
  CheckTable("3.14", 14);
  CheckWalk("3.14", 14);
  CheckDebugOffsets("3.14", 14);
}

TEST_CASE("the CPython 3.14t layout is the one 3.14's headers give a free-threaded build, and a 3.14t stack walks") {
  CheckTable("3.14t", 14);
  CheckWalk("3.14t", 14);
  CheckDebugOffsets("3.14t", 14);
}

TEST_CASE("the CPython 3.15 layout is the one 3.15's headers give, and a 3.15 stack walks") {
  CheckTable("3.15", 15);
  CheckWalk("3.15", 15);
  CheckDebugOffsets("3.15", 15);
}

TEST_CASE("the CPython 3.15t layout is the one 3.15's headers give a free-threaded build, and a 3.15t stack walks") {
  CheckTable("3.15t", 15);
  CheckWalk("3.15t", 15);
  CheckDebugOffsets("3.15t", 15);
}

TEST_CASE("the 3.13 debug offsets agree with the 3.13 table") { CheckDebugOffsets("3.13", 13); }

TEST_CASE("versions and builds outside the supported ones have no layout") {
  CHECK(py::LayoutFor(3, 9) == nullptr);
  CHECK(py::LayoutFor(3, 16) == nullptr);
  CHECK(py::LayoutFor(3, 13, /*free_threaded=*/true) == nullptr);
  CHECK(py::LayoutFor(2, 7) == nullptr);
}
