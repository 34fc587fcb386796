#include "agent/process/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/clock.h"
#include "base/log.h"
#include "base/signal_deferral.h"
#include "agent/process/agent_start.h"
#include "agent/process/agent_thread.h"
#include "base/loader_guard.h"
#include "agent/runtime/runtime.h"
#include "exporters/files/atomic_file.h"

namespace prof {
namespace {

// Signals that end the process and during which the open window is written,
// marked partial. SIGHUP and SIGQUIT end a job the same way SIGTERM does
// (a closed terminal, a launcher's quit).
constexpr int kExitSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
// Signals after which the process state cannot be trusted (a fault, an
// abort): no window is written (sealing it needs the heap and locks a
// crashed thread may hold), but no temporary file is left and one line says
// so. Installed only where the host left the default action.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[NSIG];

// The exit path runs once: 0 not started, 1 running (atexit or the first
// exit signal owns it), 2 done. A later signal, on any thread, waits for 2
// (bounded) before it lets the process die, so it never cuts a window
// being written in half.
std::atomic<int> g_exit_state{0};

// How long the exit path may hold the process for the last window.
uint64_t ExitBudgetNs(const Config& c) {
  return std::min<uint64_t>(c.flush_timeout_ns, 2'000'000'000) + 3'000'000'000;
}

uint64_t ExitBudgetNs() {
  Runtime* rt = CurrentRuntime();
  return rt != nullptr ? ExitBudgetNs(rt->config) : 5'000'000'000;
}

// async-signal-safe: one line straight to stderr.
void WriteStderr(const char* a, const char* b = "", const char* c = "") {
  for (const char* part : {"[libprof] warn: ", a, b, c, "\n"}) {
    size_t n = std::strlen(part);
    while (n > 0) {
      ssize_t w = write(STDERR_FILENO, part, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      part += w;
      n -= static_cast<size_t>(w);
    }
  }
}

// async-signal-safe wait for another thread's exit work.
void WaitExitDone(uint64_t budget_ns) {
  uint64_t deadline = NowNs() + budget_ns;
  while (g_exit_state.load(std::memory_order_acquire) != 2 && NowNs() < deadline) {
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
}

int HasCudaLibrary(dl_phdr_info* info, size_t, void* found) {
  const char* name = info->dlpi_name;
  const char* base = name != nullptr && std::strrchr(name, '/') ? std::strrchr(name, '/') + 1 : name;
  if (base != nullptr && (std::strncmp(base, "libcudart.so", 12) == 0 || std::strncmp(base, "libcuda.so", 10) == 0)) {
    *static_cast<bool*>(found) = true;
    return 1;
  }
  return 0;
}

// Set in a fork child: the loader's lock may have been held by another
// parent thread at fork time (glibc leaves it held in the child), so
// dl_iterate_phdr could wait forever there.
std::atomic<bool> g_forked_child{false};
// Once CUDA is loaded it stays loaded: a yes is remembered (and inherited).
std::atomic<bool> g_cuda_seen{false};
// The process the agent runs in (set at start and in each fork child). A
// vfork child shares the parent's memory, so it reads the parent's pid here.
std::atomic<pid_t> g_agent_pid{0};

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

// The end of the process, from atexit (sig 0) or an exit signal's handler.
// The work (end the window, drain the writer, and the collector's forced
// flush) runs on the agent thread; this thread only waits, at most the
// budget, so neither a slow CUPTI nor a lock held elsewhere can hold the
// exit longer. Past the budget the window is given up, its temporary file
// removed, and one line says so.
void EndOfProcessFrom(int sig) {
  int expected = 0;
  if (!g_exit_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    if (sig != 0) WaitExitDone(ExitBudgetNs());  // another thread is writing the window: let it finish
    return;
  }
  Runtime* rt = CurrentRuntime();
  if (rt == nullptr || !rt->session) {
    g_exit_state.store(2, std::memory_order_release);
    return;
  }
  uint64_t budget = ExitBudgetNs(rt->config);
  bool done = RequestSignalExit(sig == 0 ? kExitRequest : sig, budget);
  if (!done && sig == 0 && !AgentThreadRunning()) {
    // No agent thread (it could not be started): do the work here.
    RunExitWork("exit");
    done = true;
  }
  if (!done) {
    RemoveUnfinishedTemporaries();
    WriteStderr("the process ended (", sig == 0 ? "exit" : SignalName(sig),
                ") before the last window was written within the exit budget; it is not written");
  }
  g_exit_state.store(2, std::memory_order_release);
}

void OnExit() {
  // An exit signal landing on this thread while it waits would wait for
  // itself: keep them pending until the exit work is done, then they act
  // (and find it done).
  sigset_t block, old;
  sigemptyset(&block);
  for (int sig : kExitSignals) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  EndOfProcessFrom(0);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Chain(int sig, siginfo_t* info, void* context) {
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler == SIG_IGN) return;
  if (prev.sa_handler == SIG_DFL) {
    // Default action with the host's own disposition: the signal stays
    // pending (blocked while we run) and kills the process on return, so the
    // exit status is the signal's, exactly as without us.
    sigaction(sig, &prev, nullptr);
    raise(sig);
    return;
  }
  prev.sa_handler(sig);
}

void OnSignal(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  // Inside a section that may hold a lock the exit work needs: this thread
  // raises the signal again when it leaves the section.
  if (DeferExitSignal(sig)) {
    errno = saved_errno;
    return;
  }
  EndOfProcessFrom(sig);
  Chain(sig, info, context);
  errno = saved_errno;
}

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  if (CurrentRuntime() != nullptr && g_exit_state.load(std::memory_order_acquire) != 2) {
    RemoveUnfinishedTemporaries();
    WriteStderr(SignalName(sig), ": the process is crashing; the window in progress is not written (its state cannot be trusted)");
  }
  Chain(sig, info, context);
  errno = saved_errno;
}

void InstallHandler(int sig, void (*handler)(int, siginfo_t*, void*), bool only_over_default) {
  struct sigaction current;
  if (sigaction(sig, nullptr, &current) != 0) return;
  bool is_default = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
  // A host (or nohup) that ignores the signal keeps ignoring it.
  if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) return;
  // A host with its own fault handler (a JIT, a runtime that maps faults)
  // may use faults as normal control flow: leave those alone.
  if (only_over_default && !is_default) return;
  struct sigaction ours;
  std::memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = handler;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  // No exit signal nests inside our handler on the same thread (it would
  // wait for the outer one): they stay pending, or go to another thread.
  sigemptyset(&ours.sa_mask);
  for (int exit_sig : kExitSignals) sigaddset(&ours.sa_mask, exit_sig);
  g_previous[sig] = current;
  sigaction(sig, &ours, nullptr);
}

void OnForkChild() {
  ExitSignalDeferralAfterFork();
  g_agent_pid.store(getpid());
  g_forked_child.store(true);
  g_exit_state.store(0);
  RestartAgentInChild();
}


bool CudaInProcMaps() { return LibraryInProcMaps({"/libcudart.so", "/libcuda.so"}); }

}  // namespace

// Reads /proc/self/maps (no loader lock: safe in a fork child).
bool LibraryInProcMaps(std::initializer_list<std::string_view> names) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::initializer_list<std::string_view>& kNames = names;
  char buf[8192];
  size_t keep = 0;
  bool found = false;
  while (!found) {
    ssize_t n = read(fd, buf + keep, sizeof(buf) - keep);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view text(buf, keep + static_cast<size_t>(n));
    for (std::string_view name : kNames) found = found || text.find(name) != std::string_view::npos;
    // Keep the tail: a name may straddle two reads.
    keep = std::min<size_t>(text.size(), 32);
    std::memmove(buf, buf + text.size() - keep, keep);
  }
  close(fd);
  return found;
}

// Processes that never loaded CUDA (a shell the job runs through, a
// compiler) are not the job being profiled: no windows, and they end silently.
bool ProcessHasCudaLoaded() {
  if (g_cuda_seen.load(std::memory_order_relaxed)) return true;
  bool found = false;
  if (g_forked_child.load(std::memory_order_relaxed)) found = CudaInProcMaps();
  else {
    LoaderSection section;  // base/loader_guard.h: a fork now would hang its child
    dl_iterate_phdr(HasCudaLibrary, &found);
  }
  if (found) g_cuda_seen.store(true, std::memory_order_relaxed);
  return found;
}

void RunExitWork(const char* reason) {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return;
    rt->session->EndPartial(reason, NowNs());
    if (rt->tensor_memory) rt->tensor_memory->ProcessExiting();
    // Normal windows still being written and the partial one: bounded.
    if (!rt->writer->Drain(ExitBudgetNs(rt->config))) {
      Log().warn("the last window was still being written when the process ended ({})", reason);
    }
    if (uint64_t missed = ExitSignalDeferralsMissed(); missed > 0) {
      Log().info("exit-signal deferral: {} section(s) found all {} slots held (that many threads inside libprof "
                 "at once); an exit signal landing in one would not have waited for its locks (signal_deferral.h)",
                 missed, kExitDeferralSlots);
    }
    std::string message = rt->session->EndedBeforeFirstWindowMessage();
    if (!message.empty() && ProcessHasCudaLoaded()) {
      // PROF_STEP=auto saw no launch, copy or synchronize: CUDA was loaded
      // (an import) but, as far as libprof saw, never used: nothing to
      // explain at info.
      bool unused = rt->auto_step && rt->auto_step->events_observed() == 0 && !rt->session->counting();
      if (unused) {
        Log().debug("process ended with no window: PROF_STEP=auto saw no CUDA launch, copy or synchronize");
      } else {
        Log().info("{}", message);
      }
    }
  } catch (...) {
    // Never let an exception reach the host's exit.
  }
}

void HandleExitSignal(int sig) {
  RunExitWork(sig == kExitRequest ? "exit" : SignalName(sig));
  // Done: a signal waiting in WaitExitDone (on any thread, even nested in the
  // handler of the one that asked) may let the process go now.
  g_exit_state.store(2, std::memory_order_release);
}

void InstallLifecycleHandlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  g_agent_pid.store(getpid());
  std::atexit(OnExit);
  for (int sig : kExitSignals) InstallHandler(sig, OnSignal, /*only_over_default=*/false);
  for (int sig : kFatalSignals) InstallHandler(sig, OnFatalSignal, /*only_over_default=*/true);
  pthread_atfork(nullptr, nullptr, OnForkChild);
}

void OnUnderscoreExit() {
  // Not the agent's process (a vfork child calling _exit after a failed
  // exec shares its parent's memory): nothing here is its to end.
  if (CurrentRuntime() == nullptr || g_agent_pid.load() != getpid()) return;
  OnExit();
}

}  // namespace prof
