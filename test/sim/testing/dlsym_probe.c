/* A stand-in for a profiler that sees the runtime's driver lookups the way
   that works against NVIDIA's runtime: interpose dlsym, wrap the
   cuGetProcAddress_v2 it hands out, and wrap what cuGetProcAddress returns
   for "cuGetProcAddress" (the runtime's bootstrap). Reports every lookup on
   stderr as "LOOKUP <symbol> <version> <flags> -> <result>". Only lookups
   through a library handle are interposed, so RTLD_NEXT/RTLD_DEFAULT callers
   keep their semantics. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*GetProcAddressFn)(const char*, void**, int, unsigned long long, int*);
typedef void* (*DlsymFn)(void*, const char*);

static GetProcAddressFn g_real_get_proc;

static int WrappedGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags,
                                 int* status) {
  int result = g_real_get_proc(symbol, pfn, version, flags, status);
  fprintf(stderr, "LOOKUP %s %d %llu -> %d\n", symbol ? symbol : "(null)", version, flags, result);
  if (result == 0 && symbol && strcmp(symbol, "cuGetProcAddress") == 0 && version >= 12000) {
    *pfn = (void*)&WrappedGetProcAddress;
  }
  return result;
}

static DlsymFn RealDlsym(void) {
  static DlsymFn real;
  if (!real) real = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real) real = (DlsymFn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return real;
}

__attribute__((visibility("default"))) void* dlsym(void* handle, const char* name) {
  void* found = RealDlsym()(handle, name);
  if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || !found || !name) return found;
  if (strcmp(name, "cuGetProcAddress_v2") == 0) {
    fprintf(stderr, "DLSYM %s\n", name);
    g_real_get_proc = (GetProcAddressFn)found;
    return (void*)&WrappedGetProcAddress;
  }
  return found;
}
