// Fault injection for the fork tests (LD_PRELOAD before libprof): a
// dl_iterate_phdr that, called on libprof's agent thread, stays inside the
// real one (holding the loader's lock, as a thread preempted there on a
// loaded machine does) for SLOW_ITERATE_MS, after creating the file
// SLOW_ITERATE_MARK so the host knows when to fork. Other threads, and all
// threads without SLOW_ITERATE_MS, get the real call unchanged.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

using Callback = int (*)(dl_phdr_info*, size_t, void*);
using IterateFn = int (*)(Callback, void*);

struct Slowed {
  Callback callback;
  void* data;
  long ms;
  bool slept;
};

int SlowFirst(dl_phdr_info* info, size_t size, void* data) {
  auto* s = static_cast<Slowed*>(data);
  if (!s->slept) {
    s->slept = true;
    if (const char* mark = std::getenv("SLOW_ITERATE_MARK")) {
      int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd >= 0) close(fd);
    }
    timespec ts{s->ms / 1000, (s->ms % 1000) * 1'000'000};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  return s->callback(info, size, s->data);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int dl_iterate_phdr(Callback callback, void* data) {
  static IterateFn real = reinterpret_cast<IterateFn>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  const char* ms = std::getenv("SLOW_ITERATE_MS");
  char name[16] = "";
  pthread_getname_np(pthread_self(), name, sizeof(name));
  if (ms == nullptr || std::strcmp(name, "libprof-agent") != 0) return real(callback, data);
  Slowed slowed{callback, data, std::atol(ms), false};
  return real(SlowFirst, &slowed);
}
