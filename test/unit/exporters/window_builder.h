// Hand-built Windows for exporter tests: a few calls, kernels, copies and
// steps with times chosen by the test, so expected numbers are computed by
// hand in the test rather than read back from the code under test.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "model/window.h"
#include "exporters/files/byte_sink.h"
#include "exporters/trace/chrome_trace.h"

namespace prof::testing {

inline constexpr uint32_t kPid = 4242;
inline constexpr int64_t kEpochOffsetNs = 1'700'000'000'000'000'000;  // agent clock -> Unix time
inline constexpr uint8_t kCuptiHtoD = 1, kCuptiDtoH = 2;
inline constexpr uint8_t kCuptiPageable = 1, kCuptiPinned = 2, kCuptiDevice = 3;

class WindowBuilder {
 public:
  WindowBuilder() {
    w_.strings = {""};
    WindowMeta& m = w_.meta;
    m.name = "worker";
    m.hostname = "host";
    m.pid = static_cast<int>(kPid);
    m.epoch_offset_ns = kEpochOffsetNs;
    m.cupti_mode = "activity";
    m.has_gpu_timings = true;
    m.libprof_version = "0.1.0";
    DeviceProps d;
    d.id = 0;
    d.name = "Simulated GPU";
    d.total_global_mem = 80ull << 30;
    d.compute_major = 9;
    d.sm_count = 100;
    d.warp_size = 32;
    d.max_threads_per_block = 1024;
    d.max_threads_per_sm = 2048;
    d.max_blocks_per_sm = 32;
    d.max_regs_per_block = 65536;
    d.max_regs_per_sm = 65536;
    d.max_shared_per_block = 49152;
    d.max_shared_per_sm = 233472;
    w_.devices.push_back(d);
  }

  uint32_t Str(const std::string& s) {
    auto it = std::find(w_.strings.begin(), w_.strings.end(), s);
    if (it != w_.strings.end()) return static_cast<uint32_t>(it - w_.strings.begin());
    w_.strings.push_back(s);
    return static_cast<uint32_t>(w_.strings.size() - 1);
  }

  HostEvent& Call(ApiId api, uint64_t start_ns, uint64_t end_ns, uint32_t correlation = 0, uint32_t tid = kPid) {
    HostEvent e{};
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.correlation_id = correlation;
    e.tid = tid;
    e.api = static_cast<uint16_t>(api);
    e.device = 0;
    w_.host_events.push_back(e);
    return w_.host_events.back();
  }

  DeviceRecord& Kernel(const std::string& name, uint64_t start_ns, uint64_t end_ns, uint32_t correlation,
                       uint32_t stream = 7) {
    DeviceRecord& r = Record(DeviceKind::kKernel, start_ns, end_ns, correlation, stream);
    r.name_id = Str(name);
    r.grid[0] = 200, r.grid[1] = 1, r.grid[2] = 1;
    r.block[0] = 256, r.block[1] = 1, r.block[2] = 1;
    r.registers_per_thread = 32;
    return r;
  }

  DeviceRecord& Copy(uint8_t copy_kind, uint8_t src, uint8_t dst, uint64_t bytes, uint64_t start_ns, uint64_t end_ns,
                     uint32_t correlation, uint32_t stream = 7) {
    DeviceRecord& r = Record(DeviceKind::kMemcpy, start_ns, end_ns, correlation, stream);
    r.copy_kind = copy_kind, r.src_kind = src, r.dst_kind = dst, r.bytes = bytes;
    return r;
  }

  DeviceRecord& Record(DeviceKind kind, uint64_t start_ns, uint64_t end_ns, uint32_t correlation, uint32_t stream = 7) {
    DeviceRecord r{};
    r.kind = static_cast<uint8_t>(kind);
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.correlation_id = correlation;
    r.stream_id = stream;
    r.context_id = 1;
    w_.device_records.push_back(r);
    return w_.device_records.back();
  }

  // A launch call [start, start + call_ns) and its kernel [gpu_start, gpu_end).
  void Launch(const std::string& kernel, uint64_t start_ns, uint64_t call_ns, uint64_t gpu_start_ns, uint64_t gpu_end_ns,
              uint32_t correlation, uint32_t stream = 7) {
    Call(ApiId::cudaLaunchKernel, start_ns, start_ns + call_ns, correlation);
    Kernel(kernel, gpu_start_ns, gpu_end_ns, correlation, stream);
  }

  void Step(uint64_t step, uint64_t start_ns, uint64_t end_ns) {
    w_.steps.push_back({step, start_ns, end_ns});
    if (w_.steps.size() == 1) w_.meta.first_step = step, w_.meta.start_ns = start_ns;
    w_.meta.last_step = step;
    w_.meta.end_ns = end_ns;
  }

  void Alloc(uint64_t ts_ns, uint64_t ptr, int64_t delta, uint64_t total, int16_t device = 0,
             ApiId api = ApiId::cudaMalloc) {
    AllocSample a{};
    a.ts_ns = ts_ns, a.ptr = ptr, a.delta_bytes = delta, a.total_bytes = total, a.tid = kPid;
    a.api = static_cast<uint16_t>(api), a.device = device;
    w_.alloc_samples.push_back(a);
  }

  // A block of PyTorch's caching allocator allocated (bytes > 0) or freed;
  // `site`: its Python line ("" none). The device's total follows.
  void Tensor(uint64_t ts_ns, uint64_t addr, int64_t bytes, const std::string& site = "") {
    tensor_total_ = static_cast<uint64_t>(static_cast<int64_t>(tensor_total_) + bytes);
    TensorMemoryEvent m{};
    m.ts_ns = ts_ns, m.addr = addr, m.bytes = bytes, m.total_allocated = tensor_total_, m.total_reserved = 64 << 20;
    m.site_id = site.empty() ? 0 : Str(site);
    m.kind = static_cast<uint8_t>(bytes > 0 ? TensorMemoryKind::kAlloc : TensorMemoryKind::kFree);
    w_.tensor_memory.push_back(m);
    w_.meta.tensor_memory = "on";
  }
  // What the window's tensor memory starts from (before the first Tensor()).
  void TensorsHeld(uint64_t bytes) { tensor_total_ = bytes; }

  Window& window() { return w_; }

  // The window as the session seals it: events in start order.
  Window Build() {
    Window w = w_;
    auto by_start = [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; };
    std::stable_sort(w.host_events.begin(), w.host_events.end(), by_start);
    std::stable_sort(w.device_records.begin(), w.device_records.end(), by_start);
    return w;
  }

 private:
  Window w_;
  uint64_t tensor_total_ = 0;
};

// The trace of `w`, parsed strictly (throws on anything that is not JSON).
inline nlohmann::json TraceJson(const Window& w, std::string* text = nullptr) {
  std::string out;
  StringSink sink(&out);
  if (!WriteChromeTrace(w, "test.pt.trace.json", sink)) throw std::runtime_error("WriteChromeTrace failed");
  if (text) *text = out;
  return nlohmann::json::parse(out);
}

// Events of `trace` with this ph and cat ("" matches any cat).
inline std::vector<nlohmann::json> Events(const nlohmann::json& trace, const std::string& ph,
                                          const std::string& cat = "") {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

}  // namespace prof::testing
