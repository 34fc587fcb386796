// ExitSignalDeferral (base/signal_deferral.h): an exit signal that lands
// inside a section is kept and raised again when the thread leaves its
// outermost section; the handler finds the thread's slot in a global table,
// by the kernel's tid, with no thread-local. Signals here are SIGUSR1/SIGUSR2
// with a handler that does what libprof's OnSignal does first.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/signal_deferral.h"

namespace prof {
namespace {

std::atomic<int> g_deferred{0};
std::atomic<int> g_ran{0};
std::atomic<int> g_last_ran{0};

void Handler(int sig) {
  if (DeferExitSignal(sig)) {
    g_deferred.fetch_add(1);
    return;
  }
  g_ran.fetch_add(1);
  g_last_ran.store(sig);
}

void InstallHandlers() {
  struct sigaction sa {};
  sa.sa_handler = Handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGUSR2, &sa, nullptr);
  g_deferred.store(0);
  g_ran.store(0);
  g_last_ran.store(0);
}

// Threads that sit inside a section each until released.
class ThreadsInSections {
 public:
  explicit ThreadsInSections(int n) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        ExitSignalDeferral defer;
        std::unique_lock<std::mutex> lock(mu_);
        ++inside_;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
      });
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return inside_ == n; });
  }
  ~ThreadsInSections() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool released_ = false;
  std::vector<std::thread> threads_;
};

TEST_CASE("Outside a section an exit signal is not deferred", "[signal_deferral]") {
  InstallHandlers();
  raise(SIGUSR1);
  CHECK(g_deferred.load() == 0);
  CHECK(g_ran.load() == 1);
}

// Each test raises and counts for its own case: alike in shape, other signals.
TEST_CASE("A signal inside nested sections is raised again when the outermost one ends", "[signal_deferral]") {
  InstallHandlers();
  {
    ExitSignalDeferral outer;
    {
      ExitSignalDeferral inner;
      raise(SIGUSR1);
      CHECK(g_deferred.load() == 1);
      CHECK(g_ran.load() == 0);
    }
    CHECK(g_ran.load() == 0);  // the inner section's end is not the outermost
  }
  CHECK(g_ran.load() == 1);
  CHECK(g_last_ran.load() == SIGUSR1);
  // The slot was freed: the next signal outside a section acts at once.
  raise(SIGUSR2);
  CHECK(g_ran.load() == 2);
  CHECK(g_deferred.load() == 1);
}

TEST_CASE("Of two signals in one section the first is kept", "[signal_deferral]") {
  InstallHandlers();
  {
    ExitSignalDeferral defer;
    raise(SIGUSR1);
    raise(SIGUSR2);
    CHECK(g_deferred.load() == 2);
  }
  CHECK(g_ran.load() == 1);
  CHECK(g_last_ran.load() == SIGUSR1);
}

TEST_CASE("Another thread's section does not defer this thread's signal", "[signal_deferral]") {
  InstallHandlers();
  ThreadsInSections others(3);
  raise(SIGUSR1);
  CHECK(g_ran.load() == 1);
  CHECK(g_deferred.load() == 0);
}

TEST_CASE("A signal sent to a thread inside a section waits for its end", "[signal_deferral]") {
  InstallHandlers();
  std::mutex mu;
  std::condition_variable cv;
  bool inside = false, signalled = false;
  int ran_inside = -1;
  std::thread t([&] {
    ExitSignalDeferral defer;
    std::unique_lock<std::mutex> lock(mu);
    inside = true;
    cv.notify_all();
    cv.wait(lock, [&] { return signalled; });
    ran_inside = g_ran.load();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return inside; });
    pthread_kill(t.native_handle(), SIGUSR1);
    // pthread_kill returns before delivery: wait until the handler has run.
    while (g_deferred.load() == 0) {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
    signalled = true;
  }
  cv.notify_all();
  t.join();
  CHECK(ran_inside == 0);
  CHECK(g_deferred.load() == 1);
  CHECK(g_ran.load() == 1);
}

TEST_CASE("With every slot held a section runs without deferral, counted, and slots come back",
          "[signal_deferral]") {
  InstallHandlers();
  uint64_t missed = ExitSignalDeferralsMissed();
  {
    ThreadsInSections holders(kExitDeferralSlots);
    ExitSignalDeferral defer;  // finds no slot
    CHECK(ExitSignalDeferralsMissed() == missed + 1);
    raise(SIGUSR1);
    CHECK(g_ran.load() == 1);  // not deferred: acted at once
    CHECK(g_deferred.load() == 0);
  }
  // The holders left: a section claims a slot again.
  {
    ExitSignalDeferral defer;
    raise(SIGUSR1);
    CHECK(g_deferred.load() == 1);
    CHECK(g_ran.load() == 1);
  }
  CHECK(g_ran.load() == 2);
  CHECK(ExitSignalDeferralsMissed() == missed + 1);
}

TEST_CASE("A fork child inside a section keeps deferring under its own tid, and the parent's slots are gone",
          "[signal_deferral][fork]") {
  InstallHandlers();
  ThreadsInSections others(kExitDeferralSlots - 1);  // with this thread's, the table is full
  ExitSignalDeferral defer;
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    ExitSignalDeferralAfterFork();
    raise(SIGUSR1);  // deferred only if this thread's slot carries the child's tid
    int deferred = g_deferred.load();
    // The parent's holders are not in the child: other threads find slots.
    int claimed_by_new_thread = 0;
    std::thread t([&] {
      ExitSignalDeferral inner;
      raise(SIGUSR2);
      claimed_by_new_thread = g_deferred.load() - deferred;
    });
    t.join();
    _exit(deferred == 1 && claimed_by_new_thread == 1 && ExitSignalDeferralsMissed() == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace prof
