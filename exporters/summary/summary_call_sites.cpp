// The summary's "GPU time by Python call site" table: each recorded call is
// charged to the innermost frame of the user's own code on its stack, and
// each GPU record to the call that launched it (by correlation id), or, for
// work a CUDA graph replayed, to the call that captured its node, on a row
// of its own.
#include <algorithm>
#include <unordered_map>

#include "exporters/common/compact_window.h"
#include "exporters/common/python_sites.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"

namespace prof {
namespace {

template <typename W>
void Compute(const W& w, const WindowIndex& index, Summary* s) {
  s->python_status = w.python.status;
  if (w.python.status.empty()) return;
  CallSites sites(RestOf(w));
  // Row keys: a frame id, or one of two rows for calls without a user frame.
  constexpr uint64_t kNoFrames = UINT64_MAX, kLibraryOnly = UINT64_MAX - 1;
  // Marks a site's row of graph-replayed work (a thread id never reaches bit 62).
  constexpr uint64_t kCaptured = uint64_t{1} << 62;
  std::unordered_map<uint64_t, CallSiteRow> rows;
  // A site charged through another thread (via) is a row of its own.
  auto key_of = [&](const auto& e) -> uint64_t {
    if (e.stack_id <= 1) return kNoFrames;  // stack 0 (none recorded) counts as no frames too
    uint64_t site = sites.Key(e.stack_id);
    return site == 0 ? kLibraryOnly : site;
  };
  for (const auto& e : w.host_events) {
    CallSiteRow& r = rows[key_of(e)];
    auto id = static_cast<ApiId>(e.api);
    ApiKind kind = ApiKindOf(id);
    ++r.calls;
    if (kind == ApiKind::kLaunch) ++r.launches;
    if (IsBlockingSync(id)) ++r.syncs;
    if (kind == ApiKind::kMemcpy) ++r.copies;
    if (kind == ApiKind::kAlloc || kind == ApiKind::kFree) ++r.allocs;
  }
  for (const auto& d : w.device_records) {
    DeviceKind kind = KindOf(d);
    // Kernels, copies and memsets: a synchronization record is waiting, not work.
    bool work = kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset;
    if (!work) continue;
    // A replayed graph node's work belongs to the line that captured it (the
    // graph launch's row keeps the call).
    uint64_t captured = d.capture_stack_id > 1 ? sites.Key(d.capture_stack_id) : 0;
    if (captured == 0 && d.correlation_id == 0) continue;
    int64_t call = captured != 0 ? WindowIndex::kNone : index.HostCall(d.correlation_id);
    if (captured == 0 && call == WindowIndex::kNone) continue;
    CallSiteRow& r = rows[captured != 0 ? captured | kCaptured : key_of(w.host_events[static_cast<size_t>(call)])];
    r.gpu_ns += d.end_ns > d.start_ns ? d.end_ns - d.start_ns : 0;
    if (kind == DeviceKind::kKernel) ++r.kernels;
  }
  for (auto& [key, row] : rows) {
    if (key == kNoFrames) {
      row.site = "(no Python frames)";
    } else if (key == kLibraryOnly) {
      row.site = "(library code only)";
    } else {
      row.site = sites.KeyText(key & ~kCaptured);
      if ((key & kCaptured) != 0) row.site += " (captured; CUDA graph replays)";
      row.file = w.String(w.python.frames[static_cast<uint32_t>(key)].file_id);
    }
    s->call_sites.push_back(std::move(row));
  }
  std::sort(s->call_sites.begin(), s->call_sites.end(), [](const CallSiteRow& a, const CallSiteRow& b) {
    if (a.gpu_ns != b.gpu_ns) return a.gpu_ns > b.gpu_ns;
    if (a.calls != b.calls) return a.calls > b.calls;
    return a.site < b.site;
  });
  // The allocations still live at the end: a wrapper records an allocation
  // at its call's return, so the call is the allocating one that returned
  // then (none when it was made before the window).
  std::unordered_map<uint64_t, size_t> alloc_by_end;
  for (size_t i = 0; i < w.host_events.size(); ++i) {
    const auto& e = w.host_events[i];
    if (ApiKindOf(static_cast<ApiId>(e.api)) == ApiKind::kAlloc) alloc_by_end[e.end_ns] = i;
  }
  for (size_t i = 0; i < s->live.size() && i < kLiveRowsShown; ++i) {
    const LiveAllocation& a = s->live[i];
    auto it = alloc_by_end.find(a.alloc_ns);
    std::string site;
    if (it != alloc_by_end.end() && w.host_events[it->second].api == a.api) {
      uint32_t frame = sites.Of(w.host_events[it->second].stack_id);
      site = frame == 0 ? "" : sites.Text(frame);
    }
    s->live_sites.push_back(std::move(site));
  }
}

}  // namespace

void ComputeCallSites(const Window& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }
void ComputeCallSites(const CompactWindow& w, const WindowIndex& index, Summary* s) { Compute(w, index, s); }

}  // namespace prof
