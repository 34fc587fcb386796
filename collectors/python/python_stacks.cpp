#include "collectors/python/python_stacks.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "agent/log.h"
#include "agent/strings.h"

namespace prof::python {
namespace {

// At most this many distinct stacks per process (ids fit HostEvent's 24-bit
// stack_id); past it new stacks record as kNoStack.
constexpr size_t kMaxStacks = (1u << 24) - 1;

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
};
thread_local std::unique_ptr<ThreadCache> t_cache;

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
                            const RawFrame** stored) {
  std::lock_guard<std::mutex> lock(mu_);
  auto range = by_hash_.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it) {
    const Stack& s = stacks_[it->second];
    if (s.raw.size() == static_cast<size_t>(n) && std::equal(s.raw.begin(), s.raw.end(), raw)) {
      *stored = s.raw.data();
      return it->second;
    }
  }
  if (stacks_.size() >= kMaxStacks) return kNoStack;
  Stack s;
  s.raw.assign(raw, raw + n);
  s.frames.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto [it, inserted] = frame_of_raw_.try_emplace(raw[i], 0);
    if (inserted) {
      FrameText text;
      if (!ReadFrameText(l, t, raw[i], &text)) {
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
  for (const Stack& s : stacks_) out->stacks.push_back(s.frames);
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
  const PyLayout* layout = LayoutFor(major, minor);
  if (layout == nullptr) {
    Log().info("Python stacks off: CPython {} is not supported (3.10 through 3.13)", version);
    return off("CPython " + version + " is not supported: 3.10 through 3.13", true);
  }
  if (std::strstr(text, "free-threading") != nullptr) {
    Log().info("Python stacks off: CPython {} is a free-threading build (not supported)", version);
    return off("CPython " + version + " free-threading build is not supported", true);
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
  if (interp.types.code == 0 || interp.types.unicode == 0 || interp.types.bytes == 0 ||
      interp.is_initialized == nullptr || interp.is_finalizing == nullptr) {
    Log().info("Python stacks off: CPython {} lacks a symbol they need", version);
    return off("CPython " + version + ": a needed symbol is missing", true);
  }
  interp_ = interp;
  status_ = "on (CPython " + version + ")";
  report_status_ = true;
  Log().info("Python stacks on: CPython {}, up to {} frames per call", version, depth_);
  state_.store(kOn, std::memory_order_release);
}

uint32_t PythonStacks::Capture() {
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
    if (tstate == 0) return kNoPythonFrames;
    RawFrame raw[kMaxDepth];
    int n = WalkFrames(*in.layout, in.types, tstate, raw, depth_);
    if (n < 0) {
      TurnOff("a thread's frames did not match the CPython " + in.version + " layout");
      return kNoStack;
    }
    if (n == 0) return kNoPythonFrames;
    return Lookup(raw, n, HashRawFrames(raw, n));
  } catch (...) {
    return kNoStack;  // a wrapper's caller is C code: nothing may unwind into it
  }
}

uint32_t PythonStacks::Lookup(const RawFrame* raw, int n, uint64_t hash) {
  if (!t_cache) t_cache = std::make_unique<ThreadCache>();
  ThreadCache& cache = *t_cache;
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
