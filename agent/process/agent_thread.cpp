#include "agent/process/agent_thread.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/thread_id.h"
#include "agent/process/lifecycle.h"
#include "agent/steps/step_markers.h"

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

constexpr uint64_t kAutoPollNs = 100'000'000;  // PROF_AUTO_TIMEOUT resolution
constexpr uint32_t kAutoDetectBits = kHotLaunchMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames;

// PROF_STEP=auto: analyse what the tape holds; decide, or give up at the timeout.
void AutoWork(Runtime* rt, uint64_t start_ns) {
  AutoStep* a = rt->auto_step.get();
  if (a == nullptr || a->state() != AutoStep::State::kDetecting) return;
  const Config& c = rt->config;
  // The process is exiting and its exit already said auto was still looking:
  // no analysis after that, and the tape is off.
  auto stop_looking = [&] {
    a->GiveUp();
    ClearHotBits(kAutoDetectBits & ~RangeHotBits(c));
  };
  if (rt->session->finished()) return stop_looking();
  // CUDA loaded since the last look (calls auto does not watch, or none yet):
  // the provisional window opens (Session::BeginProvisionalIfCuda).
  rt->session->BeginProvisionalIfCuda(NowNs());
  if (a->Analyze()) {
    uint64_t now = NowNs();
    std::string what = a->Describe(now);
    if (!rt->session->LoopFound("auto: " + what, a->iterations_before())) return stop_looking();
    Log().info("PROF_STEP=auto: step = {}", rt->session->StepDescription().substr(std::string("auto: ").size()));
    uint32_t keep = rt->session->finished() ? 0 : AutoMarkerBits(a->marker());  // PROF_RANGE's ranges may all be recorded
    // An NVTX range's id must stay its name's for good (base/strings.h).
    for (uint32_t token : {a->marker().token, a->marker().prev}) {
      if (KindOfToken(token) == TokenKind::kNvtx) Strings().Pin(IdOfToken(token));
    }
    SetHotBits(keep);
    ClearHotBits(kAutoDetectBits & ~keep & ~RangeHotBits(c));
    return;
  }
  if (!a->detection().why_not.empty()) Log().debug("PROF_STEP=auto: no loop yet: {}", a->WhyNotFound());
  rt->session->EndProvisionalIfFull(a->events_observed(), NowNs());
  uint64_t now = NowNs();
  if (a->TimedOut(now, c.auto_timeout_ns, start_ns)) {
    stop_looking();
    std::string why = a->WhyNotFound();
    std::string fallback = fmt::format("time:{}ms", c.step_time_ns / 1'000'000);
    if (!rt->session->StartTimeSteps(now, fmt::format("{} (auto found no loop: {})", fallback, why))) return;
    Log().info("PROF_STEP=auto: no loop found within PROF_AUTO_TIMEOUT={}s of CUDA activity ({}); using {} steps from now",
               c.auto_timeout_ns / 1'000'000'000.0, why, fallback);
  }
}

void Run(Runtime* rt, uint64_t start_ns) {
  pthread_setname_np(pthread_self(), "libprof-agent");
  MarkLibprofThread();
  const Config& c = rt->config;
  bool trigger = !c.trigger_file.empty();
  bool watch_calls = WatchesCalls(c);
  TriggerWatch watch;
  uint64_t next_poll = NowNs();
  // Under CUDA_INJECTION64_PATH the agent starts at the first CUDA call.
  AutoWork(rt, start_ns);
  while (true) {
    uint64_t now = NowNs();
    uint64_t deadline = now + kIdleWakeNs;
    // Time steps (inside a range with PROF_RANGE): step k ends at its boundary.
    uint64_t boundary = rt->session->next_time_boundary_ns();
    if (boundary != 0) deadline = std::min(deadline, boundary);
    bool detecting = rt->auto_step && rt->auto_step->state() == AutoStep::State::kDetecting;
    if (detecting) deadline = std::min(deadline, now + kAutoPollNs);
    if (trigger) deadline = std::min(deadline, next_poll);
    if (deadline > now && WaitUntil(&g_wake, deadline)) {
      int sig = g_pending_signal.exchange(0);
      if (sig != 0) {
        HandleExitSignal(sig);
        sem_post(&g_signal_done);
      }
      AutoWork(rt, start_ns);
      continue;
    }
    AutoWork(rt, start_ns);
    // Exited threads' slots back to the free list, whatever the writer is
    // busy with (a thread per request must not run out of slots while a
    // window waits for its GPU records).
    rt->buffers.Reclaim();
    now = NowNs();
    // A program that loaded CUDA since the last wake (a static cudart under
    // LD_PRELOAD, whose calls no wrapper sees): calls feed the marker path.
    if (watch_calls) rt->session->WatchCallsIfCuda();
    // Watching calls without CUPTI while waiting: look again now and then.
    if (watch_calls && rt->collector) rt->collector->Tick(now);
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

void WakeAgentThread() {
  if (g_thread_running.load(std::memory_order_relaxed)) sem_post(&g_wake);
}

uint32_t AutoMarkerBits(const StepMarker& marker) {
  if (marker.prev != 0) return kAutoDetectBits;  // the previous event of any kind matters
  switch (KindOfToken(marker.token)) {
    case TokenKind::kLaunch:
    case TokenKind::kGraph: return kHotLaunchMarker;
    case TokenKind::kCopy:
    case TokenKind::kMemset: return kHotCopyMarker;
    case TokenKind::kSync: return kHotSyncMarker;
    case TokenKind::kNvtx: return kHotNvtxNames;  // ranges always reach the hooks; their names are needed
    default: return 0;
  }
}

bool RequestSignalExit(int sig, uint64_t timeout_ns) {
  if (!g_thread_running.load()) return false;
  g_pending_signal.store(sig);
  sem_post(&g_wake);
  return WaitUntil(&g_signal_done, NowNs() + timeout_ns);
}

}  // namespace prof
