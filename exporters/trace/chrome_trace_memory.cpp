// PyTorch's allocator events ([memory] instants) and a counter track of
// live bytes per device and memory kind.
#include <iterator>

#include "exporters/trace/chrome_trace_parts.h"

namespace prof::chrome {

// PyTorch's allocator events, plus a counter of live bytes per device.
void WriteMemoryEvents(const Window& w, EventStream& s) {
  JsonWriter& out = s.out;
  static constexpr const char* kKindNames[] = {"device", "host pinned", "managed", "async pool", "vmm"};
  for (const AllocSample& a : w.alloc_samples) {
    s.Begin();
    out.Raw("\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":");
    out.Int(w.meta.pid);
    out.Raw(",\"tid\":"); out.UInt(a.tid);
    out.Raw(",\"ts\":"); s.Ts(a.ts_ns);
    out.Raw(",\"args\":{\"Addr\":"); out.UInt(a.ptr);
    out.Raw(",\"Bytes\":"); out.Int(a.delta_bytes);
    out.Raw(",\"Total Allocated\":"); out.UInt(a.total_bytes);
    // No caching allocator at the CUDA API level: reserved = allocated.
    out.Raw(",\"Total Reserved\":"); out.UInt(a.total_bytes);
    out.Raw(",\"Device Id\":"); out.Int(a.device);
    out.Raw(",\"Device Type\":"); out.Int(a.device >= 0 ? 1 : 0);  // c10::DeviceType CUDA / CPU
    out.Raw(",\"api\":\""); out.Raw(ApiName(static_cast<ApiId>(a.api)));
    out.Raw("\",\"mem kind\":"); out.UInt(a.mem_kind); out.Raw("}}");

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
