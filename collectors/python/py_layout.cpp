#include "collectors/python/py_layout.h"

namespace prof::python {
const PyLayout* LayoutFor(int major, int minor) {
  if (major != 3) return nullptr;
  switch (minor) {
    case 10: return &kPy310;
    case 11: return &kPy311;
    case 12: return &kPy312;
    case 13: return &kPy313;
    default: return nullptr;
  }
}

}  // namespace prof::python
