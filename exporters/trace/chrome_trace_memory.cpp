// PyTorch's allocator events ([memory] instants) and a counter track of
// live bytes per device and memory kind: the caching allocator's tensor
// blocks where PROF_TORCH_MEMORY recorded them (Kineto's profile_memory
// events), the CUDA allocation calls the wrappers saw otherwise.
#include <iterator>
#include <set>

#include "exporters/trace/chrome_trace_parts.h"

namespace prof::chrome {
namespace {

// A [memory] instant's fields as Kineto writes them; its args stay open.
struct MemoryFields {
  uint64_t tid, ts_ns, addr;
  int64_t bytes;
  uint64_t allocated, reserved;
  int device;
};

void BeginMemoryInstant(const Window& w, EventStream& s, const MemoryFields& m) {
  JsonWriter& out = s.out;
  s.Begin();
  out.Raw("\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":");
  out.Int(w.meta.pid);
  out.Raw(",\"tid\":"); out.UInt(m.tid);
  out.Raw(",\"ts\":"); s.Ts(m.ts_ns);
  out.Raw(",\"args\":{\"Addr\":"); out.UInt(m.addr);
  out.Raw(",\"Bytes\":"); out.Int(m.bytes);
  out.Raw(",\"Total Allocated\":"); out.UInt(m.allocated);
  out.Raw(",\"Total Reserved\":"); out.UInt(m.reserved);
  out.Raw(",\"Device Id\":"); out.Int(m.device);
  out.Raw(",\"Device Type\":"); out.Int(m.device >= 0 ? 1 : 0);  // c10::DeviceType CUDA / CPU
}

// Kineto's [memory] instant: the caching allocator's block allocated
// (Bytes > 0) or freed, with the device's totals after it.
void WriteTensorMemory(const Window& w, EventStream& s) {
  JsonWriter& out = s.out;
  for (const TensorMemoryEvent& m : w.tensor_memory) {
    auto kind = static_cast<TensorMemoryKind>(m.kind);
    if (kind == TensorMemoryKind::kAlloc || kind == TensorMemoryKind::kFree) {
      // The history does not say which thread asked: the main thread's id.
      BeginMemoryInstant(w, s, {static_cast<uint64_t>(w.meta.pid), m.ts_ns, m.addr, m.bytes, m.total_allocated,
                                m.total_reserved, m.device});
      if (m.site_id != 0) {
        out.Raw(",\"Python line\":"); out.String(w.String(m.site_id));
      }
      out.Raw("}}");
    }
    s.Begin();
    out.Raw("\"ph\":\"C\",\"name\":\"tensor memory\",\"pid\":");
    out.Int(m.device);
    out.Raw(",\"tid\":0,\"ts\":"); s.Ts(m.ts_ns);
    out.Raw(",\"args\":{\"allocated\":"); out.UInt(m.total_allocated);
    out.Raw(",\"reserved\":"); out.UInt(m.total_reserved); out.Raw("}}");
  }
}

}  // namespace

// PyTorch's allocator events, plus a counter of live bytes per device.
void WriteMemoryEvents(const Window& w, EventStream& s) {
  JsonWriter& out = s.out;
  WriteTensorMemory(w, s);
  // Devices whose tensors are there: their CUDA allocation calls (the
  // allocator's segments) keep only their counter, so that a consumer
  // summing [memory] events counts tensors alone.
  std::set<int> tensor_devices;
  for (const TensorMemoryEvent& m : w.tensor_memory) tensor_devices.insert(m.device);
  static constexpr const char* kKindNames[] = {"device", "host pinned", "managed", "async pool", "vmm"};
  for (const AllocSample& a : w.alloc_samples) {
    if (a.device < 0 || tensor_devices.count(a.device) == 0) {
      // No caching allocator at the CUDA API level: reserved = allocated.
      BeginMemoryInstant(w, s, {a.tid, a.ts_ns, a.ptr, a.delta_bytes, a.total_bytes, a.total_bytes, a.device});
      out.Raw(",\"api\":\""); out.Raw(ApiName(static_cast<ApiId>(a.api)));
      out.Raw("\",\"mem kind\":"); out.UInt(a.mem_kind); out.Raw("}}");
    }

    s.Begin();
    const char* kind = a.mem_kind < std::size(kKindNames) ? kKindNames[a.mem_kind] : "other";
    out.Raw("\"ph\":\"C\",\"name\":\"allocated bytes (");
    out.Raw(kind);
    out.Raw(")\",\"pid\":");
    out.Int(a.device >= 0 ? int64_t{a.device} : int64_t{w.meta.pid});
    out.Raw(",\"tid\":0,\"ts\":"); s.Ts(a.ts_ns);
    out.Raw(",\"args\":{\"bytes\":"); out.UInt(a.total_bytes); out.Raw("}}");
  }
}

}  // namespace prof::chrome
