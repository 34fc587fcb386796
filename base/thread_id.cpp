#include "base/thread_id.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace prof {
namespace {
std::atomic<uint32_t> g_generation{1};
thread_local uint32_t t_tid = 0;
thread_local uint32_t t_generation = 0;
constexpr int kOwnThreads = 8;
std::atomic<uint32_t> g_own_threads[kOwnThreads];
}  // namespace

uint32_t ThisThreadId() {
  uint32_t gen = g_generation.load(std::memory_order_relaxed);
  if (t_generation != gen) {
    t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
    t_generation = gen;
  }
  return t_tid;
}

void ThreadIdsAfterFork() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
  // The child has none of the parent's threads; its own register again.
  for (auto& slot : g_own_threads) slot.store(0, std::memory_order_relaxed);
}

void MarkLibprofThread() {
  uint32_t tid = ThisThreadId();
  for (auto& slot : g_own_threads) {
    uint32_t expected = 0;
    if (slot.load(std::memory_order_relaxed) == tid) return;
    if (slot.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) return;
  }
}

bool IsLibprofThread(uint32_t tid) {
  if (tid == 0) return false;
  for (const auto& slot : g_own_threads) {
    if (slot.load(std::memory_order_acquire) == tid) return true;
  }
  return false;
}

}  // namespace prof
