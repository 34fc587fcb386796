/* A host whose wall clock is off: preloaded (LD_PRELOAD), it adds
   SIM_REALTIME_OFFSET_NS (a signed integer, ns) to every CLOCK_REALTIME and
   CLOCK_REALTIME_COARSE reading made through clock_gettime, and leaves the
   other clocks alone. Ranks of a simulated job on one machine share one
   wall clock; hosts of a real job disagree by their NTP error. Tests run
   each rank with its own offset to check that `prof merge` finds it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

typedef int (*ClockGettimeFn)(clockid_t, struct timespec*);

static long long Offset(void) {
  static int read;
  static long long offset;
  if (!read) {
    const char* v = getenv("SIM_REALTIME_OFFSET_NS");
    offset = v ? strtoll(v, NULL, 10) : 0;
    read = 1;
  }
  return offset;
}

__attribute__((visibility("default"))) int clock_gettime(clockid_t clock, struct timespec* ts) {
  static ClockGettimeFn real;
  if (!real) real = (ClockGettimeFn)dlsym(RTLD_NEXT, "clock_gettime");
  int r = real(clock, ts);
  if (r != 0 || (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE)) return r;
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + Offset();
  ts->tv_sec = ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1000000000LL;
    ts->tv_sec -= 1;
  }
  return r;
}
