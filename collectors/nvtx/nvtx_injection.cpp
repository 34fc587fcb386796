// NVTX injection: the NVTX library (header-only nvtx3 in the host) dlopens
// NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2 with a function
// that hands out its callback tables; we fill the push/pop, start/end,
// domain and string-registration slots. Each range start may be a step
// marker (PROF_STEP=nvtx:<regex>), and each start and end an edge of a
// PROF_RANGE=nvtx:<regex> range; while a window records, finished ranges go
// to the NvtxStore. A range in a domain the program created is named
// `domain@name` (the default domain's ranges keep their bare name).
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/clock.h"
#include "base/config.h"
#include "base/export.h"
#include "base/hot_state.h"
#include "base/log.h"
#include "base/signal_deferral.h"
#include "base/strings.h"
#include "base/thread_id.h"
#include "base/agent_hooks.h"
#include "collectors/nvtx/torch_op_name.h"
#include "model/observed_event.h"

namespace prof::nvtx {
namespace {

constexpr int kMaxDepth = 64;
// Start/end ranges open at once (about 64 bytes each); past it a range is not
// followed (its end finds nothing).
constexpr size_t kMaxStarted = 1u << 14;

struct OpenRange {
  uint64_t start_ns;
  uint32_t name_id;
};

// Push/pop ranges nest per thread.
struct ThreadStack {
  OpenRange ranges[kMaxDepth];
  int depth = 0;
};
thread_local ThreadStack t_stack;

// A PyTorch operator's range (torch_op_name.h) carries its op id, shapes and
// sequence number beside the thread's stack, in an array made at the
// thread's first operator range (on the heap: static TLS is scarce).
struct OpenOp {
  uint32_t op_id = 0;
  uint32_t shapes_id = 0;
  int32_t seq = -1;
  bool own = false;  // pushed while libprof records PyTorch: an operator or a module call
};
struct ThreadOps {
  OpenOp ops[kMaxDepth];
};
thread_local std::unique_ptr<ThreadOps> t_ops;

// Start/end ranges may end on another thread: keyed by their id.
std::mutex g_started_mu;
std::unordered_map<uint64_t, std::pair<OpenRange, uint32_t>>* g_started = nullptr;  // id -> range, tid
std::atomic<uint64_t> g_next_range_id{1};

std::string Narrow(const wchar_t* w) {
  std::string out;
  for (; w != nullptr && *w != 0; ++w) out += (*w < 0x80) ? static_cast<char>(*w) : '?';
  return out;
}

bool Recording() { return (LoadHotBits() & kHotRecording) != 0; }

// A range's name is interned only while something needs it: a window warming
// up or recording, or a step source that matches range names. Otherwise the
// range carries no name (it is never stored), so a program that names every
// range differently costs no memory between windows (base/strings.h).
bool NamesWanted() { return (LoadHotBits() & (kHotRecording | kHotNvtxNames)) != 0; }

// The first name the table could not hold is said once.
void NoteDropped(uint32_t id) {
  static std::atomic<bool> said{false};
  if (id != kDroppedNameId || said.exchange(true)) return;
  Log().warn("NVTX names past the name budget (PROF_BUFFER_MB/16) are not kept: such ranges are named '{}' and "
             "counted in libprof.losses.nvtx_names_dropped",
             kDroppedNameText);
}

uint32_t InternName(std::string_view text) {
  uint32_t id = Strings().InternName(text);
  NoteDropped(id);
  return id;
}

// A loop pushes the same few literals every step, and interning hashes the
// text under the string table's mutex. Per thread, four recent messages by
// address; a hit also compares the text (a caller may reuse a buffer for
// another name) and the table's generation (ids the table has released are
// not handed out again), so a stale id is never returned.
struct InternCache {
  static constexpr size_t kText = 48;
  struct Entry {
    const char* ptr = nullptr;
    uint32_t id = 0;
    uint32_t generation = 0;
    char text[kText];
  };
  Entry entries[4];
};
thread_local InternCache t_intern;

uint32_t InternCached(const char* s) {
  if (s == nullptr || !NamesWanted()) return 0;
  InternCache::Entry& e = t_intern.entries[(reinterpret_cast<uintptr_t>(s) >> 4) & 3];
  uint32_t generation = Strings().generation();
  if (e.ptr == s && e.generation == generation && std::strncmp(s, e.text, InternCache::kText) == 0) return e.id;
  uint32_t id = InternName(s);
  size_t n = strnlen(s, InternCache::kText);
  if (n < InternCache::kText && id != kDroppedNameId) {  // longer names are interned every time
    std::memcpy(e.text, s, n + 1);
    e.ptr = s;
    e.id = id;
    e.generation = generation;
  }
  return id;
}

uint32_t InternWide(const wchar_t* w) { return NamesWanted() ? InternName(Narrow(w)) : 0; }

uint32_t NameOf(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return InternCached(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return InternWide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      // Our registered handles are interned ids (see RegisterStringA).
      return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a->message.registered));
    default: return 0;
  }
}

// tid 0: the calling thread (its id is looked up only when recording).
void Finish(const OpenRange& r, uint32_t depth, uint32_t tid = 0, const OpenOp& op = OpenOp{}) {
  if (!Recording()) return;
  NvtxRange range{};
  range.start_ns = r.start_ns;
  range.end_ns = NowNs();
  range.name_id = r.name_id;
  range.tid = tid != 0 ? tid : ThisThreadId();
  range.depth = depth;
  range.op_id = op.op_id;
  range.shapes_id = op.shapes_id;
  range.seq = op.seq;
  range.module_call = op.own && op.op_id == 0;
  hooks::RecordNvtxRange(range);
}

// The marker path: a matching range may end a step (and open a window), so
// it is observed before the range's start time is taken; its end (for
// PROF_RANGE) after the range was recorded. key pairs the two
// (agent/steps/capture_range.h).
// text: the ASCII name as given (matched when the table dropped it), if any.
void ObserveRange(MarkerSite site, uint32_t name_id, const char* text, uint64_t key) {
  // Only PROF_STEP=nvtx, auto (tokens) and PROF_RANGE=nvtx look at ranges on
  // the marker path, and each sets kHotNvtxNames while it does.
  if ((LoadHotBits() & kHotNvtxNames) == 0) return;
  // A range's end closes only a PROF_RANGE=nvtx window: no step source
  // marks at it (nvtx: and auto look at starts).
  if (site == MarkerSite::kNvtxRangeEnd && !hooks::RangeEndsWanted()) return;
  ObservedEvent event;
  event.site = site;
  event.feed = MarkerFeed::kNvtx;
  event.name_id = name_id;
  event.range_key = key;
  if (name_id == kDroppedNameId && text != nullptr) event.name_text = text;
  hooks::Observe(event);
}

// Push/pop ranges: the thread (its stack's address, below 2^48) and the
// level. Start/end ranges: their id, with the top bit set.
uint64_t PushKey(const void* stack, int level) {
  return (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(stack)) << 16) | (static_cast<uint64_t>(level) & 0xFFFF);
}
uint64_t StartKey(uint64_t id) { return id | (1ull << 63); }

const char* AsciiOf(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr;
}

int Push(uint32_t name_id, const char* text = nullptr, const OpenOp* op = nullptr) {
  ThreadStack& s = t_stack;
  int level = s.depth;
  // PyTorch's operator and module ranges are never step markers or range
  // edges: they come and go with recording (collectors/python/torch_ops.h).
  if (op == nullptr || !op->own) ObserveRange(MarkerSite::kNvtxRange, name_id, text, PushKey(&s, level));
  // A range pushed while nothing records started before any window that could
  // hold its end, and NvtxStore::Take keeps only ranges that started inside
  // the window: its start time is never looked at, so no clock is read.
  if (s.depth < kMaxDepth) {
    s.ranges[s.depth] = {Recording() ? NowNs() : 0, name_id};
    if (op != nullptr && !t_ops) t_ops = std::make_unique<ThreadOps>();
    if (t_ops) t_ops->ops[s.depth] = op != nullptr ? *op : OpenOp{};
  }
  ++s.depth;
  return level;
}

// An ASCII range name: a PyTorch operator's (while recording) is split into
// its parts first, so that its name and shapes are interned, not its text.
int PushAscii(const char* m) {
  if (m == nullptr || !Recording()) return Push(InternCached(m), m);
  OpenOp op;
  op.own = true;
  if (IsModuleCall(m)) return Push(InternCached(m), m, &op);
  TorchOpName parsed;
  if (!ParseTorchOpName(m, &parsed)) return Push(InternCached(m), m);
  op.op_id = static_cast<uint32_t>(parsed.op_id);
  op.seq = parsed.seq > INT32_MAX ? -1 : static_cast<int32_t>(parsed.seq);
  op.shapes_id = parsed.shapes.empty() ? 0 : InternName(parsed.shapes);
  return Push(InternName(parsed.name), nullptr, &op);
}

int Pop() {
  ThreadStack& s = t_stack;
  if (s.depth == 0) return -1;
  --s.depth;
  uint32_t name_id = 0;
  if (s.depth < kMaxDepth) {
    // Only a range that started while recording is kept (its start is set),
    // so an operator slot left from an earlier range is never read for it.
    const OpenRange& r = s.ranges[s.depth];
    const OpenOp op = t_ops && r.start_ns != 0 ? t_ops->ops[s.depth] : OpenOp{};
    Finish(r, static_cast<uint32_t>(s.depth), 0, op);
    name_id = r.name_id;
    if (op.own) return s.depth;  // an operator's or module call's: not observed
  }
  ObserveRange(MarkerSite::kNvtxRangeEnd, name_id, nullptr, PushKey(&s, s.depth));
  return s.depth;
}

nvtxRangeId_t Start(uint32_t name_id, const char* text = nullptr) {
  uint64_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  ObserveRange(MarkerSite::kNvtxRange, name_id, text, StartKey(id));
  // As for Push: a range started while nothing records is never stored, so
  // it is not kept open either (a program that never ends its ranges would
  // otherwise fill the map between windows).
  if (!Recording()) return id;
  std::lock_guard<std::mutex> lock(g_started_mu);
  if (g_started == nullptr) g_started = new std::unordered_map<uint64_t, std::pair<OpenRange, uint32_t>>;
  if (g_started->size() < kMaxStarted) (*g_started)[id] = {{NowNs(), name_id}, ThisThreadId()};
  return id;
}

void End(nvtxRangeId_t id) {
  std::pair<OpenRange, uint32_t> r;
  {
    std::lock_guard<std::mutex> lock(g_started_mu);
    if (g_started == nullptr) return;
    auto it = g_started->find(id);
    if (it == g_started->end()) return;
    r = it->second;
    g_started->erase(it);
  }
  Finish(r.first, 0, r.second);
  ObserveRange(MarkerSite::kNvtxRangeEnd, r.first.name_id, nullptr, StartKey(id));
}

// Runs f; an exception (allocation failure) never unwinds into the host's
// NVTX call: the range is then simply not seen.
template <typename R, typename F>
R Guarded(R fallback, F f) {
  // Interning takes the string table's mutex, which sealing a window needs.
  ExitSignalDeferral defer;
  try {
    return f();
  } catch (...) {
    return fallback;
  }
}


// While nothing records and nothing looks at ranges (no window warming up or
// recording, no kHotNvtxNames): a push only counts its level (the range
// carries no name and is never stored) and a pop only uncounts it, as Push
// and Pop would. No lock is taken and nothing allocates, so neither the
// exit-signal deferral nor the exception guard is needed.
bool Idle() { return (LoadHotBits() & (kHotRecording | kHotNvtxNames)) == 0; }

int PushIdle() {
  ThreadStack& s = t_stack;
  int level = s.depth;
  if (s.depth < kMaxDepth) s.ranges[s.depth] = {0, 0};
  ++s.depth;
  return level;
}

int PopIdle() {
  ThreadStack& s = t_stack;
  return s.depth == 0 ? -1 : --s.depth;
}

// Core module callbacks.
int NVTX_API RangePushA(const char* m) {
  if (Idle()) return PushIdle();
  return Guarded(-1, [&] { return PushAscii(m); });
}
int NVTX_API RangePushW(const wchar_t* m) {
  if (Idle()) return PushIdle();
  return Guarded(-1, [&] { return Push(InternWide(m)); });
}
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  if (Idle()) return PushIdle();
  return Guarded(-1, [&] { return AsciiOf(a) != nullptr ? PushAscii(AsciiOf(a)) : Push(NameOf(a)); });
}
int NVTX_API RangePop() {
  if (Idle()) return PopIdle();
  return Guarded(-1, [] { return Pop(); });
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) {
  return Guarded<nvtxRangeId_t>(0, [&] { return Start(InternCached(m), m); });
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) {
  return Guarded<nvtxRangeId_t>(0, [&] { return Start(InternWide(m)); });
}
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return Guarded<nvtxRangeId_t>(0, [&] { return Start(NameOf(a), AsciiOf(a)); });
}
void NVTX_API RangeEnd(nvtxRangeId_t id) {
  Guarded(0, [&] {
    End(id);
    return 0;
  });
}

// Domains: our handle carries the domain name's permanent id (a program
// creates its few domains once and keeps the handles). Never null, so
// callers that check for NULL keep going; a domain whose name could not be
// interned has id 0 and its ranges keep their bare names.
constexpr uintptr_t kDomainTag = 0x8;
nvtxDomainHandle_t DomainHandle(uint32_t name_id) {
  return reinterpret_cast<nvtxDomainHandle_t>((static_cast<uintptr_t>(name_id) << 4) | kDomainTag);
}
uint32_t DomainNameId(nvtxDomainHandle_t d) {
  auto v = reinterpret_cast<uintptr_t>(d);
  return (v & 0xF) == kDomainTag ? static_cast<uint32_t>(v >> 4) : 0;
}

// A range in a domain is named "domain@name" (a transient name, like any
// range message). Per thread, four recent (domain, name) pairs of the
// table's current generation, so a loop's domain ranges take the string
// table's mutex once per window.
struct QualifiedCache {
  struct Entry {
    uint32_t domain = 0, name = 0, id = 0, generation = 0;
  };
  Entry entries[4];
  unsigned next = 0;
};
thread_local QualifiedCache t_qualified;

uint32_t Qualified(nvtxDomainHandle_t d, uint32_t name_id) {
  uint32_t domain = DomainNameId(d);
  if (domain == 0 || name_id == 0 || name_id == kDroppedNameId) return name_id;
  uint32_t generation = Strings().generation();
  QualifiedCache& c = t_qualified;
  for (const auto& e : c.entries) {
    if (e.domain == domain && e.name == name_id && e.generation == generation) return e.id;
  }
  uint32_t id = InternName(QualifiedNvtxName(Strings().Get(domain).c_str(), Strings().Get(name_id).c_str()));
  if (id != kDroppedNameId) c.entries[c.next++ & 3] = {domain, name_id, id, generation};
  return id;
}

// Core2 (domain) callbacks.
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  if (Idle()) return PushIdle();
  return Guarded(-1, [&] { return Push(Qualified(d, NameOf(a)), DomainNameId(d) == 0 ? AsciiOf(a) : nullptr); });
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t) { return RangePop(); }
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Guarded<nvtxRangeId_t>(0, [&] { return Start(Qualified(d, NameOf(a)), DomainNameId(d) == 0 ? AsciiOf(a) : nullptr); });
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { RangeEnd(id); }
// A registered string's handle is kept by the program for good: it is a
// permanent id, within its own budget (past it, the dropped-name id).
uint32_t Register(std::string_view text) {
  uint32_t id = Strings().InternRegistered(text);
  NoteDropped(id);
  return id;
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  uint32_t id = Guarded<uint32_t>(0, [&] { return Register(s ? s : ""); });
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  uint32_t id = Guarded<uint32_t>(0, [&] { return Register(Narrow(s)); });
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(id));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return DomainHandle(Guarded<uint32_t>(0, [&] { return name != nullptr && *name != 0 ? Register(name) : 0; }));
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  return DomainHandle(Guarded<uint32_t>(0, [&] { return name != nullptr && *name != 0 ? Register(Narrow(name)) : 0; }));
}

// The slots libprof fills in one NVTX callback module: id -> our function.
struct Slot {
  unsigned int id;
  NvtxFunctionPointer fn;
};

template <typename F>
Slot SlotOf(unsigned int id, F fn) {
  return Slot{id, reinterpret_cast<NvtxFunctionPointer>(fn)};
}

// Fills the module's slots that this NVTX has (a slot past its table's size
// or without a pointer is left alone); false if NVTX has no such module.
template <size_t N>
bool FillModule(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, const Slot (&slots)[N]) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb->GetModuleFunctionTable(module, &table, &size) || table == nullptr) return false;
  for (const Slot& slot : slots) {
    if (slot.id < size && table[slot.id] != nullptr) *table[slot.id] = slot.fn;
  }
  return true;
}

bool FillCore(const NvtxExportTableCallbacks* cb) {
  const Slot slots[] = {
      SlotOf(NVTX_CBID_CORE_RangePushA, &RangePushA),   SlotOf(NVTX_CBID_CORE_RangePushW, &RangePushW),
      SlotOf(NVTX_CBID_CORE_RangePushEx, &RangePushEx), SlotOf(NVTX_CBID_CORE_RangePop, &RangePop),
      SlotOf(NVTX_CBID_CORE_RangeStartA, &RangeStartA), SlotOf(NVTX_CBID_CORE_RangeStartW, &RangeStartW),
      SlotOf(NVTX_CBID_CORE_RangeStartEx, &RangeStartEx), SlotOf(NVTX_CBID_CORE_RangeEnd, &RangeEnd),
  };
  return FillModule(cb, NVTX_CB_MODULE_CORE, slots);
}

void FillCore2(const NvtxExportTableCallbacks* cb) {
  const Slot slots[] = {
      SlotOf(NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx),
      SlotOf(NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop),
      SlotOf(NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx),
      SlotOf(NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd),
      SlotOf(NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA),
      SlotOf(NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW),
      SlotOf(NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA),
      SlotOf(NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW),
  };
  FillModule(cb, NVTX_CB_MODULE_CORE2, slots);  // optional: an older NVTX has no CORE2 module
}

}  // namespace

}  // namespace prof::nvtx

extern "C" EXPORT_SYMBOL int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  try {
    if (get_export_table == nullptr) return 0;
    auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
    if (!prof::nvtx::FillCore(callbacks)) return 0;
    prof::nvtx::FillCore2(callbacks);
    return 1;
  } catch (...) {
    return 0;  // NVTX then runs without injection: the host is unaffected
  }
}
