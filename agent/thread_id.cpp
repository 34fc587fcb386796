#include "agent/thread_id.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace prof {
namespace {
std::atomic<uint32_t> g_generation{1};
thread_local uint32_t t_tid = 0;
thread_local uint32_t t_generation = 0;
}  // namespace

uint32_t ThisThreadId() {
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  if (t_generation != gen) {
    t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
    t_generation = gen;
  }
  return t_tid;
}

void ThreadIdsAfterFork() { g_generation.fetch_add(1, std::memory_order_relaxed); }

}  // namespace prof
