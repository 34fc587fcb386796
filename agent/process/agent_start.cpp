#include "agent/process/agent_start.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include <atomic>
#include <memory>
#include <thread>

#include "base/clock.h"
#include "base/config_loader.h"
#include "base/hot_state.h"
#include "base/kernel_registry.h"
#include "base/log.h"
#include "base/output_dir.h"
#include "base/runtime_frames.h"
#include "base/signal_deferral.h"
#include "base/strings.h"
#include "base/thread_id.h"
#include "agent/process/agent_thread.h"
#include "agent/process/bindings.h"
#include "agent/process/lifecycle.h"
#include "base/loader_guard.h"
#include "agent/runtime/runtime.h"
#include "agent/session/window_sink.h"
#include "collectors/python/python_stacks.h"
#include "collectors/python/torch_ops.h"

extern "C" void prof_step(void);

namespace prof {
namespace {

std::atomic<bool> g_started{false};

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// The program's name as a file-name part: basename of argv[0] (what `ps`
// shows), bytes other than [A-Za-z0-9._-] as '_', at most 32 of them.
std::string ProcessName() {
  std::string name = program_invocation_short_name != nullptr ? program_invocation_short_name : "";
  if (name.size() > 32) name.resize(32);
  for (char& c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_';
    if (!plain) c = '_';
  }
  return name.empty() || name == "." || name == ".." ? "process" : name;
}

WindowMeta MetaTemplate(const Config& config, const std::string& cupti_mode) {
  WindowMeta meta;
  meta.pid = static_cast<int>(getpid());
  meta.hostname = HostName();
  meta.process = ProcessName();
  meta.name = config.name.empty() ? meta.hostname + "_" + meta.process + "_" + std::to_string(meta.pid) : config.name;
  meta.rank_known = config.rank >= 0;
  meta.rank = config.rank >= 0 ? config.rank : 0;
  meta.world_size = config.world_size;
  meta.epoch_offset_ns = EpochOffsetNs();
  meta.libprof_version = AGENT_VERSION_STRING;
  meta.config = config.Describe();
  meta.cupti_mode = cupti_mode;
  return meta;
}

uint32_t MarkerBits(const Config& config) {
  switch (config.step_source) {
    case StepSource::kKernel: return kHotLaunchMarker;
    case StepSource::kApi: return kHotApiMarker;
    case StepSource::kSync: return kHotSyncMarker;
    case StepSource::kNvtx: return kHotNvtxNames;
    case StepSource::kAuto: return kHotLaunchMarker | kHotSyncMarker | kHotCopyMarker | kHotNvtxNames;  // detecting
    default: return 0;
  }
}

// A DeviceCollector that collects nothing (as the bench's NullCollector): the interface's overrides.
// The device side of a fork child whose parent had loaded CUDA or CUPTI:
// nothing. NVIDIA leaves CUDA (and CUPTI, subscribed in the parent) undefined
// in a fork child until exec, and the dynamic loader's lock may have been held
// by a parent thread at fork time (glibc leaves it held in the child), so the
// child never dlopens CUPTI or queries library versions. Host-side events
// (interposed calls, NVTX, allocations) are still recorded. A child of a
// parent that had loaded neither loads CUDA itself (its dlopen proves the
// loader free) and gets the ordinary collector.
class ForkChildCollector final : public DeviceCollector {
 public:
  void Attach(const Config&) override {}
  void BeginRecord(uint64_t) override {}
  void Pause() override {}
  void Finish() override {}
  void CollectWindow(uint64_t, uint64_t, uint64_t, Window* out) override {
    out->meta.cupti_mode = Mode();
  }
  void OnExit() override {}
  std::string Mode() const override {
    return "interception-only (fork child of a process that had loaded CUDA: CUPTI is not used after fork)";
  }
};

// How PROF_STEP=auto's log line names an event.
std::string TokenName(uint32_t token) {
  uint32_t id = IdOfToken(token);
  auto api = [](uint32_t a) { return a < static_cast<uint32_t>(ApiId::kCount) ? std::string(ApiName(static_cast<ApiId>(a))) : "?"; };
  switch (KindOfToken(token)) {
    case TokenKind::kLaunch: return fmt::format("launch of `{}`", Demangle(Strings().Get(id).c_str()));
    case TokenKind::kGraph: return fmt::format("`{}`", api(id));
    case TokenKind::kCopy: {
      static const char* const kKinds[] = {"", " HtoH", " HtoD", " DtoH", " DtoD", " default"};
      uint32_t kind = id % 16;
      return fmt::format("`{}`{}", api(id / 16), kind < 6 ? kKinds[kind] : "");
    }
    case TokenKind::kMemset: return fmt::format("`{}`", api(id));
    case TokenKind::kSync: return fmt::format("`{}`", api(id));
    case TokenKind::kNvtx: return fmt::format("NVTX range `{}`", Strings().Get(id));
    default: return "?";
  }
}

// The tape holds up to this many events (12 bytes each, 3 MiB).
constexpr size_t kAutoTapeEvents = size_t{1} << 18;

// Builds and installs a Runtime; the agent thread runs the time steps,
// the trigger file and signal exits.
void Launch(const Config& config, bool fork_child = false, pid_t parent = 0) {
  // The kernel table (1 MiB, zeroed) and the string table are built now, at
  // start-up, not inside the program's first __cudaRegisterFunction, whose
  // slice would otherwise hold half a millisecond of libprof's own work.
  Kernels();
  Strings();
  uint64_t start_ns = NowNs();
  auto* rt = new Runtime;  // never destroyed: see runtime.h
  rt->config = config;
  // One budget: PROF_BUFFER_MB is split half for the host side (events here,
  // NVTX names and ranges: HostEventBytes) and half for the device side (CUPTI buffer pool + decoded records, sized by the
  // collector from the same config.buffer_bytes).
  if (!rt->buffers.Init(HostEventBytes(config.buffer_bytes))) {
    Log().warn("cannot reserve 3/8 of PROF_BUFFER_MB={} for host events; host events will be dropped and counted",
               config.buffer_bytes >> 20);
  }
  Strings().SetNameBudget(NvtxNameBytes(config.buffer_bytes));
  // The range vector may hold twice its size while growing.
  rt->nvtx.SetCapacity(NvtxRangeBytes(config.buffer_bytes) / sizeof(NvtxRange) / 2);
  rt->collectives.SetCapacity(NvtxRangeBytes(config.buffer_bytes) / sizeof(CollectiveCall) / 2);
  // No drop counts until a window opens (warmup drops are not a window's).
  rt->buffers.SetDropRange(~0ull, ~0ull);
  if (config.step_source == StepSource::kKernel || config.step_source == StepSource::kNvtx) {
    rt->markers.Configure(config.step_pattern, /*demangle=*/config.step_source == StepSource::kKernel);
  }
  if (config.range_kind == RangeKind::kNvtx) rt->range_markers.Configure(config.range_pattern, /*demangle=*/false);
  if (config.step_source == StepSource::kAuto) {
    rt->auto_step = std::make_unique<AutoStep>(kAutoTapeEvents, WakeAgentThread, TokenName);
  }
  if (fork_child) rt->collector = std::make_unique<ForkChildCollector>();
  else rt->collector = MakeDeviceCollector();
  // Detection waits for the first recorded call: nothing is spent outside windows.
  rt->python = std::make_unique<python::PythonStacks>(config.python_stacks, config.python_depth);
  WriterDeps deps;
  deps.buffers = &rt->buffers;
  deps.allocs = &rt->allocs;
  deps.collector = rt->collector.get();
  deps.nvtx = &rt->nvtx;
  deps.collectives = &rt->collectives;
  deps.python = rt->python.get();
  python::TensorMemory* tensor_memory = nullptr;
  if (!fork_child && config.torch_memory) {
    auto owned = std::make_unique<python::TensorMemory>();
    tensor_memory = owned.get();
    rt->tensor_memory = std::move(owned);
    deps.tensor_memory = tensor_memory;
  }
  WindowSinkOptions sink = SinkOptionsFor(config);
  sink.host_only = fork_child;  // says why with its first window, once
  sink.parent = parent;
  deps.sink = MakeWindowFileSink(std::move(sink));
  if (!fork_child) deps.enrich = EnrichWindow;
  rt->writer = std::make_unique<WriterThread>(std::move(deps));
  ClearHotBits(~0u);
  rt->session = std::make_unique<Session>(config, rt->collector.get(), rt->writer.get(), &rt->allocs,
                                          MetaTemplate(config, rt->collector->Mode()), start_ns,
                                          ProcessHasCudaLoaded);
  // A multi-rank job: auto's steps are the job's iterations, counted by its
  // collectives, so every rank records the same ones (Session::AnchorToCollectives).
  if (config.world_size > 1 && config.step_source == StepSource::kAuto && config.range_kind == RangeKind::kNone) {
    rt->session->AnchorToCollectives([rt] { return rt->collectives_launched.load(std::memory_order_acquire); });
    rt->auto_step->IgnoreHostGaps();
  }
  // PyTorch's operator ranges and tensor memory follow recording
  // (collectors/python/torch_ops.h).
  bool ops = (config.activities & kActNvtx) != 0 && config.torch_ops != TorchOps::kOff;
  if (!fork_child && (ops || tensor_memory != nullptr)) {
    python::ConfigureTorchOps(ops ? config.torch_ops : TorchOps::kOff, config.torch_modules, tensor_memory);
    rt->session->OnRecordingChanged(python::TorchOpsWanted);
    if (tensor_memory != nullptr) rt->session->OnWindowEnded(python::TorchWindowEnded);
  }
  if (rt->auto_step) {
    // A run that ends before auto decides still writes its window
    // (Session::BeginProvisionalIfCuda): it opens at the first event auto sees.
    rt->auto_step->OnFirstEvent([rt] {
      ExitSignalDeferral defer;  // takes Session::mu_
      rt->session->BeginProvisionalIfCuda(NowNs());
    });
  }
  InstallRuntime(rt);
  if (config.step_source == StepSource::kApi) ArmApiMarker(config.step_api);
  SetHotBits(kHotAllocTracking | MarkerBits(config) | RangeHotBits(config));
  if (config.range_kind != RangeKind::kNone) {
    Log().info("PROF_RANGE={}: each range is one window (at most PROF_REPEAT={}{}), its steps delimited by PROF_STEP; "
               "PROF_SKIP_FIRST/WAIT/WARMUP/ACTIVE do not apply{}",
               config.range_kind == RangeKind::kProfilerApi ? "cudaProfilerApi" : "nvtx:" + config.range_pattern,
               config.repeat, config.repeat == 0 ? ": all" : "",
               config.trigger_file.empty() ? "" : "; PROF_TRIGGER_FILE is ignored");
  }
  StartAgentThread(rt, start_ns);
}

// The Config of the running agent, kept for a fork child, and PROF_NAME as
// the user gave it (a grandchild's name carries only its own pid).
Config* g_config = nullptr;
std::string* g_config_name = nullptr;

}  // namespace

bool SecureExecution() { return getauxval(AT_SECURE) != 0; }

namespace {

// This library's absolute path, looked up once when first asked (a
// realpath is a system call per path component); nullptr when unknown.
class OwnPath {
 public:
  const char* Get() {
    if (!looked_) {
      looked_ = true;
      Dl_info info;
      found_ = dladdr(reinterpret_cast<void*>(&prof_step), &info) != 0 && info.dli_fname != nullptr &&
               realpath(info.dli_fname, path_) != nullptr;
    }
    return found_ ? path_ : nullptr;
  }

 private:
  bool looked_ = false;
  bool found_ = false;
  char path_[PATH_MAX];
};

// NCCL linked into a program or library is seen only through NCCL's
// profiler-plugin interface (collectors/nccl/plugin.cpp): unless the user
// chose a plugin, NCCL is pointed at this library (already loaded, so
// NCCL's dlopen of it returns this copy). Set before the program's first
// communicator, when NCCL reads the variable.
void OfferNcclPlugin(OwnPath* own) {
  const char* chosen = getenv("NCCL_PROFILER_PLUGIN");
  if (chosen != nullptr && *chosen != '\0') {
    Log().debug("NCCL_PROFILER_PLUGIN={} is the user's: collectives of NCCL linked into the program are not seen "
                "(NCCL as a shared library still is)", chosen);
    return;
  }
  if (const char* path = own->Get()) setenv("NCCL_PROFILER_PLUGIN", path, /*overwrite=*/0);
}

// Set beside CUDA_INJECTION64_PATH when libprof offered itself there
// (OfferCudaInjection): the variable is then libprof's own, not the user's.
constexpr const char kOfferedInjection[] = "LIBPROF_OFFERED_INJECTION";

// Whether CUDA_INJECTION64_PATH holds what a profiled process offered (and
// a child inherited) rather than what the user chose.
bool InjectionIsAnOffer() {
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  const char* offered = getenv(kOfferedInjection);
  return injection != nullptr && offered != nullptr && strcmp(injection, offered) == 0;
}

// This library's file name (no folder); "" when unknown.
const char* OwnBaseName() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&prof_step), &info) == 0 || info.dli_fname == nullptr) return "";
  const char* slash = strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

bool Preloaded(const char* base) {
  const char* v = getenv("LD_PRELOAD");
  return v != nullptr && *base != '\0' && strstr(v, base) != nullptr;
}

// Whether this copy of libprof was opened by NCCL as its profiler plugin in
// a process libprof was not injected into: NCCL_PROFILER_PLUGIN names this
// file (set by an injected parent, OfferNcclPlugin, and inherited) while
// neither LD_PRELOAD nor CUDA_INJECTION64_PATH (the user's, not an
// inherited offer) mentions it. Such a process (a child started without
// LD_PRELOAD on purpose, say) is not profiled: the agent stays idle and the
// plugin asks NCCL for no event. Cheap in an injected child: a few getenv
// and substring searches.
bool LoadedOnlyAsNcclPlugin() {
  const char* plugin = getenv("NCCL_PROFILER_PLUGIN");
  if (plugin == nullptr || *plugin == '\0') return false;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&prof_step), &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = OwnBaseName();
  if (Preloaded(base)) return false;
  const char* injection = getenv("CUDA_INJECTION64_PATH");
  if (injection != nullptr && *base != '\0' && strstr(injection, base) != nullptr && !InjectionIsAnOffer()) return false;
  char mine[PATH_MAX], named[PATH_MAX];
  return realpath(info.dli_fname, mine) != nullptr && realpath(plugin, named) != nullptr && strcmp(mine, named) == 0;
}

// Whether the driver loaded this copy through a CUDA_INJECTION64_PATH that a
// profiled parent offered (and this process inherited) while libprof was not
// preloaded here: a child started without LD_PRELOAD on purpose is not
// profiled, as with NCCL_PROFILER_PLUGIN above.
bool LoadedOnlyByInheritedOffer() { return InjectionIsAnOffer() && !Preloaded(OwnBaseName()); }

// Under LD_PRELOAD a program that reaches CUDA through its own dlopen handle
// (ctypes, JAX's and numba's stub loaders), a static cudart or the driver
// API calls past every wrapper: the driver is asked to tell this library
// when CUDA initializes, as it tells an injected one (it dlopens the path,
// which returns this copy, and calls InitializeInjection from the first
// cuInit), so a step source counts calls from the program's first CUDA call
// on, whichever path it takes. Left alone when the user named another tool.
void OfferCudaInjection(OwnPath* own) {
  const char* chosen = getenv("CUDA_INJECTION64_PATH");
  if (chosen != nullptr && *chosen != '\0') return;  // ours (injection) or the user's tool
  const char* path = own->Get();
  if (path == nullptr) return;
  setenv(kOfferedInjection, path, /*overwrite=*/1);
  setenv("CUDA_INJECTION64_PATH", path, /*overwrite=*/0);
}
}  // namespace

void StartAgent(const char* how) {
  bool expected = false;
  if (!g_started.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  // setuid/setgid/file capabilities: the environment belongs to someone less
  // privileged than the process. No PROF_* variable is read, no file is
  // opened, no library is loaded, no handler installed: one line on stderr
  // (not PROF_LOG_FILE, which that someone chose) and nothing else.
  if (SecureExecution()) {
    static const char kLine[] =
        "[libprof] info: secure-execution process (setuid, setgid or capabilities: AT_SECURE); libprof stays idle "
        "and ignores PROF_* variables\n";
    ssize_t ignored = write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
    (void)ignored;
    return;
  }
  if (LoadedOnlyByInheritedOffer()) {
    Log().debug("loaded by the driver through CUDA_INJECTION64_PATH as a profiled parent offered it (inherited) in a "
                "process libprof was not preloaded into: idle");
    return;
  }
  if (LoadedOnlyAsNcclPlugin()) {
    Log().debug("opened by NCCL as its profiler plugin (NCCL_PROFILER_PLUGIN, inherited from a profiled parent) "
                "in a process libprof was not injected into: idle, and the plugin takes no events");
    // Injection may still come (the driver calls InitializeInjection).
    g_started.store(false, std::memory_order_release);
    return;
  }
  // Another copy of libprof (another path) already owns this process.
  void* other = dlsym(RTLD_DEFAULT, "prof_step");
  if (other != nullptr && other != reinterpret_cast<void*>(&prof_step)) {
    Log().debug("another libprof is loaded in this process; this copy ({}) stays idle", how);
    return;
  }
  // Before any other fork handler of ours (base/loader_guard.h).
  InstallLoaderForkGuard();
  Log();  // created now, so a bad PROF_LOG_LEVEL / PROF_LOG_FILE is reported at start
  Config config = LoadConfigFromEnvironment();
  if (!config.enabled) {
    Log().debug("disabled (PROF_ENABLE or a bad value above); loaded via {}", how);
    return;
  }
  OwnPath own;
  OfferNcclPlugin(&own);
  OfferCudaInjection(&own);
  g_config = new Config(config);
  g_config_name = new std::string(config.name);
  Launch(config);
  InstallLifecycleHandlers();
  Log().debug("agent started via {} (pid {})", how, getpid());
}

void OnCudaInitialized() {
  try {
    Runtime* rt = CurrentRuntime();
    if (rt == nullptr || !rt->session) return;
    rt->session->WatchCallsIfCuda();
    {
      // PROF_STEP=auto, still looking: the provisional window opens at the
      // program's first CUDA call, so a program that only asks the device
      // what it is (and ends before the agent thread's first look) still
      // writes its calls. Before the note below: a window begun after it
      // would expire it.
      ExitSignalDeferral defer;  // takes Session::mu_
      rt->session->BeginProvisionalIfCuda(NowNs());
    }
    // The runtime call that initialized the driver entered before CUPTI's
    // callbacks were on: the collector must not take its driver calls for
    // the program's.
    if (rt->collector && RuntimeOnThisStack()) rt->collector->NoteRuntimeCallInProgress();
  } catch (...) {
    // Called from the driver's cuInit: nothing may unwind into it.
  }
}

void RestartAgentInChild() {
  if (g_config == nullptr) return;
  // Locks a parent thread may have held at fork: re-initialised, never
  // unlocked. The parent's Runtime is abandoned (its memory is a copy).
  Strings().ResetMutexAfterFork();
  Kernels().ResetMutexAfterFork();
  ResetLogAfterFork();
  ThreadIdsAfterFork();
  InstallRuntime(nullptr);
  // Same PROF_NAME in parent and child would give both the same file names:
  // the child's carry its pid (without PROF_NAME the default already does).
  if (!g_config_name->empty()) g_config->name = *g_config_name + "_pid" + std::to_string(getpid());
  // A parent that had loaded no CUDA library (nor CUPTI): the child loads
  // CUDA itself, initialises it itself, and is profiled like any process.
  bool inherited = LibraryInProcMaps({"/libcudart.so", "/libcuda.so", "/libcupti.so"});
  Launch(*g_config, /*fork_child=*/inherited, getppid());
}

}  // namespace prof
