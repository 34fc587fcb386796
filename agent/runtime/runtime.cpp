#include "agent/runtime/runtime.h"

#include "base/kernel_registry.h"

namespace prof {
namespace {
std::atomic<Runtime*> g_runtime{nullptr};
}  // namespace

Runtime* CurrentRuntime() { return g_runtime.load(std::memory_order_acquire); }
void InstallRuntime(Runtime* runtime) {
  // The kernel registry's verdicts were the previous runtime's PROF_STEP's.
  Kernels().ForgetVerdicts();
  g_runtime.store(runtime, std::memory_order_release);
}

}  // namespace prof
