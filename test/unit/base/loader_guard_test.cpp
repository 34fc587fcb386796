// LoaderSection and fork (base/loader_guard.h): a fork while another thread
// is inside dl_iterate_phdr leaves the loader's write lock held in the child,
// whose next dlopen of a new library then waits for ever. The guard makes
// the fork wait for the section; a fork from inside a section on the forking
// thread itself does not wait for itself.
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "base/clock.h"
#include "base/loader_guard.h"

namespace prof {
namespace {

std::atomic<bool> g_walking{false};

int SlowWalk(dl_phdr_info*, size_t, void*) {
  g_walking.store(true);
  timespec ts{0, 300'000'000};  // a thread preempted inside the walk
  nanosleep(&ts, nullptr);
  return 1;
}

// Forks; the child loads a library this process has not loaded (alarm:
// killed if that waits) and leaves. The child's exit status.
int ForkAndLoadInChild() {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    void* handle = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    _exit(handle != nullptr ? 0 : 2);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_CASE("A fork waits for another thread's loader section, and its child can still load a library",
          "[loader_guard][fork][safety]") {
  REQUIRE(dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr);  // new to this process
  InstallLoaderForkGuard();
  g_walking.store(false);
  std::thread walker([] {
    LoaderSection section;
    dl_iterate_phdr(SlowWalk, nullptr);
  });
  while (!g_walking.load()) {
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
  uint64_t start = NowNs();
  int status = ForkAndLoadInChild();
  uint64_t waited = NowNs() - start;
  walker.join();
  CHECK(status == 0);  // without the guard: 128 + SIGALRM, the child hung in dlopen
  CHECK(waited >= 150'000'000);  // the fork waited for the walk to end
}

TEST_CASE("A fork from inside a loader section on the forking thread does not wait for itself",
          "[loader_guard][fork][safety]") {
  InstallLoaderForkGuard();
  LoaderSection outer;
  LoaderSection nested;
  uint64_t start = NowNs();
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(NowNs() - start < kLoaderForkWaitNs / 2);
}

}  // namespace
}  // namespace prof
