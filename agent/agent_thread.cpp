#include "agent/agent_thread.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "agent/clock.h"
#include "agent/lifecycle.h"
#include "agent/log.h"
#include "agent/thread_id.h"
#include "agent/step_markers.h"

namespace prof {
namespace {

constexpr uint64_t kTriggerPollNs = 100'000'000;
constexpr uint64_t kIdleWakeNs = 1'000'000'000;

sem_t g_wake;
sem_t g_signal_done;
std::atomic<bool> g_thread_running{false};
std::atomic<int> g_pending_signal{0};

timespec ToTimespec(uint64_t ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  return ts;
}

// True if woken by a post, false on timeout.
bool WaitUntil(sem_t* sem, uint64_t deadline_ns) {
  timespec ts = ToTimespec(deadline_ns);
  while (true) {
    if (sem_clockwait(sem, CLOCK_MONOTONIC, &ts) == 0) return true;
    if (errno != EINTR) return false;
  }
}

// A new appearance: absent -> present, or a changed mtime/inode.
struct TriggerWatch {
  bool present = false;
  timespec mtime{};
  ino_t inode = 0;

  bool Appeared(const std::string& path) {
    struct stat st;
    bool now_present = stat(path.c_str(), &st) == 0;
    bool appeared = false;
    if (now_present) {
      appeared = !present || st.st_ino != inode || st.st_mtim.tv_sec != mtime.tv_sec ||
                 st.st_mtim.tv_nsec != mtime.tv_nsec;
      mtime = st.st_mtim;
      inode = st.st_ino;
    }
    present = now_present;
    return appeared;
  }
};

void Run(Runtime* rt, uint64_t start_ns) {
  pthread_setname_np(pthread_self(), "libprof-agent");
  MarkLibprofThread();
  const Config& c = rt->config;
  bool time_steps = c.step_source == StepSource::kTime;
  bool trigger = !c.trigger_file.empty();
  bool watch_calls = StepSourceWatchesCalls(c.step_source);
  TriggerWatch watch;
  uint64_t next_poll = NowNs();
  while (true) {
    uint64_t now = NowNs();
    uint64_t deadline = now + kIdleWakeNs;
    uint64_t boundary = 0;
    if (time_steps && !rt->session->finished()) {
      boundary = start_ns + (rt->session->current_step() + 1) * c.step_time_ns;
      deadline = std::min(deadline, boundary);
    }
    if (trigger) deadline = std::min(deadline, next_poll);
    if (deadline > now && WaitUntil(&g_wake, deadline)) {
      int sig = g_pending_signal.exchange(0);
      if (sig != 0) {
        HandleExitSignal(sig);
        sem_post(&g_signal_done);
      }
      continue;
    }
    now = NowNs();
    // A program that loaded CUDA since the last wake (a static cudart under
    // LD_PRELOAD, whose calls no wrapper sees): calls feed the marker path.
    if (watch_calls) rt->session->WatchCallsIfCuda();
    // Step k ends exactly at start + (k+1) * d, however late we woke.
    if (boundary != 0 && now >= boundary) rt->session->Step(boundary);
    if (trigger && now >= next_poll) {
      if (watch.Appeared(c.trigger_file)) {
        Log().info("PROF_TRIGGER_FILE {} appeared: one profiling cycle armed", c.trigger_file);
        rt->session->Arm();
      }
      next_poll = now + kTriggerPollNs;
    }
  }
}

}  // namespace

void StartAgentThread(Runtime* rt, uint64_t start_ns) {
  sem_init(&g_wake, 0, 0);
  sem_init(&g_signal_done, 0, 0);
  g_pending_signal.store(0);
  // All signals blocked in our thread: the host's threads receive them.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    std::thread(Run, rt, start_ns).detach();
    g_thread_running.store(true);
  } catch (...) {
    g_thread_running.store(false);
    Log().warn("cannot start the agent thread: time steps, trigger file and signal exits are off");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

bool AgentThreadRunning() { return g_thread_running.load(); }

bool RequestSignalExit(int sig, uint64_t timeout_ns) {
  if (!g_thread_running.load()) return false;
  g_pending_signal.store(sig);
  sem_post(&g_wake);
  return WaitUntil(&g_signal_done, NowNs() + timeout_ns);
}

}  // namespace prof
