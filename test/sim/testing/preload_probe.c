/* A stand-in for a profiler that interposes cuGetProcAddress_v2 with
   LD_PRELOAD and nothing else: it reports each call on stderr and forwards
   to the loaded driver. Tests use it to show that the simulated runtime,
   like NVIDIA's, obtains cuGetProcAddress_v2 from the driver's own handle
   (dlsym on the dlopen'ed libcuda.so.1), so such an interposer sees none of
   the runtime's lookups. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

typedef int (*GetProcAddressFn)(const char*, void**, int, unsigned long long, int*);

__attribute__((visibility("default"))) int cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                                               unsigned long long flags, int* status) {
  static GetProcAddressFn real;
  if (!real) {
    /* The driver may be loaded RTLD_LOCAL: find it by name, not RTLD_NEXT. */
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (driver) real = (GetProcAddressFn)dlsym(driver, "cuGetProcAddress_v2");
  }
  fprintf(stderr, "PROBE cuGetProcAddress_v2 %s\n", symbol ? symbol : "(null)");
  return real ? real(symbol, pfn, version, flags, status) : 500; /* CUDA_ERROR_NOT_FOUND */
}
