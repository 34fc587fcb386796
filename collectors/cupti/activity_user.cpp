// The program's client of CUPTI's process-wide activity API, seen through
// the functions libprof.so exports (activity_user.h): each call is noted,
// the collector is told of a claim before the call goes on (so it can hand
// the activity API over first) and of a release after it, and the call is
// forwarded unchanged to the process's libcupti.
#include "collectors/cupti/activity_user.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <utility>
#include <mutex>
#include <new>
#include <string>

#include "base/loader_guard.h"
#include "collectors/cupti/activity_collector.h"

namespace prof::cupti {
namespace {

std::mutex g_user_mutex;  // leaf: guards g_user
UserClient g_user;
std::atomic<CuptiCollector*> g_collector{nullptr};

std::mutex g_forward_mutex;  // leaf: guards the lookup
std::atomic<const ForwardedCupti*> g_forward{nullptr};
const ForwardedCupti* g_forward_override = nullptr;

// The path of the loaded libcupti into a fixed buffer (nothing may throw
// inside dl_iterate_phdr's walk).
struct CuptiPath {
  char path[4096] = {};
};

int FindCupti(dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] == '\0') return 0;
  const char* slash = std::strrchr(name, '/');
  const char* base = slash != nullptr ? slash + 1 : name;
  if (std::strncmp(base, "libcupti.so", 11) != 0) return 0;
  auto* found = static_cast<CuptiPath*>(data);
  std::snprintf(found->path, sizeof(found->path), "%s", name);
  return 1;
}

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
}

// The loaded libcupti's own functions (never libprof's exports: a handle's
// lookup starts at that library). Looked up again while none is loaded.
const ForwardedCupti* Forwarded() {
  const ForwardedCupti* table = g_forward.load(std::memory_order_acquire);
  if (table != nullptr) return table;
  std::lock_guard<std::mutex> lock(g_forward_mutex);
  if (g_forward_override != nullptr) return g_forward_override;
  table = g_forward.load(std::memory_order_acquire);
  if (table != nullptr) return table;
  CuptiPath found;
  void* handle = nullptr;
  {
    LoaderSection section;  // base/loader_guard.h
    dl_iterate_phdr(FindCupti, &found);
    if (found.path[0] != '\0') handle = dlopen(found.path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  }
  if (handle == nullptr) return nullptr;  // kept open: CUPTI is never unloaded
  auto* resolved = new (std::nothrow) ForwardedCupti;  // one per process, never freed (used until exit)
  if (resolved == nullptr) return nullptr;
  Resolve(handle, "cuptiActivityRegisterCallbacks", &resolved->RegisterCallbacks);
  Resolve(handle, "cuptiActivityRegisterTimestampCallback", &resolved->RegisterTimestampCallback);
  Resolve(handle, "cuptiActivityEnable", &resolved->Enable);
  Resolve(handle, "cuptiActivityDisable", &resolved->Disable);
  Resolve(handle, "cuptiActivitySetAttribute", &resolved->SetAttribute);
  Resolve(handle, "cuptiSetThreadIdType", &resolved->SetThreadIdType);
  Resolve(handle, "cuptiActivityFlushAll", &resolved->FlushAll);
  Resolve(handle, "cuptiFinalize", &resolved->Finalize);
  g_forward.store(resolved, std::memory_order_release);
  return resolved;
}

// Runs libprof's part of one of the program's calls: nothing of it may
// unwind into the program (its call is forwarded whatever happens here).
template <typename Fn>
void NoThrow(Fn&& fn) {
  try {
    fn();
  } catch (...) {
  }
}

// Notes what the program set (under the client's mutex, through `note`).
template <typename NoteFn>
void Note(const void* caller, NoteFn&& note) {
  std::lock_guard<std::mutex> lock(g_user_mutex);
  note(g_user);
  if (g_user.who.empty()) g_user.who = DescribeCaller(caller);
}

// Notes a claim, then tells the collector, which may hand the activity API
// over before the call goes on.
template <typename NoteFn>
void Claim(const char* call, int arg, const void* caller, NoteFn&& note) {
  NoThrow([&] {
    Note(caller, [&](UserClient& u) {
      note(u);
      u.claimed = true;
    });
    CuptiCollector* collector = g_collector.load(std::memory_order_acquire);
    if (collector != nullptr) {
      collector->OnOtherClientClaims(arg < 0 ? std::string(call) : std::string(call) + "(" + std::to_string(arg) + ")");
    }
  });
}

// A call that sets state of the activity API: forwarded now, or kept for
// the hand-over while libprof holds the API (CUPTI_SUCCESS).
template <typename Forward>
CUptiResult Setting(Forward&& forward) {
  CuptiCollector* collector = g_collector.load(std::memory_order_acquire);
  if (collector == nullptr) return forward();
  bool forwarded = false;
  try {
    return collector->OtherClientSetting([&] {
      forwarded = true;
      return forward();
    });
  } catch (...) {
    return forwarded ? CUPTI_SUCCESS : forward();
  }
}

}  // namespace

UserClient SnapshotUserClient() {
  std::lock_guard<std::mutex> lock(g_user_mutex);
  return g_user;
}

void SetSharingCollector(CuptiCollector* collector) { g_collector.store(collector, std::memory_order_release); }

void ForgetSharingCollector(CuptiCollector* collector) {
  g_collector.compare_exchange_strong(collector, nullptr, std::memory_order_acq_rel);
}

void SetForwardedCuptiForTest(const ForwardedCupti* table) {
  std::lock_guard<std::mutex> lock(g_forward_mutex);
  g_forward_override = table;
  g_forward.store(table, std::memory_order_release);
}

void ResetUserClient() {
  std::lock_guard<std::mutex> lock(g_user_mutex);
  g_user = UserClient{};
}

std::string DescribeCaller(const void* addr) {
  Dl_info info{};
  if (addr == nullptr || dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "another client";
  const char* slash = std::strrchr(info.dli_fname, '/');
  std::string base = slash != nullptr ? slash + 1 : info.dli_fname;
  // PyTorch links Kineto, torch.profiler's CUPTI client, into libtorch_cpu.
  if (base.rfind("libtorch", 0) == 0 || base.rfind("libkineto", 0) == 0) return base + " (PyTorch's torch.profiler)";
  return base;
}

CUptiResult UserRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete,
                                  const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->RegisterCallbacks == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  if (request != nullptr && complete != nullptr) {
    Claim("cuptiActivityRegisterCallbacks", -1, caller, [&](UserClient& u) {
      u.request = request;
      u.complete = complete;
    });
  }
  return real->RegisterCallbacks(request, complete);
}

CUptiResult UserEnable(CUpti_ActivityKind kind, const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->Enable == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  Claim("cuptiActivityEnable", static_cast<int>(kind), caller, [](UserClient&) {});
  CUptiResult result = real->Enable(kind);
  if (result == CUPTI_SUCCESS && static_cast<uint32_t>(kind) < 256) {
    NoThrow([&] {
      std::lock_guard<std::mutex> lock(g_user_mutex);
      g_user.kinds.set(static_cast<uint32_t>(kind));
    });
  }
  return result;
}

CUptiResult UserRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp, const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->RegisterTimestampCallback == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  if (timestamp == nullptr) return real->RegisterTimestampCallback(timestamp);  // CUPTI's own answer
  NoThrow([&] { Note(caller, [&](UserClient& u) { u.timestamp = timestamp; }); });
  return Setting([&] { return real->RegisterTimestampCallback(timestamp); });
}

CUptiResult UserDisable(CUpti_ActivityKind kind, const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->Disable == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  NoThrow([&] {
    Note(caller, [&](UserClient& u) {
      if (static_cast<uint32_t>(kind) < 256) u.kinds.reset(static_cast<uint32_t>(kind));
    });
  });
  // While libprof holds the activity API the kind is libprof's, which the
  // program never enabled: off for the program already.
  return Setting([&] { return real->Disable(kind); });
}

CUptiResult UserSetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value, const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->SetAttribute == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  if (size == nullptr || value == nullptr || *size == 0 || *size > 64) return real->SetAttribute(attr, size, value);
  NoThrow([&] {
    Note(caller, [&](UserClient& u) {
      const auto* bytes = static_cast<const uint8_t*>(value);
      u.attributes[static_cast<int>(attr)].assign(bytes, bytes + *size);
    });
  });
  return Setting([&] { return real->SetAttribute(attr, size, value); });
}

CUptiResult UserSetThreadIdType(CUpti_ActivityThreadIdType type, const void* caller) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->SetThreadIdType == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  NoThrow([&] {
    Note(caller, [&](UserClient& u) {
      u.thread_id_set = true;
      u.thread_id = type;
    });
  });
  return Setting([&] { return real->SetThreadIdType(type); });
}

CUptiResult UserFlushAll(uint32_t flag) {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->FlushAll == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  CuptiCollector* collector = g_collector.load(std::memory_order_acquire);
  // Nothing in CUPTI is the program's while libprof holds the activity API
  // (a forced flush would cost libprof the times of work still running).
  // Not under the collector's lock: CUPTI runs the program's bufferCompleted.
  bool held = false;
  NoThrow([&] { held = collector != nullptr && collector->HoldsActivityApi(); });
  if (held) return CUPTI_SUCCESS;
  CUptiResult result = real->FlushAll(flag);
  // Forced, with none of its kinds on: every buffer of the program's is back
  // in its hands (torch.profiler's stop disables its kinds, then does this).
  if ((flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 && collector != nullptr) {
    NoThrow([&] {
      bool released = false;
      {
        std::lock_guard<std::mutex> lock(g_user_mutex);
        released = g_user.claimed && g_user.kinds.none();
      }
      if (released) collector->OnOtherClientReleased();
    });
  }
  return result;
}

CUptiResult UserFinalize() {
  const ForwardedCupti* real = Forwarded();
  if (real == nullptr || real->Finalize == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  CuptiCollector* collector = g_collector.load(std::memory_order_acquire);
  // Everything CUPTI holds is discarded: libprof's records first.
  if (collector != nullptr) NoThrow([&] { collector->OnOtherClientFinalizing(); });
  CUptiResult result = real->Finalize();
  if (result == CUPTI_SUCCESS) {
    NoThrow([&] {
      ResetUserClient();
      if (collector != nullptr) collector->OnOtherClientFinalized();
    });
  }
  return result;
}

}  // namespace prof::cupti
