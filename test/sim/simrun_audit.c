/* The loader's audit interface (rtld-audit(7)), for simrun: every search for
 * a library the sim provides — by soname (DT_NEEDED, dlopen("libcublas.so.13"))
 * or by a path to another copy of it (PyTorch's import dlopens NVIDIA's wheel
 * files by full path) — is answered with the sim's file, which is the one
 * simrun preloaded, so the loader hands back that copy instead of mapping a
 * second one beside it. Other searches are left alone. It lives in the sim's
 * library folder and takes the folder from its own path. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char* const kSonames[] = {
    "libcuda.so.1",      "libcudart.so.13",   "libcupti.so.13", "libnccl.so.2",
    "libcublasLt.so.13", "libcublas.so.13",   "libcudnn.so.9",
};
enum { kCount = sizeof(kSonames) / sizeof(kSonames[0]) };
static char g_paths[kCount][4096]; /* "" where the sim has no such file */

unsigned int la_version(unsigned int version) {
  Dl_info self;
  if (dladdr((void*)&la_version, &self) && self.dli_fname) {
    const char* slash = strrchr(self.dli_fname, '/');
    int dir_len = slash ? (int)(slash - self.dli_fname) : 0;
    for (int i = 0; i < kCount; ++i) {
      snprintf(g_paths[i], sizeof(g_paths[i]), "%.*s/%s", dir_len, self.dli_fname, kSonames[i]);
      if (access(g_paths[i], R_OK) != 0) g_paths[i][0] = '\0';
    }
  }
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

char* la_objsearch(const char* name, uintptr_t* cookie, unsigned int flag) {
  (void)cookie;
  if (flag != LA_SER_ORIG || name == NULL) return (char*)name;
  const char* slash = strrchr(name, '/');
  const char* base = slash ? slash + 1 : name;
  for (int i = 0; i < kCount; ++i) {
    if (g_paths[i][0] != '\0' && strcmp(base, kSonames[i]) == 0) return g_paths[i];
  }
  return (char*)name;
}
