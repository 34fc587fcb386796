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

  Image(const std::string& version, int m) : f(Facts(version)), minor(m) {
    types.code = arena.Alloc(64);
    types.unicode = arena.Alloc(64);
    types.bytes = arena.Alloc(64);
    types.none = arena.Alloc(64);
  }

  uintptr_t Str(const std::string& text) {
    uintptr_t s = arena.Alloc(static_cast<size_t>(f["unicode.ascii_size"]) + text.size() + 1);
    Arena::Put<uintptr_t>(s, f["object.type"], types.unicode);
    Arena::Put<int64_t>(s, f["unicode.length"], static_cast<int64_t>(text.size()));
    Arena::Put<uint32_t>(s, f["unicode.state"], (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
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
      Arena::Put<int64_t>(c, f["bytes.size"], units);  // ob_size: code units
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
    Arena::Put<uintptr_t>(fr, f["frame.code"], code);
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

void CheckTable(const std::string& version, int minor) {
  std::map<std::string, long> f = Facts(version);
  const py::PyLayout* l = py::LayoutFor(3, minor);
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
    CHECK(l->owner_cstack == f["owner.cstack"]);
    CHECK(l->owner_generator == f["owner.generator"]);
    CHECK(l->code_qualname == f["code.qualname"]);
    CHECK(l->code_firsttraceable == f["code.firsttraceable"]);
    CHECK(l->code_adaptive == f["code.code_adaptive"]);
    CHECK(l->code_size == f["bytes.size"]);  // PyVarObject.ob_size
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
  CHECK(l->bytes_size == f["bytes.size"]);
  CHECK(l->bytes_data == f["bytes.sval"]);
  CHECK(l->object_type == f["object.type"]);
}

void CheckWalk(const std::string& version, int minor) {
  Image im(version, minor);
  const py::PyLayout& l = *py::LayoutFor(3, minor);
  uintptr_t main_code = im.Code("/job/train.py", "main", 100, 40);
  uintptr_t step_code = im.Code("/job/train.py", "Trainer.step", 50, 20);
  uintptr_t loader = im.Code("/job/data.py", "batches", 10, 12);
  uintptr_t outer = im.Frame(main_code, 9, 0);                     // line 100 + 9/2 -> 104 (+1 per 2 units)
  uintptr_t mid = im.Frame(step_code, 4, outer);                    // line 52
  uintptr_t top = im.Frame(loader, 6, mid, minor >= 11 ? static_cast<int>(im.f["owner.generator"]) : 0);
  uintptr_t innermost = top;
  if (minor >= 12) {  // the interpreter's entry shim (owned by the C stack) is skipped
    innermost = im.Frame(im.Code("<shim>", "<shim>", 1, 4), 0, top, static_cast<int>(im.f["owner.cstack"]));
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
  // A frame whose code is not a code object: the walk stops and says so.
  Arena::Put<uintptr_t>(mid, im.f["frame.code"], im.types.bytes);
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

TEST_CASE("versions outside 3.10-3.13 have no layout") {
  CHECK(py::LayoutFor(3, 9) == nullptr);
  CHECK(py::LayoutFor(3, 14) == nullptr);
  CHECK(py::LayoutFor(2, 7) == nullptr);
}
