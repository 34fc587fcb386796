#include "base/loader_guard.h"

#include <pthread.h>
#include <time.h>

#include <atomic>

#include "base/clock.h"

namespace prof {
namespace {

// Sections in progress, all threads (nested ones count too).
std::atomic<int> g_inside{0};
// Set by the prepare handler, cleared by the parent and child handlers: no
// new section starts while it is set. glibc runs one fork's handlers at a
// time (its atfork lock is held from prepare to parent/child).
std::atomic<bool> g_forking{false};
// This thread's nesting: a fork from inside a section (a signal handler that
// forks) does not wait for its own thread, and the child keeps the count.
thread_local int t_depth = 0;

void Pause() {
  timespec ts{0, 100'000};
  nanosleep(&ts, nullptr);
}

void BeforeFork() {
  g_forking.store(true, std::memory_order_seq_cst);
  uint64_t deadline = NowNs() + kLoaderForkWaitNs;
  while (g_inside.load(std::memory_order_seq_cst) > t_depth && NowNs() < deadline) Pause();
}

void AfterForkInParent() { g_forking.store(false, std::memory_order_release); }

void AfterForkInChild() {
  // Only this thread exists here: the other threads' sections are gone.
  g_inside.store(t_depth, std::memory_order_relaxed);
  g_forking.store(false, std::memory_order_release);
}

}  // namespace

LoaderSection::LoaderSection() {
  if (t_depth++ > 0) {  // nested: the fork already waits for the outer one
    g_inside.fetch_add(1, std::memory_order_seq_cst);
    return;
  }
  // Bounded as the fork's own wait is, in case a fork's handlers never end
  // (they always do: glibc runs the parent or child handler).
  uint64_t deadline = 0;
  while (true) {
    g_inside.fetch_add(1, std::memory_order_seq_cst);
    if (!g_forking.load(std::memory_order_seq_cst)) return;
    g_inside.fetch_sub(1, std::memory_order_seq_cst);
    if (deadline == 0) deadline = NowNs() + kLoaderForkWaitNs;
    while (g_forking.load(std::memory_order_acquire) && NowNs() < deadline) Pause();
    if (NowNs() >= deadline) {
      g_inside.fetch_add(1, std::memory_order_seq_cst);
      return;
    }
  }
}

LoaderSection::~LoaderSection() {
  --t_depth;
  g_inside.fetch_sub(1, std::memory_order_seq_cst);
}

void InstallLoaderForkGuard() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild);
}

}  // namespace prof
