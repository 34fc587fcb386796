#include "agent/session/alloc_tracker.h"

#include <algorithm>

#include "agent/session/take_window.h"

namespace prof {

uint64_t& AllocTracker::TotalFor(int device, MemKind kind) {
  for (Total& t : totals_) {
    if (t.device == device && t.kind == kind) return t.bytes;
  }
  totals_.push_back(Total{device, kind, 0});
  return totals_.back().bytes;
}

void AllocTracker::Sample(uint64_t ts_ns, uint64_t ptr, int64_t delta, int device, MemKind kind, ApiId api,
                          uint32_t tid) {
  if (samples_.size() >= max_samples_) {
    ++samples_dropped_;
    return;
  }
  AllocSample s{};
  s.ts_ns = ts_ns;
  s.ptr = ptr;
  s.delta_bytes = delta;
  s.total_bytes = TotalFor(device, kind);
  s.tid = tid;
  s.api = static_cast<uint16_t>(api);
  s.device = static_cast<int16_t>(device);
  s.mem_kind = static_cast<uint8_t>(kind);
  samples_.push_back(s);
}

void AllocTracker::OnAlloc(uint64_t ptr, uint64_t bytes, int device, MemKind kind, ApiId api, uint32_t tid,
                           uint64_t ts_ns, bool keep_sample) {
  if (ptr == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  bool inserted = false;
  Live& slot = live_.FindOrInsert(ptr, &inserted);
  if (!inserted) {
    // Same address again without a free we saw (e.g. freed through an
    // uninterposed path): replace it rather than counting it twice.
    TotalFor(slot.device, slot.kind) -= slot.bytes;
  }
  slot = Live{bytes, ts_ns, static_cast<uint16_t>(api), static_cast<int16_t>(device), kind};
  TotalFor(device, kind) += bytes;
  if (keep_sample) Sample(ts_ns, ptr, static_cast<int64_t>(bytes), device, kind, api, tid);
}

void AllocTracker::OnFree(uint64_t ptr, ApiId api, uint32_t tid, uint64_t ts_ns, bool keep_sample) {
  if (ptr == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Live l;
  if (!live_.Erase(ptr, &l)) return;
  TotalFor(l.device, l.kind) -= l.bytes;
  if (keep_sample) Sample(ts_ns, ptr, -static_cast<int64_t>(l.bytes), l.device, l.kind, api, tid);
}

std::vector<LiveAllocation> AllocTracker::LiveSnapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LiveAllocation> out;
  out.reserve(live_.size());
  live_.ForEach([&out](uint64_t ptr, const Live& l) {
    LiveAllocation a{};
    a.ptr = ptr;
    a.bytes = l.bytes;
    a.alloc_ns = l.alloc_ns;
    a.api = l.api;
    a.device = l.device;
    a.mem_kind = static_cast<uint8_t>(l.kind);
    out.push_back(a);
  });
  // Outside windows alloc_ns is coarse (ties): the address makes the order total.
  std::sort(out.begin(), out.end(), [](const LiveAllocation& a, const LiveAllocation& b) {
    return a.alloc_ns != b.alloc_ns ? a.alloc_ns < b.alloc_ns : a.ptr < b.ptr;
  });
  return out;
}

std::vector<AllocSample> AllocTracker::TakeSamples(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AllocSample> out =
      TakeWindowEntries(samples_, begin_ns, end_ns, [](const AllocSample& s) { return s.ts_ns; });
  // Already in lock order, which is the order the running totals follow.
  if (dropped != nullptr) *dropped += samples_dropped_;
  samples_dropped_ = 0;
  return out;
}

uint64_t AllocTracker::LiveBytes(int device, MemKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Total& t : totals_) {
    if (t.device == device && t.kind == kind) return t.bytes;
  }
  return 0;
}

}  // namespace prof
