#include "collectors/python/python_stacks.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "base/strings.h"
#include "collectors/python/safe_read.h"

namespace prof::python {

// Per-thread cache of raw stack -> stack id: the warm path takes no lock.
// Direct-mapped by hash; an entry is trusted only after comparing the raw
// frames with the table's stored copy.
struct CacheEntry {
  uint64_t hash = 0;
  const RawFrame* raw = nullptr;
  uint32_t depth = 0;
  uint32_t stack_id = 0;
};
constexpr size_t kCacheEntries = 1024;
struct ThreadCache {
  CacheEntry entries[kCacheEntries];
  // The thread's launcher slot (PythonStacks::Claim): claimed at its
  // first recorded launch, cleared when the thread exits. Kept here so that
  // a capture reaches both through one thread-local lookup.
  const PythonStacks* claim_owner = nullptr;
  PythonStacks::Launcher* claim = nullptr;
  ~ThreadCache() {
    if (claim != nullptr) claim->tid.store(0, std::memory_order_release);
  }
};
namespace {

// At most this many distinct stacks per process (ids fit HostEvent's 24-bit
// stack_id); past it new stacks record as kNoStack.
constexpr size_t kMaxStacks = (1u << 24) - 1;

thread_local std::unique_ptr<ThreadCache> t_cache;

ThreadCache& ThisThreadCache() {
  if (!t_cache) t_cache = std::make_unique<ThreadCache>();
  return *t_cache;
}

// What a thread without Python frames last found (see Borrow).
struct BorrowCache {
  const PythonStacks* owner = nullptr;
  const PythonStacks::Launcher* slot = nullptr;
  uint32_t tid = 0;
  uint64_t checked_ns = 0;
  uint64_t seen_call_ns = 0;
  uint32_t stack_id = 0;  // the answer while trusted
  uintptr_t top = 0;      // the innermost frame and instruction of the last walk
  uint64_t instr = 0;
  uint32_t walked_id = 0;  // and the stack it gave
};
thread_local std::unique_ptr<BorrowCache> t_borrow;  // on the heap: static TLS is scarce (see frame_walk.cpp)

uint32_t OwnTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

template <typename T>
T Symbol(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

uint64_t HashRawFrames(const RawFrame* raw, int n) {
  // One rotate and xor per frame on the serial chain (the per-frame word is
  // computed off it); the final mix spreads the bits over the cache index.
  uint64_t h = static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    uint64_t word = raw[i].code ^ (static_cast<uint64_t>(static_cast<uint32_t>(raw[i].instr)) * 0x9E3779B97F4A7C15ull) ^
                    static_cast<uint32_t>(raw[i].first_line);
    h = ((h << 13) | (h >> 51)) ^ word;
  }
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 33);
}

// --- StackTable --------------------------------------------------------------

size_t StackTable::RawFrameHash::operator()(const RawFrame& f) const { return HashRawFrames(&f, 1); }
size_t StackTable::FrameKeyHash::operator()(const FrameKey& k) const {
  RawFrame f{(uint64_t{k.file_id} << 32) | k.function_id, k.line, 0};
  return HashRawFrames(&f, 1);
}

StackTable::StackTable() {
  stacks_.resize(2);  // 0: no stack; 1: no Python frames (empty)
  frames_.resize(1);  // frame id 0 unused
}

uint32_t StackTable::FrameIdLocked(const FrameText& text) {
  FrameKey key{Strings().Intern(text.file), Strings().Intern(text.function), text.line};
  auto [it, inserted] = frame_ids_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back({key.file_id, key.function_id, key.line, 0});
  return it->second;
}

uint32_t StackTable::Intern(const RawFrame* raw, int n, uint64_t hash, const PyLayout& l, const PyTypes& t,
                            const RawFrame** stored, uint32_t via) {
  std::lock_guard<std::mutex> lock(mu_);
  auto range = by_hash_.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it) {
    const Stack& s = stacks_[it->second];
    if (s.via == via && s.raw.size() == static_cast<size_t>(n) && std::equal(s.raw.begin(), s.raw.end(), raw)) {
      *stored = s.raw.data();
      return it->second;
    }
  }
  if (stacks_.size() >= kMaxStacks) return kNoStack;
  Stack s;
  s.via = via;
  s.raw.assign(raw, raw + n);
  s.frames.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto [it, inserted] = frame_of_raw_.try_emplace(raw[i], 0);
    if (inserted) {
      FrameText text;
      // Another thread's frame: its code object may be gone by now.
      if (!(via != 0 ? ReadFrameTextSafe(l, t, raw[i], &text) : ReadFrameText(l, t, raw[i], &text))) {
        frame_of_raw_.erase(it);
        return kNoStack;
      }
      it->second = FrameIdLocked(text);
    }
    s.frames.push_back(it->second);
  }
  auto id = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back(std::move(s));
  by_hash_.emplace(hash, id);
  *stored = stacks_.back().raw.data();
  return id;
}

void StackTable::Snapshot(PythonInfo* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->frames = frames_;
  out->stacks.clear();
  out->stacks.reserve(stacks_.size());
  out->via.clear();
  for (const Stack& s : stacks_) {
    out->stacks.push_back(s.frames);
    if (s.via != 0) out->via.resize(out->stacks.size(), 0), out->via.back() = s.via;
  }
}

size_t StackTable::stack_count() {
  std::lock_guard<std::mutex> lock(mu_);
  return stacks_.size();
}

// --- PythonStacks ------------------------------------------------------------

PythonStacks::PythonStacks(bool enabled, int depth)
    : enabled_(enabled), depth_(depth < 1 ? 1 : depth > kMaxDepth ? kMaxDepth : depth) {
  if (!enabled_) state_.store(kOff, std::memory_order_relaxed);
}

void PythonStacks::UseInterpreterForTest(const Interpreter& interp) {
  std::lock_guard<std::mutex> lock(detect_mu_);
  interp_ = interp;
  status_ = "on (CPython " + interp.version + ")";
  report_status_ = true;
  state_.store(enabled_ ? kOn : kOff, std::memory_order_release);
}

void PythonStacks::TurnOff(const std::string& why) {
  std::lock_guard<std::mutex> lock(detect_mu_);
  if (state_.load(std::memory_order_relaxed) == kOff) return;
  state_.store(kOff, std::memory_order_release);
  status_ = "off (" + why + ")";
  Log().warn("Python stacks off: {}", why);
}

void PythonStacks::Detect() {
  std::lock_guard<std::mutex> lock(detect_mu_);
  if (state_.load(std::memory_order_acquire) != kUnknown) return;
  auto off = [this](const std::string& why, bool report) {
    status_ = "off (" + why + ")";
    report_status_ = report;
    state_.store(kOff, std::memory_order_release);
  };
  using VersionFn = const char* (*)();
  auto get_version = Symbol<VersionFn>("Py_GetVersion");
  auto this_thread = Symbol<uintptr_t (*)()>("PyGILState_GetThisThreadState");
  if (get_version == nullptr || this_thread == nullptr) return off("not a CPython process", false);
  // Py_GetVersion formats a static string; it takes no lock and needs no GIL.
  const char* text = get_version();
  int major = 0, minor = 0, micro = 0;
  if (text == nullptr || std::sscanf(text, "%d.%d.%d", &major, &minor, &micro) < 2) {
    Log().info("Python stacks off: cannot read the interpreter's version");
    return off("unknown CPython version", true);
  }
  std::string version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro);
  bool free_threaded = std::strstr(text, "free-threading") != nullptr;
  const PyLayout* layout = LayoutFor(major, minor, free_threaded);
  if (layout == nullptr && free_threaded && LayoutFor(major, minor) != nullptr) {
    Log().info("Python stacks off: CPython {} is a free-threading build (supported: 3.14t, 3.15t)", version);
    return off("CPython " + version + " free-threading build is not supported: 3.14t and 3.15t are", true);
  }
  if (layout == nullptr) {
    Log().info("Python stacks off: CPython {} is not supported (3.10 through 3.15)", version);
    return off("CPython " + version + " is not supported: 3.10 through 3.15", true);
  }
  if (free_threaded) version += "t";
  // 3.13+: the interpreter's own description of its layout must agree with
  // the table (a patch release or a build option that moved a field).
  if (layout->debug.version >= 0) {
    uint8_t offsets[1024] = {};
    auto runtime = Symbol<uintptr_t>("_PyRuntime");
    std::string mismatch = runtime == 0 ? "it exports no _PyRuntime"
                           : !SafeRead(runtime, offsets, sizeof offsets)
                               ? "its _PyRuntime cannot be read"
                               : DebugOffsetsMismatch(*layout, offsets, sizeof offsets);
    if (!mismatch.empty()) {
      Log().info("Python stacks off: CPython {}: {}", version, mismatch);
      return off("CPython " + version + ": " + mismatch, true);
    }
  }
  Interpreter interp;
  interp.layout = layout;
  interp.version = version;
  interp.this_thread_state = this_thread;
  interp.types.code = Symbol<uintptr_t>("PyCode_Type");
  interp.types.unicode = Symbol<uintptr_t>("PyUnicode_Type");
  interp.types.bytes = Symbol<uintptr_t>("PyBytes_Type");
  interp.types.none = Symbol<uintptr_t>("_Py_NoneStruct");
  interp.is_initialized = Symbol<int (*)()>("Py_IsInitialized");
  interp.is_finalizing = Symbol<int (*)()>(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
  interp.runtime = Symbol<uintptr_t>("_PyRuntime");
  if (interp.types.code == 0 || interp.types.unicode == 0 || interp.types.bytes == 0 ||
      interp.is_initialized == nullptr || interp.is_finalizing == nullptr) {
    Log().info("Python stacks off: CPython {} lacks a symbol they need", version);
    return off("CPython " + version + ": a needed symbol is missing", true);
  }
  interp_ = interp;
  const char* probe = nullptr;
  // Calls on a waiting thread's behalf need to know whether that thread is
  // out of the interpreter (3.11's GIL, 3.13+'s thread state) and a kernel
  // that lets the process read itself with process_vm_readv.
  can_borrow_ = (layout->tstate_state >= 0 || (layout->runtime_gil_locked >= 0 && interp.runtime != 0)) &&
                SafeRead(reinterpret_cast<uintptr_t>(&text), &probe, sizeof probe);
  status_ = "on (CPython " + version + ")";
  report_status_ = true;
  Log().info("Python stacks on: CPython {}, up to {} frames per call{}", version, depth_,
             can_borrow_ ? "" : "; calls of threads without Python frames stay unattributed");
  state_.store(kOn, std::memory_order_release);
}

uint32_t PythonStacks::Capture(uint64_t now_ns, bool launch) {
  try {
    uint8_t state = state_.load(std::memory_order_acquire);
    if (state == kOff) return kNoStack;
    if (state == kUnknown) {
      Detect();
      if (state_.load(std::memory_order_acquire) != kOn) return kNoStack;
    }
    const Interpreter& in = interp_;
    // Daemon threads can outlive the interpreter's finalization, which frees
    // their thread states: no walk once it has begun.
    if (!in.is_initialized() || in.is_finalizing()) return kNoStack;
    uintptr_t tstate = in.this_thread_state();
    if (tstate == 0) return Borrow(now_ns);
    RawFrame raw[kMaxDepth];
    int n = WalkFrames(*in.layout, in.types, tstate, raw, depth_);
    if (n < 0) {
      TurnOff("a thread's frames did not match the CPython " + in.version + " layout");
      return kNoStack;
    }
    if (n == 0) return Borrow(now_ns);
    ThreadCache& cache = ThisThreadCache();
    if (cache.claim_owner == this) {  // a kernel-launching Python thread: its calls end a wait
      cache.claim->last_call_ns.store(now_ns, std::memory_order_release);
      if (launch) cache.claim->last_launch_ns.store(now_ns, std::memory_order_relaxed);
    } else if (launch && can_borrow_) {
      Claim(cache, tstate, now_ns);
    }
    return Lookup(cache, raw, n, HashRawFrames(raw, n));
  } catch (...) {
    return kNoStack;  // a wrapper's caller is C code: nothing may unwind into it
  }
}

uint32_t PythonStacks::Lookup(ThreadCache& cache, const RawFrame* raw, int n, uint64_t hash) {
  CacheEntry& e = cache.entries[hash & (kCacheEntries - 1)];
  if (e.hash == hash && e.depth == static_cast<uint32_t>(n) &&
      std::memcmp(e.raw, raw, sizeof(RawFrame) * static_cast<size_t>(n)) == 0) {
    return e.stack_id;
  }
  const RawFrame* stored = nullptr;
  uint32_t id = table_.Intern(raw, n, hash, *interp_.layout, interp_.types, &stored);
  if (id != kNoStack) e = {hash, stored, static_cast<uint32_t>(n), id};
  return id;
}

void PythonStacks::Claim(ThreadCache& cache, uintptr_t tstate, uint64_t now_ns) {
  for (int i = 0; i < kMaxLaunchers; ++i) {
    uint32_t free = 0;
    Launcher& slot = launchers_[i];
    if (slot.tid.load(std::memory_order_relaxed) != 0 ||
        !slot.tid.compare_exchange_strong(free, OwnTid(), std::memory_order_acq_rel)) {
      continue;
    }
    slot.tstate.store(tstate, std::memory_order_relaxed);
    slot.last_call_ns.store(now_ns, std::memory_order_release);
    slot.last_launch_ns.store(now_ns, std::memory_order_relaxed);
    cache.claim_owner = this;
    cache.claim = &slot;
    int high = launcher_high_.load(std::memory_order_acquire);
    while (high < i + 1 && !launcher_high_.compare_exchange_weak(high, i + 1, std::memory_order_acq_rel)) {
    }
    return;
  }
  // Every slot taken: this thread is not a candidate.
}

bool PythonStacks::OutOfInterpreter(uintptr_t tstate) {
  const PyLayout& l = *interp_.layout;
  if (l.tstate_state >= 0) {  // 3.13+: detached (in a C call or waiting for the GIL) or suspended
    int32_t state = 0;
    return SafeRead(tstate + static_cast<uintptr_t>(l.tstate_state), &state, sizeof state) &&
           state != l.state_attached;
  }
  if (l.runtime_gil_locked >= 0 && interp_.runtime != 0) {  // 3.11: the GIL is free or another thread's
    int32_t locked = 0;
    uintptr_t holder = 0;
    SafeSpan spans[2] = {{interp_.runtime + static_cast<uintptr_t>(l.runtime_gil_locked), &locked, sizeof locked},
                         {interp_.runtime + static_cast<uintptr_t>(l.runtime_gil_holder), &holder, sizeof holder}};
    return SafeRead(spans, 2) && (locked == 0 || holder != tstate);
  }
  return false;
}

// A call from a thread without Python frames. The candidate is the Python
// thread that launched kernels most recently (not this thread); its stack
// is charged when it is out of the interpreter. What was found is trusted
// for a while, so that most calls cost a few loads: until the candidate
// makes a recorded call of its own (it is back in Python) or the trust
// period ends (kTrustFoundNs, kTrustNoneNs), after which it is checked
// again with two or three reads; its frames are walked again only when its
// innermost frame or instruction changed.
uint32_t PythonStacks::Borrow(uint64_t now_ns) {
  if (!can_borrow_) return kNoPythonFrames;
  int high = launcher_high_.load(std::memory_order_acquire);
  if (high == 0) return kNoPythonFrames;
  uint32_t self = 0;
  const Launcher* best = nullptr;
  uint64_t best_ns = 0;
  for (int i = 0; i < high; ++i) {
    const Launcher& c = launchers_[i];
    uint64_t at = c.last_launch_ns.load(std::memory_order_relaxed);
    if (at <= best_ns || c.tid.load(std::memory_order_relaxed) == 0) continue;
    if (self == 0) self = OwnTid();
    if (c.tid.load(std::memory_order_relaxed) == self) continue;
    best = &c;
    best_ns = at;
  }
  if (best == nullptr) return kNoPythonFrames;
  if (!t_borrow) t_borrow = std::make_unique<BorrowCache>();
  BorrowCache& cache = *t_borrow;
  if (cache.owner != this) cache = BorrowCache{this};
  uint32_t tid = best->tid.load(std::memory_order_acquire);
  uintptr_t tstate = best->tstate.load(std::memory_order_relaxed);
  uint64_t last_call = best->last_call_ns.load(std::memory_order_acquire);
  uint64_t trust = cache.stack_id > kNoPythonFrames ? kTrustFoundNs : kTrustNoneNs;
  if (cache.slot == best && cache.tid == tid && cache.seen_call_ns == last_call && now_ns >= cache.checked_ns &&
      now_ns - cache.checked_ns < trust) {
    return cache.stack_id;
  }
  if (cache.slot != best || cache.tid != tid) cache.top = 0, cache.instr = 0, cache.walked_id = 0;
  cache.slot = best;
  cache.tid = tid;
  cache.checked_ns = now_ns;
  cache.seen_call_ns = last_call;
  cache.stack_id = kNoPythonFrames;
  const PyLayout& l = *interp_.layout;
  uintptr_t top = 0, top_after = 0;
  uint64_t instr = 0, instr_after = 0;
  if (!OutOfInterpreter(tstate) || !ReadTop(l, tstate, &top, &instr) || top == 0) return kNoPythonFrames;
  if (top != cache.top || instr != cache.instr || cache.walked_id == 0) {
    RawFrame raw[kMaxDepth];
    int n = WalkFramesSafe(l, interp_.types, tstate, raw, depth_);
    // The walk counts only if the thread stayed out of the interpreter with
    // the same innermost frame and instruction throughout.
    if (n <= 0 || !ReadTop(l, tstate, &top_after, &instr_after) || top_after != top || instr_after != instr ||
        !OutOfInterpreter(tstate)) {
      return kNoPythonFrames;
    }
    const RawFrame* stored = nullptr;
    uint64_t hash = HashRawFrames(raw, n) ^ (uint64_t{tid} * 0x9E3779B97F4A7C15ull);
    cache.walked_id = table_.Intern(raw, n, hash, l, interp_.types, &stored, tid);
    cache.top = top;
    cache.instr = instr;
    if (cache.walked_id == kNoStack) return kNoPythonFrames;
  }
  cache.stack_id = cache.walked_id;
  return cache.stack_id;
}

void PythonStacks::Snapshot(PythonInfo* out) {
  {
    std::lock_guard<std::mutex> lock(detect_mu_);
    if (!report_status_) {
      *out = PythonInfo{};
      return;
    }
    out->status = status_;
  }
  table_.Snapshot(out);
}

}  // namespace prof::python
