// Prints the CPython layout facts libprof reads (collectors/python/py_layout.h)
// from the headers it is compiled against: see scripts/python-layouts.sh.
// Compiled with -DPy_GIL_DISABLED=1 it prints the free-threaded build's
// layout from the same headers (their Py_GIL_DISABLED arms).
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_code.h"
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_runtime.h"
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include "internal/pycore_pystate.h"
#endif
#if PY_VERSION_HEX >= 0x030e0000
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_stackref.h"
#endif
#define P(name, expr) printf("%s %ld\n", name, (long)(expr))
#define D(name, member) printf("debug.%s %ld\n", name, (long)offsetof(_Py_DebugOffsets, member))
// The bit a str's state field sets in its first 32-bit word (the state's
// fields are bit fields; a free-threaded build keeps `interned` in a byte
// of its own, which moves the others up by 8).
#define STATE_BIT(name, field)                 \
  do {                                         \
    PyASCIIObject s;                           \
    unsigned int word;                         \
    memset(&s, 0, sizeof s);                   \
    s.state.field = 1;                         \
    memcpy(&word, &s.state, sizeof word);      \
    P(name, __builtin_ctz(word));              \
  } while (0)
int main(void) {
#ifdef Py_GIL_DISABLED
  printf("version %d.%dt\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
#else
  printf("version %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
#endif
  // Per-version data, not logic: each branch prints one CPython's offsets.
#if PY_VERSION_HEX < 0x030b0000
  P("tstate.frame", offsetof(PyThreadState, frame));
  P("frame.back", offsetof(PyFrameObject, f_back));
  P("frame.code", offsetof(PyFrameObject, f_code));
  P("frame.lasti", offsetof(PyFrameObject, f_lasti));
  P("code.code", offsetof(PyCodeObject, co_code));
#else
#if PY_VERSION_HEX < 0x030d0000
  P("tstate.cframe", offsetof(PyThreadState, cframe));
  P("cframe.current_frame", offsetof(_PyCFrame, current_frame));
  P("frame.code", offsetof(_PyInterpreterFrame, f_code));
  P("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
  P("tstate.current_frame", offsetof(PyThreadState, current_frame));
  P("frame.code", offsetof(_PyInterpreterFrame, f_executable));
  P("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
  P("frame.previous", offsetof(_PyInterpreterFrame, previous));
  P("frame.owner", offsetof(_PyInterpreterFrame, owner));
  P("frame.localsplus", offsetof(_PyInterpreterFrame, localsplus));
  P("code.qualname", offsetof(PyCodeObject, co_qualname));
  P("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
  P("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
  P("owner.cstack", (int)
#if PY_VERSION_HEX >= 0x030c0000 && PY_VERSION_HEX < 0x030f0000
  FRAME_OWNED_BY_CSTACK
#else
  -1
#endif
  );
  P("owner.generator", FRAME_OWNED_BY_GENERATOR);
#endif
#if PY_VERSION_HEX >= 0x030e0000
  // 3.14: f_executable is a _PyStackRef whose low bits are tags; the first
  // owner value that is no Python function's frame.
  P("owner.interpreter", FRAME_OWNED_BY_INTERPRETER);
  P("stackref.tag_bits", Py_TAG_BITS);
#ifdef Py_GIL_DISABLED
  P("frame.tlbc_index", offsetof(_PyInterpreterFrame, tlbc_index));
  P("code.tlbc", offsetof(PyCodeObject, co_tlbc));
  P("code_array.size", offsetof(_PyCodeArray, size));
  P("code_array.entries", offsetof(_PyCodeArray, entries));
#endif
#endif
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("code.size", offsetof(PyVarObject, ob_size));
  P("unicode.ascii_size", sizeof(PyASCIIObject));
  P("unicode.compact_size", sizeof(PyCompactUnicodeObject));
  P("unicode.length", offsetof(PyASCIIObject, length));
  P("unicode.state", offsetof(PyASCIIObject, state));
  STATE_BIT("unicode.kind_bit", kind);
  STATE_BIT("unicode.compact_bit", compact);
  STATE_BIT("unicode.ascii_bit", ascii);
  P("bytes.size", offsetof(PyVarObject, ob_size));
  P("bytes.sval", offsetof(PyBytesObject, ob_sval));
  P("type.name", offsetof(PyTypeObject, tp_name));
  // Whether another thread is out of the interpreter (in a C call or
  // waiting for the GIL): 3.11's GIL, 3.13+'s thread state.
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
  P("runtime.gil_locked", offsetof(_PyRuntimeState, ceval.gil.locked));
  P("runtime.gil_holder", offsetof(_PyRuntimeState, ceval.gil.last_holder));
#endif
#if PY_VERSION_HEX >= 0x030d0000
  P("tstate.state", offsetof(PyThreadState, state));
  P("thread.attached", _Py_THREAD_ATTACHED);
#endif
  P("object.type", offsetof(PyObject, ob_type));
#if PY_VERSION_HEX >= 0x030d0000
  // Where the interpreter's own description of these offsets
  // (_PyRuntime.debug_offsets) keeps each one.
  P("runtime.debug_offsets", offsetof(_PyRuntimeState, debug_offsets));
  D("version", version);
  D("free_threaded", free_threaded);
  D("thread_state.current_frame", thread_state.current_frame);
  D("interpreter_frame.previous", interpreter_frame.previous);
  D("interpreter_frame.executable", interpreter_frame.executable);
  D("interpreter_frame.instr_ptr", interpreter_frame.instr_ptr);
  D("interpreter_frame.owner", interpreter_frame.owner);
#if PY_VERSION_HEX >= 0x030e0000
  D("interpreter_frame.tlbc_index", interpreter_frame.tlbc_index);
  D("code_object.co_tlbc", code_object.co_tlbc);
#endif
  D("code_object.filename", code_object.filename);
  D("code_object.name", code_object.name);
  D("code_object.qualname", code_object.qualname);
  D("code_object.linetable", code_object.linetable);
  D("code_object.firstlineno", code_object.firstlineno);
  D("code_object.co_code_adaptive", code_object.co_code_adaptive);
  D("pyobject.ob_type", pyobject.ob_type);
  D("bytes_object.ob_size", bytes_object.ob_size);
  D("bytes_object.ob_sval", bytes_object.ob_sval);
  D("unicode_object.state", unicode_object.state);
  D("unicode_object.length", unicode_object.length);
  D("unicode_object.asciiobject_size", unicode_object.asciiobject_size);
#endif
  return 0;
}
