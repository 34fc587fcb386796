// libprof-inject.so: what CUDA_INJECTION64_PATH (or NVTX_INJECTION64_PATH)
// may name instead of libprof.so, so that a libprof.so that cannot load says
// so. NVIDIA's driver, like NVTX, dlopens the injection path and, when that
// fails, carries on without a word: libprof never runs, so libprof cannot
// report it. This library is made to load wherever the driver itself runs:
// C, no thread-local, no constructor, no C++ runtime, only libc and libdl,
// and only the oldest symbol versions of the architecture (checked by
// test_library_surface.py). When the driver calls InitializeInjection it
// opens libprof.so from its own folder the way the driver would (RTLD_LOCAL)
// and forwards; if that fails, one line on stderr names the file and the
// loader's reason (an older glibc than libprof.so was built for, a missing
// libz.so.1, no static TLS left, a wrong file), and the process runs on,
// unprofiled, as it would have anyway. prof_step is forwarded too, so
// `dlsym(dlopen(getenv("CUDA_INJECTION64_PATH"), RTLD_NOLOAD), "prof_step")`
// keeps working (docs/steps.md).
#define _GNU_SOURCE  // dladdr, Dl_info
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

// The architecture's first versions of the dl* functions, which glibc 2.34
// moved from libdl into libc under new versions: bound to these, the library
// loads on an older glibc (found in libdl.so.2, a DT_NEEDED here) and on a
// newer one (found in libc).
#if defined(__x86_64__)
#define OLDEST_GLIBC_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define OLDEST_GLIBC_VERSION "GLIBC_2.17"
#endif
#ifdef OLDEST_GLIBC_VERSION
__asm__(".symver dlopen, dlopen@" OLDEST_GLIBC_VERSION);
__asm__(".symver dlsym, dlsym@" OLDEST_GLIBC_VERSION);
__asm__(".symver dlerror, dlerror@" OLDEST_GLIBC_VERSION);
__asm__(".symver dladdr, dladdr@" OLDEST_GLIBC_VERSION);
#endif

#define EXPORT __attribute__((visibility("default")))

typedef const void* (*GetExportTableFunc)(uint32_t);

// The loaded libprof.so and its prof_step, or null. Written by whichever
// entry point comes first (dlopen returns the same handle to a second caller).
static void* g_agent;
static void (*g_step)(void);
static int g_reported;

// One line to stderr with write(): no stdio buffer, no locale, no allocation.
static void Say(const char* how, const char* path, const char* why) {
  if (__atomic_exchange_n(&g_reported, 1, __ATOMIC_ACQ_REL)) return;
  const char* parts[] = {"[libprof] error: ", how, ": ", path, " cannot be loaded (", why,
                         "); this process is not profiled\n"};
  for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); ++i) {
    size_t n = strlen(parts[i]);
    const char* p = parts[i];
    while (n > 0) {
      ssize_t w = write(STDERR_FILENO, p, n);
      if (w <= 0) return;
      p += w;
      n -= (size_t)w;
    }
  }
}

// libprof.so from this library's folder, or null (said once on stderr).
static void* Agent(const char* how) {
  void* agent = __atomic_load_n(&g_agent, __ATOMIC_ACQUIRE);
  if (agent != NULL) return agent;
  static const char kName[] = "libprof.so";
  char path[4096];
  Dl_info self;
  if (dladdr((void*)&Agent, &self) == 0 || self.dli_fname == NULL) {
    Say(how, kName, "libprof-inject.so cannot find its own folder");
    return NULL;
  }
  size_t dir = 0;
  for (size_t i = 0; self.dli_fname[i] != '\0'; ++i) {
    if (self.dli_fname[i] == '/') dir = i + 1;
  }
  if (dir + sizeof(kName) > sizeof(path)) {
    Say(how, self.dli_fname, "its folder's path is too long");
    return NULL;
  }
  for (size_t i = 0; i < dir; ++i) path[i] = self.dli_fname[i];
  for (size_t i = 0; i < sizeof(kName); ++i) path[dir + i] = kName[i];
  agent = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (agent == NULL) {
    const char* why = dlerror();
    Say(how, path, why != NULL ? why : "dlopen failed");
    return NULL;
  }
  __atomic_store_n(&g_step, (void (*)(void))dlsym(agent, "prof_step"), __ATOMIC_RELEASE);
  __atomic_store_n(&g_agent, agent, __ATOMIC_RELEASE);
  return agent;
}

EXPORT int InitializeInjection(void) {
  void* agent = Agent("CUDA_INJECTION64_PATH");
  if (agent == NULL) return 0;
  int (*init)(void) = (int (*)(void))dlsym(agent, "InitializeInjection");
  return init != NULL ? init() : 0;
}

EXPORT int InitializeInjectionNvtx2(GetExportTableFunc get_export_table) {
  void* agent = Agent("NVTX_INJECTION64_PATH");
  if (agent == NULL) return 0;
  int (*init)(GetExportTableFunc) = (int (*)(GetExportTableFunc))dlsym(agent, "InitializeInjectionNvtx2");
  return init != NULL ? init(get_export_table) : 0;
}

// PROF_STEP=manual through the injection path's handle. Before libprof is
// loaded (CUDA not initialised yet) there is no step to mark.
EXPORT void prof_step(void) {
  void (*step)(void) = __atomic_load_n(&g_step, __ATOMIC_ACQUIRE);
  if (step != NULL) step();
}
