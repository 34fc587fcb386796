/* libprof's C interface for programs that mark their own steps.
 *
 * With PROF_STEP=manual each prof_step() call ends the current step and starts
 * the next, as torch.profiler's prof.step() does. The program needs no link to
 * libprof: prof_step is declared weak, so without libprof it is NULL, and
 * libprof_step() below calls it only when libprof is in the process (loaded with
 * LD_PRELOAD, or through CUDA_INJECTION64_PATH, where it is not in the global
 * scope and is looked up by the path in that variable).
 *
 *   #include <libprof.h>
 *   for (...) { train_step(); libprof_step(); }
 *
 * Build with `-I<prefix>/include` (and -ldl on glibc older than 2.34). */
#ifndef LIBPROF_H_
#define LIBPROF_H_

#include <dlfcn.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported by libprof.so. */
void prof_step(void) __attribute__((weak));

/* prof_step() when libprof is loaded in this process, else nothing. Under
 * CUDA_INJECTION64_PATH libprof arrives with CUDA's initialization, so until it is
 * found each call looks again (a dlopen(RTLD_NOLOAD), about a microsecond); once
 * found, or with no such variable, the answer is kept. */
static inline void libprof_step(void) {
  static void (*step)(void) = 0;
  static int settled = 0;
  if (!settled) {
    step = prof_step;
    const char* path = getenv("CUDA_INJECTION64_PATH");
    if (step == 0 && path != 0 && path[0] != 0) {
      void* lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
      if (lib != 0) {
        step = (void (*)(void))dlsym(lib, "prof_step");
        dlclose(lib);
      }
    }
    settled = step != 0 || path == 0 || path[0] == 0;
  }
  if (step != 0) step();
}

#ifdef __cplusplus
}
#endif

#endif /* LIBPROF_H_ */
