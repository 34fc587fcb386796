// Prints the CPython layout facts libprof reads (collectors/python/py_layout.h)
// from the headers it is compiled against: see scripts/python-layouts.sh.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_code.h"
#endif
#define P(name, expr) printf("%s %ld\n", name, (long)(expr))
int main(void) {
  printf("version %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
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
#if PY_VERSION_HEX >= 0x030c0000
  FRAME_OWNED_BY_CSTACK
#else
  -1
#endif
  );
  P("owner.generator", FRAME_OWNED_BY_GENERATOR);
#endif
  P("code.filename", offsetof(PyCodeObject, co_filename));
  P("code.name", offsetof(PyCodeObject, co_name));
  P("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
  P("code.linetable", offsetof(PyCodeObject, co_linetable));
  P("unicode.ascii_size", sizeof(PyASCIIObject));
  P("unicode.compact_size", sizeof(PyCompactUnicodeObject));
  P("unicode.length", offsetof(PyASCIIObject, length));
  P("unicode.state", offsetof(PyASCIIObject, state));
  P("bytes.size", offsetof(PyVarObject, ob_size));
  P("bytes.sval", offsetof(PyBytesObject, ob_sval));
  P("type.name", offsetof(PyTypeObject, tp_name));
  P("object.type", offsetof(PyObject, ob_type));
  return 0;
}
