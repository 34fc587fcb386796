#include "collectors/python/torch_ops.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "base/log.h"

namespace prof::python {
namespace {

// The Python run on the main thread. apply() reports what it did in a word
// or two; a failure of ours is caught and reported, never raised into the
// program.
constexpr const char* kScript = R"PY(
import sys

_state = {"on": False, "thread": None, "gave_way": False, "hooks": None, "compiled": False}


def _modules_on(torch):
    """Global forward hooks that wrap each module call in an NVTX range named
    "nn.Module: <attribute path from the outermost module>" (the outermost
    by its class name). Not once torch.compile is in use: TorchDynamo would
    trace the hooks, and its guards would see them come and go. So they are
    not installed once it has compiled a graph, they take themselves out at
    the call of a compiled module (before TorchDynamo traces its forward),
    and while TorchDynamo traces they do nothing (is_compiling() is a
    constant to it)."""
    import threading
    import weakref
    dynamo = sys.modules.get("torch._dynamo.utils")
    if _state["compiled"] or (dynamo is not None and dynamo.counters["stats"]["unique_graphs"] > 0):
        _state["compiled"] = True
        return
    module_api = sys.modules.get("torch.nn.modules.module")
    nvtx = getattr(torch._C, "_nvtx", None)
    if module_api is None or nvtx is None:
        return
    names = weakref.WeakKeyDictionary()
    roots = weakref.WeakSet()
    local = threading.local()
    push, pop = nvtx.rangePushA, nvtx.rangePop
    is_compiling = torch.compiler.is_compiling
    # The module calls already under way on this thread (turned on inside a
    # forward, as when a window's first step starts at a launch in it),
    # outermost first: their hooks never run, but the modules they call are
    # named under them, as they will be once the hooks see the whole call.
    running = []
    call_impl = getattr(getattr(module_api, "Module", None), "_call_impl", None)
    frame, code = sys._getframe(1), getattr(call_impl, "__code__", None)
    while frame is not None and code is not None:
        if frame.f_code is code and isinstance(frame.f_locals.get("self"), module_api.Module):
            running.append(frame.f_locals["self"])
        frame = frame.f_back
    running.reverse()

    def attr_in(parent, module):
        """Its name under `parent`, children of children included (a
        ModuleList is never called itself); None when it is not under it."""
        return next((n for n, m in parent.named_modules() if m is module and n), None)

    def path_of(module, chain):
        """Its path, called from the module calls `chain` (outermost first):
        a module called from none is a root, named by its class; one a root
        calls by its name there; any other by its caller's path and its name
        under the caller."""
        path = names.get(module)
        if path is None:
            if not chain:
                path = type(module).__name__
                roots.add(module)
            else:
                caller = chain[-1]
                above = path_of(caller, chain[:-1])
                attr = attr_in(caller, module) or type(module).__name__
                path = attr if caller in roots else above + "." + attr
            names[module] = path
        return path

    def outer_calls(module):
        """The calls under way before the hooks came in that hold `module`."""
        for i in range(len(running) - 1, -1, -1):
            if attr_in(running[i], module) is not None:
                return running[:i + 1]
        return []

    def enter(module, args):
        if is_compiling():
            return
        try:
            _enter(module)
        except Exception:  # never into the program's forward
            pass

    def _enter(module):
        kind = type(module)
        if kind.__name__ == "OptimizedModule" and kind.__module__.startswith("torch._dynamo"):
            _state["compiled"] = True
            _modules_off()
            return
        stack = getattr(local, "stack", None)
        if stack is None:
            stack = local.stack = []
        path = names.get(module)
        if path is None:
            path = path_of(module, stack if stack else outer_calls(module))
        stack.append(module)
        push("nn.Module: " + path)

    def leave(module, args, output):
        if is_compiling():
            return
        try:
            stack = getattr(local, "stack", None)
            if stack and stack[-1] is module:
                stack.pop()
                pop()
        except Exception:
            pass

    _state["hooks"] = (module_api.register_module_forward_pre_hook(enter),
                       module_api.register_module_forward_hook(leave, always_call=True), local, pop)


def _modules_off():
    hooks = _state["hooks"]
    if hooks is None:
        return
    _state["hooks"] = None
    hooks[0].remove()
    hooks[1].remove()
    # Module calls of this thread still open (turned off inside a forward):
    # their ranges are the innermost at a bytecode boundary.
    stack = getattr(hooks[2], "stack", None) or []
    while stack:
        stack.pop()
        hooks[3]()


def _torch():
    torch = sys.modules.get("torch")
    profiler = sys.modules.get("torch.autograd.profiler")
    if torch is None or profiler is None:
        return None, None
    return torch, profiler


def _off():
    import threading
    if not _state["on"] or threading.get_ident() != _state["thread"]:
        return False
    torch, profiler = _torch()
    _state["on"] = False
    _modules_off()
    torch.autograd._disable_profiler()
    profiler._run_on_profiler_stop()
    return True


def _giving_way(enable):
    def _enable_profiler(*args, **kwargs):
        if _off():
            _state["gave_way"] = True
        return enable(*args, **kwargs)
    _enable_profiler.libprof_gives_way = True
    _enable_profiler.__wrapped__ = enable
    return _enable_profiler


def _apply(want, shapes, modules):
    import threading
    torch, profiler = _torch()
    if torch is None:
        return "no torch"
    if _state["gave_way"]:
        _state["gave_way"] = False
        return "gave way"
    if not want:
        return "off" if _off() else "unchanged"
    if _state["on"]:
        return "unchanged"
    if torch.autograd._profiler_enabled():
        return "busy"
    if not getattr(profiler._enable_profiler, "libprof_gives_way", False):
        profiler._enable_profiler = _giving_way(profiler._enable_profiler)
    config = profiler.ProfilerConfig(profiler.ProfilerState.NVTX, bool(shapes), False, False, False, False,
                                     profiler._ExperimentalConfig())
    torch.autograd._enable_profiler(config, set())
    profiler._run_on_profiler_start()
    _state["on"] = True
    _state["thread"] = threading.get_ident()
    if modules:
        _modules_on(torch)
    return "on (modules off: torch.compile)" if _state["compiled"] else "on"


def apply(want, shapes, modules):
    try:
        return _apply(want, shapes, modules)
    except Exception as e:
        return "error: %s: %s" % (type(e).__name__, e)


# Tensor memory (collectors/python/tensor_memory.h): the caching allocator's
# history, from a snapshot of its segments and blocks on.
_mem = {"on": False, "start": None, "records": b"", "sites": ""}
_MAX_ENTRIES = 100000  # per device: PyTorch keeps a ring of this many actions
_BLOCK_STATES = {"inactive": 0, "active_allocated": 1, "active_awaiting_free": 2}
_ACTIONS = {"alloc": 0, "free_requested": 1, "free_completed": 2, "segment_alloc": 3, "segment_free": 4}


def _snapshot(memory):
    """The allocator's snapshot with the cyclic collector held off: the
    snapshot is a dict per block and per action (tens of thousands), and
    the collections their creation would set off make it ten times slower.
    Nothing of it is cyclic: reference counts free it."""
    import gc
    was_on = gc.isenabled()
    gc.disable()
    try:
        return memory._snapshot()
    finally:
        if was_on:
            gc.enable()


def _memory_on(torch):
    if not torch.cuda.is_initialized():
        return "no cuda"
    if torch._C._cuda_isHistoryEnabled():
        return "busy"
    memory = torch.cuda.memory
    start = _snapshot(memory)
    kwargs = {"context": "alloc", "stacks": "python", "max_entries": _MAX_ENTRIES, "clear_history": True}
    try:
        memory._record_memory_history("all", skip_actions=["snapshot"], **kwargs)
    except TypeError:  # a PyTorch without skip_actions
        memory._record_memory_history("all", **kwargs)
    _mem["on"] = True
    _mem["start"] = start
    return "on"


def _user_file(name):
    return not (name.startswith("<") or "/site-packages/" in name or "/dist-packages/" in name
                or "/lib/python3." in name)


def _encode(start, end):
    import array
    import os
    settings = end.get("allocator_settings", {})
    default_rules = (not settings.get("expandable_segments") and settings.get("max_split_size", -1) == -1
                     and not any(settings.get("roundup_power2_divisions", {}).values()))
    records = array.array("q", [1, 0, 0, 0, 0 if default_rules else 2])
    for seg in start["segments"]:
        blocks = seg["blocks"]
        records.extend((seg["device"], seg["address"], seg["total_size"], int(seg["segment_type"] == "small"),
                        len(blocks)))
        for b in blocks:
            records.extend((b["address"], b["size"], _BLOCK_STATES.get(b["state"], 0)))
        records[1] += 1
    sites = {}
    if any(len(trace) >= _MAX_ENTRIES for trace in end["device_traces"]):
        records[4] |= 1  # the ring wrapped: its start is lost, nothing to replay
    for device, trace in enumerate(end["device_traces"]):
        if records[4] & 1:
            break
        for e in trace:
            action = _ACTIONS.get(e["action"])
            if action is None:
                continue
            site = -1
            frames = e.get("frames")
            if action == 0 and frames:
                f = next((f for f in frames if _user_file(f["filename"])), frames[0])
                site = sites.setdefault("%s:%d in %s" % (os.path.basename(f["filename"]), f["line"], f["name"]),
                                        len(sites))
            records.extend((device, action, e["time_us"], e["addr"], e["size"], site))
            records[2] += 1
    totals = {}
    for seg in end["segments"]:
        allocated, reserved = totals.get(seg["device"], (0, 0))
        allocated += sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
        totals[seg["device"]] = (allocated, reserved + seg["total_size"])
    for device in range(len(end["device_traces"])):
        allocated, reserved = totals.get(device, (0, 0))
        records.extend((device, allocated, reserved))
        records[3] += 1
    _mem["records"] = records.tobytes()
    _mem["sites"] = "\n".join(sites)


def _memory_take(torch, keep_on):
    memory = torch.cuda.memory
    end = _snapshot(memory)
    start = _mem["start"]
    _mem["on"] = False
    _mem["start"] = None
    memory._record_memory_history(None)
    if keep_on:
        _memory_on(torch)
    _encode(start, end)


def memory(want, take):
    """Turns the allocator's history on or off with recording; with take,
    leaves a window's history in _mem and answers "taken"."""
    try:
        torch = sys.modules.get("torch")
        if torch is None or "torch.cuda" not in sys.modules:
            return "no torch"
        if take and _mem["on"]:
            _memory_take(torch, want)
            return "taken"
        if not want:
            if _mem["on"]:
                _mem["on"] = False
                _mem["start"] = None
                torch.cuda.memory._record_memory_history(None)
            return "off"
        return "on" if _mem["on"] else _memory_on(torch)
    except Exception as e:
        _mem["on"] = False
        return "error: %s: %s" % (type(e).__name__, e)
)PY";

constexpr int kFileInput = 257;  // Py_file_input
constexpr int kEvalInput = 258;  // Py_eval_input

struct PyApi {
  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // Py_IsFinalizing (3.13+) or _Py_IsFinalizing
  int (*add_pending_call)(int (*)(void*), void*) = nullptr;
  void* (*run_string)(const char*, int, void*, void*, void*) = nullptr;
  void* (*dict_new)() = nullptr;
  int (*dict_set_item_string)(void*, const char*, void*) = nullptr;
  void* (*eval_get_builtins)() = nullptr;
  const char* (*unicode_as_utf8)(void*) = nullptr;
  void (*dec_ref)(void*) = nullptr;
  void (*err_clear)() = nullptr;
  int (*err_exception_matches)(void*) = nullptr;
  void** exc_exception = nullptr;  // &PyExc_Exception
  void* (*dict_get_item_string)(void*, const char*) = nullptr;  // borrowed
  int (*bytes_as_string_and_size)(void*, char**, ssize_t*) = nullptr;

  bool Found() const {
    return is_initialized && is_finalizing && add_pending_call && run_string && dict_new && dict_set_item_string && eval_get_builtins &&
           unicode_as_utf8 && dec_ref && err_clear && err_exception_matches && exc_exception && dict_get_item_string &&
           bytes_as_string_and_size;
  }
};

template <typename T>
void Find(T* out, const char* name) {
  *out = reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

PyApi LoadApi() {
  PyApi api;
  Find(&api.is_initialized, "Py_IsInitialized");
  Find(&api.is_finalizing, "Py_IsFinalizing");
  if (api.is_finalizing == nullptr) Find(&api.is_finalizing, "_Py_IsFinalizing");
  Find(&api.add_pending_call, "Py_AddPendingCall");
  Find(&api.run_string, "PyRun_StringFlags");
  Find(&api.dict_new, "PyDict_New");
  Find(&api.dict_set_item_string, "PyDict_SetItemString");
  Find(&api.eval_get_builtins, "PyEval_GetBuiltins");
  Find(&api.unicode_as_utf8, "PyUnicode_AsUTF8");
  Find(&api.dec_ref, "Py_DecRef");
  Find(&api.err_clear, "PyErr_Clear");
  Find(&api.err_exception_matches, "PyErr_ExceptionMatches");
  Find(&api.exc_exception, "PyExc_Exception");
  Find(&api.dict_get_item_string, "PyDict_GetItemString");
  Find(&api.bytes_as_string_and_size, "PyBytes_AsStringAndSize");
  return api;
}

const PyApi& Api() {
  static const PyApi api = LoadApi();
  return api;
}

std::atomic<TorchOps> g_mode{TorchOps::kOff};
std::atomic<bool> g_active{false};  // operators or tensor memory follow recording
std::atomic<bool> g_modules{false};  // PROF_TORCH_OPS=...,modules
std::atomic<bool> g_want{false};
std::atomic<bool> g_queued{false};  // a pending call is queued and has not run yet
std::atomic<bool> g_unsent{false};  // g_want changed while no call could be queued (no interpreter yet)
std::atomic<bool> g_take{false};    // a window ended: hand its tensor memory over
TensorMemory* g_memory = nullptr;   // PROF_TORCH_MEMORY; null when off
void* g_globals = nullptr;          // the script's namespace (main thread, with the GIL)
bool g_script_failed = false;

// Runs `code` in the script's namespace; the result as text, or "" when
// it raised. An exception that is not an Exception (KeyboardInterrupt from
// the program's SIGINT handler, run at a boundary inside our lines) is left
// set and *raised = true: it is the program's, and goes on to it.
std::string Run(const PyApi& py, const char* code, int mode, bool* raised) {
  void* result = py.run_string(code, mode, g_globals, g_globals, nullptr);
  if (result == nullptr) {
    if (!py.err_exception_matches(*py.exc_exception)) {
      *raised = true;
      return "";
    }
    py.err_clear();
    return "";
  }
  std::string text;
  if (mode == kEvalInput) {
    const char* utf8 = py.unicode_as_utf8(result);
    if (utf8 != nullptr) text = utf8;
    else py.err_clear();
  }
  py.dec_ref(result);
  return text;
}

void Report(const std::string& what, bool shapes) {
  static std::atomic<bool> said_on{false}, said_busy{false}, said_gave_way{false}, said_error{false};
  if (what.rfind("on", 0) == 0 && !said_on.exchange(true)) {
    Log().info("PyTorch operators recorded while windows record (PyTorch's NVTX profiler on the main thread{}){}",
               shapes ? ", with input shapes" : "",
               what == "on" ? "" : "; module paths off: torch.compile has compiled code, which module hooks would recompile");
  } else if (what == "busy" && !said_busy.exchange(true)) {
    Log().info("PyTorch operators not recorded: the program's own PyTorch profiler is on (it keeps it)");
  } else if (what == "gave way" && !said_gave_way.exchange(true)) {
    Log().info("PyTorch operators: libprof's operator ranges gave way to a profiler the program started");
  } else if (what.rfind("error", 0) == 0 && !said_error.exchange(true)) {
    Log().warn("PyTorch operators off: {}", what);
  }
}

// The window's tensor memory the script left in _mem, to the collector;
// how many int64 records it was.
size_t HandOver(const PyApi& py) {
  TensorMemoryBatch batch;
  void* mem = py.dict_get_item_string(g_globals, "_mem");
  void* records = mem != nullptr ? py.dict_get_item_string(mem, "records") : nullptr;
  void* sites = mem != nullptr ? py.dict_get_item_string(mem, "sites") : nullptr;
  char* data = nullptr;
  ssize_t size = 0;
  const char* text = sites != nullptr ? py.unicode_as_utf8(sites) : nullptr;
  if (records == nullptr || text == nullptr || py.bytes_as_string_and_size(records, &data, &size) != 0) {
    py.err_clear();
    g_memory->NotComing("not recorded: the allocator's history could not be read");
    return 0;
  }
  batch.records.resize(static_cast<size_t>(size) / sizeof(int64_t));
  std::memcpy(batch.records.data(), data, batch.records.size() * sizeof(int64_t));
  batch.sites = text;
  batch.epoch_offset_ns = EpochOffsetNs();
  size_t count = batch.records.size();
  g_memory->Deliver(std::move(batch));
  return count;
}

// The window's status for what memory() answered without a hand-over.
std::string MemoryStatus(const std::string& what) {
  if (what == "busy") return "not recorded: the program records the allocator's history itself";
  if (what.rfind("error", 0) == 0) return "not recorded: " + what;
  return "";  // no torch, no CUDA in use: nothing to say
}

void ReportMemory(const std::string& what) {
  static std::atomic<bool> said_on{false}, said_busy{false}, said_error{false};
  if (what == "on" && !said_on.exchange(true)) {
    Log().info("PyTorch's tensor allocations recorded while windows record (the caching allocator's memory history)");
  } else if (what == "busy" && !said_busy.exchange(true)) {
    Log().info("PyTorch's tensor allocations not recorded: the program records the allocator's history itself");
  } else if (what.rfind("error", 0) == 0 && !said_error.exchange(true)) {
    Log().warn("PyTorch's tensor allocations not recorded: {}", what);
  }
}

// Py_AddPendingCall's function: the main thread, the GIL held.
int Apply(void*) {
  g_queued.store(false, std::memory_order_release);
  const PyApi& py = Api();
  bool raised = false;
  if (g_globals == nullptr && !g_script_failed) {
    g_globals = py.dict_new();
    if (g_globals == nullptr || py.dict_set_item_string(g_globals, "__builtins__", py.eval_get_builtins()) != 0) {
      py.err_clear();
      g_script_failed = true;
    } else {
      Run(py, kScript, kFileInput, &raised);
      if (raised) return -1;
      if (Run(py, "'ready'", kEvalInput, &raised) != "ready") g_script_failed = true;
    }
    if (g_script_failed) Report("error: the operator script did not load", false);
  }
  bool take = g_take.exchange(false, std::memory_order_acq_rel);
  if (g_script_failed) {
    if (take && g_memory != nullptr) g_memory->NotComing("not recorded: libprof's Python lines did not load");
    return 0;
  }
  bool want = g_want.load(std::memory_order_acquire);
  TorchOps mode = g_mode.load(std::memory_order_relaxed);
  if (mode != TorchOps::kOff) {
    bool shapes = mode == TorchOps::kShapes;
    std::string call = std::string("apply(") + (want ? "True" : "False") + ", " + (shapes ? "True" : "False") + ", " +
                       (g_modules.load(std::memory_order_relaxed) ? "True" : "False") + ")";
    std::string what = Run(py, call.c_str(), kEvalInput, &raised);
    if (raised) return -1;
    Report(what, shapes);
  }
  if (g_memory != nullptr) {
    std::string call = std::string("memory(") + (want ? "True" : "False") + ", " + (take ? "True" : "False") + ")";
    uint64_t start_ns = NowNs();
    std::string what = Run(py, call.c_str(), kEvalInput, &raised);
    if (raised) {
      if (take) g_memory->NotComing("");
      return -1;
    }
    if (what == "taken") {
      size_t records = HandOver(py);
      Log().debug("tensor memory: the allocator's history handed over on the main thread in {:.1f} ms ({} records)",
                  double(NowNs() - start_ns) / 1e6, records);
    } else if (take) {
      g_memory->NotComing(MemoryStatus(what));
    }
    g_memory->SetRecording(what == "on" || (what == "taken" && want));
    ReportMemory(what);
  }
  return 0;
}

std::string OwnPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ConfigureTorchOps), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// Queues Apply unless it is queued already; false when no interpreter runs.
bool Queue() {
  const PyApi& py = Api();
  // Nothing is queued into an interpreter that is not running yet (a window
  // from the process's start: asked again at the next step) or is shutting
  // down (its pending calls are run once more, then freed).
  if (!py.is_initialized() || py.is_finalizing()) {
    g_unsent.store(true, std::memory_order_relaxed);
    return false;
  }
  g_unsent.store(false, std::memory_order_relaxed);
  if (g_queued.exchange(true, std::memory_order_acq_rel)) return true;  // the queued call reads g_want when it runs
  if (py.add_pending_call(&Apply, nullptr) != 0) {
    g_queued.store(false, std::memory_order_release);
    g_unsent.store(true, std::memory_order_relaxed);
    return false;
  }
  return true;
}

}  // namespace

void ConfigureTorchOps(TorchOps mode, bool modules, TensorMemory* memory) {
  if (!Api().Found()) return;
  g_memory = memory;
  if (memory != nullptr) g_active.store(true, std::memory_order_relaxed);
  if (mode == TorchOps::kOff) return;
  g_modules.store(modules, std::memory_order_relaxed);
  if (modules) {
    Log().debug("module paths: global module hooks are installed in the program while a window warms up or "
                "records (not while torch.compile has compiled code)");
  }
  const char* nvtx = std::getenv("NVTX_INJECTION64_PATH");
  std::string own = OwnPath();
  if (nvtx == nullptr || *nvtx == 0) {
    if (own.empty() || setenv("NVTX_INJECTION64_PATH", own.c_str(), 1) != 0) return;
  } else if (own.empty() || std::strcmp(nvtx, own.c_str()) != 0) {
    char* real_nvtx = realpath(nvtx, nullptr);
    char* real_own = own.empty() ? nullptr : realpath(own.c_str(), nullptr);
    bool same = real_nvtx != nullptr && real_own != nullptr && std::strcmp(real_nvtx, real_own) == 0;
    std::free(real_nvtx);
    std::free(real_own);
    if (!same) {
      Log().info("PyTorch operators off: NVTX_INJECTION64_PATH names another tool ({}), which receives PyTorch's ranges",
                 nvtx);
      return;
    }
  }
  g_mode.store(mode, std::memory_order_relaxed);
  g_active.store(true, std::memory_order_relaxed);
}

void TorchOpsWanted(bool on) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  // Called at every recording step too: nothing new costs two loads.
  if (g_want.load(std::memory_order_relaxed) == on && !g_unsent.load(std::memory_order_relaxed)) return;
  g_want.store(on, std::memory_order_release);
  Queue();
}

void TorchWindowEnded() {
  // Only while the history is on: a Python process without PyTorch (or
  // without CUDA in use) owes nothing, and its window is not held up.
  if (g_memory == nullptr || !g_memory->recording()) return;
  g_memory->Expect();
  g_take.store(true, std::memory_order_release);
  if (!Queue() && g_take.exchange(false, std::memory_order_acq_rel)) g_memory->NotComing("");
}


}  // namespace prof::python
