#include "base/runtime_frames.h"

#include <dlfcn.h>
#include <unwind.h>

#include <cstdint>
#include <cstring>

namespace prof {
namespace {

struct StackScan {
  int frames = 0;
  bool runtime = false;
};

_Unwind_Reason_Code ScanFrame(_Unwind_Context* context, void* arg) {
  auto* scan = static_cast<StackScan*>(arg);
  uintptr_t pc = _Unwind_GetIP(context);
  Dl_info info;
  if (pc != 0 && dladdr(reinterpret_cast<void*>(pc - 1), &info) != 0 && info.dli_fname != nullptr) {
    const char* slash = std::strrchr(info.dli_fname, '/');
    if (std::strncmp(slash != nullptr ? slash + 1 : info.dli_fname, "libcudart", 9) == 0) {
      scan->runtime = true;
      return _URC_END_OF_STACK;
    }
  }
  return ++scan->frames < 64 ? _URC_NO_REASON : _URC_END_OF_STACK;
}

}  // namespace

bool RuntimeOnThisStack() {
  StackScan scan;
  _Unwind_Backtrace(ScanFrame, &scan);
  return scan.runtime;
}

}  // namespace prof
