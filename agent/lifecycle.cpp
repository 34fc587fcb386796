#include "agent/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "agent/agent_start.h"
#include "agent/agent_thread.h"
#include "agent/clock.h"
#include "agent/log.h"
#include "agent/runtime.h"

namespace prof {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[NSIG];
std::atomic<bool> g_signal_seen{false};
std::atomic<bool> g_ended{false};

// How long the exit path may hold the process for the last window.
uint64_t ExitBudgetNs(const Config& c) {
  return std::min<uint64_t>(c.flush_timeout_ns, 2'000'000'000) + 3'000'000'000;
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

void OnExit() { EndOfProcess("exit"); }

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
  if (!g_signal_seen.exchange(true)) {
    Runtime* rt = CurrentRuntime();
    if (rt != nullptr) RequestSignalExit(sig, ExitBudgetNs(rt->config));
  }
  Chain(sig, info, context);
  errno = saved_errno;
}

void InstallSignalHandler(int sig) {
  struct sigaction current;
  if (sigaction(sig, nullptr, &current) != 0) return;
  // A host (or nohup) that ignores the signal keeps ignoring it.
  if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) return;
  struct sigaction ours;
  std::memset(&ours, 0, sizeof(ours));
  ours.sa_sigaction = OnSignal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  g_previous[sig] = current;
  sigaction(sig, &ours, nullptr);
}

// Set in a fork child: the loader's lock may have been held by another
// parent thread at fork time (glibc leaves it held in the child), so
// dl_iterate_phdr could wait forever there.
std::atomic<bool> g_forked_child{false};
// Once CUDA is loaded it stays loaded: a yes is remembered (and inherited).
std::atomic<bool> g_cuda_seen{false};

bool CudaInProcMaps() {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static constexpr std::string_view kNames[] = {"/libcudart.so", "/libcuda.so"};
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

void OnForkChild() {
  g_forked_child.store(true);
  g_signal_seen.store(false);
  g_ended.store(false);
  RestartAgentInChild();
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal";
  }
}

}  // namespace

// Processes that never loaded CUDA (a shell the job runs through, a
// compiler) are not the job being profiled: no windows, and they end silently.
bool ProcessHasCudaLoaded() {
  if (g_cuda_seen.load(std::memory_order_relaxed)) return true;
  bool found = false;
  if (g_forked_child.load(std::memory_order_relaxed)) found = CudaInProcMaps();
  else dl_iterate_phdr(HasCudaLibrary, &found);
  if (found) g_cuda_seen.store(true, std::memory_order_relaxed);
  return found;
}

void EndOfProcess(const char* reason) {
  if (g_ended.exchange(true)) return;
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return;
    rt->session->EndPartial(reason, NowNs());
    // Normal windows still being written and the partial one: bounded.
    if (!rt->writer->Drain(ExitBudgetNs(rt->config))) {
      Log().warn("the last window was still being written when the process ended ({})", reason);
    }
    std::string message = rt->session->EndedBeforeFirstWindowMessage();
    if (!message.empty() && ProcessHasCudaLoaded()) Log().info("{}", message);
  } catch (...) {
    // Never let an exception reach the host's exit.
  }
}

void HandleExitSignal(int sig) { EndOfProcess(SignalName(sig)); }

void InstallLifecycleHandlers() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  std::atexit(OnExit);
  for (int sig : kSignals) InstallSignalHandler(sig);
  pthread_atfork(nullptr, nullptr, OnForkChild);
}

}  // namespace prof
