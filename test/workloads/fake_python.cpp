// A program that looks like a CPython interpreter to libprof's detection but
// is not one: it exports Py_GetVersion (answering $FAKE_PY_VERSION) and
// PyGILState_GetThisThreadState, then runs libctypes_workload.so's
// run_steps. The Python call-site tests use it for versions libprof does
// not support (3.9, a 3.13 free-threading build): the agent must log one
// line, record no stacks and change nothing else.
//   fake_python <libctypes_workload.so> <steps>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) const char* Py_GetVersion() {
  const char* v = std::getenv("FAKE_PY_VERSION");
  return v != nullptr ? v : "3.9.18 (main, fake)";
}

extern "C" __attribute__((visibility("default"))) void* PyGILState_GetThisThreadState() { return nullptr; }

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fake_python LIB STEPS\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  auto run_steps = reinterpret_cast<long long (*)(int)>(dlsym(lib, "run_steps"));
  long long result = run_steps(std::atoi(argv[2]));
  std::printf("run_steps = %lld\n", result);
  return result >= 0 ? 0 : 1;
}
