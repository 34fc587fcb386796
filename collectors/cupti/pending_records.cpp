#include "collectors/cupti/pending_records.h"

#include <algorithm>

namespace prof::cupti {

void PendingRecords::Reserve(size_t n) {
  if (records_.capacity() < n) records_.reserve(n);
  if (launch_ns_.capacity() < n) launch_ns_.reserve(n);
}

void PendingRecords::Append(const DeviceRecord& record, uint64_t launch_ns) {
  launch_ns = std::min(launch_ns, kFree - 1);
  if (launch_ns_.size() % kChunk == 0) chunk_min_.push_back(kFree);
  uint64_t& bound = chunk_min_.back();
  bound = std::min(bound, launch_ns);
  records_.push_back(record);
  launch_ns_.push_back(launch_ns);
  ++live_;
}

std::vector<DeviceRecord> PendingRecords::Take(uint64_t start_ns, uint64_t end_ns) {
  // Counted first, over the chunks that may hold a launch before the end.
  size_t in_window = 0, before = 0;
  for (size_t c = head_chunk_; c < chunk_min_.size(); ++c) {
    if (chunk_min_[c] >= end_ns) continue;
    size_t stop = std::min((c + 1) * kChunk, launch_ns_.size());
    for (size_t i = c * kChunk; i < stop; ++i) {
      uint64_t t = launch_ns_[i];
      if (t < start_ns) ++before;
      else if (t < end_ns) ++in_window;
    }
  }
  size_t later = live_ - in_window - before;
  std::vector<DeviceRecord> window;
  if (later <= in_window) {
    // The window takes the vector, compacted in place (slot kept <= i:
    // record i is read before anything is written over it); the later
    // records are copied out.
    std::vector<DeviceRecord> later_records;
    std::vector<uint64_t> later_launch_ns;
    later_records.reserve(later);
    later_launch_ns.reserve(later);
    size_t kept = 0;
    for (size_t i = head_chunk_ * kChunk; i < launch_ns_.size(); ++i) {
      uint64_t t = launch_ns_[i];
      if (t == kFree) continue;
      if (t >= end_ns) {
        later_records.push_back(records_[i]);
        later_launch_ns.push_back(t);
      } else if (t >= start_ns) {
        if (kept != i) records_[kept] = records_[i];
        ++kept;
      }  // else launched before the window (warmup, between windows): dropped
    }
    records_.resize(kept);
    window = std::move(records_);
    records_ = std::move(later_records);
    launch_ns_ = std::move(later_launch_ns);
    head_chunk_ = 0;
    live_ = later;
    RecomputeChunkMins();
    return window;
  }
  // A writer behind the application: copy the window's records out of the
  // chunks that may hold them and leave holes; the later records stay put.
  window.reserve(in_window);
  for (size_t c = head_chunk_; c < chunk_min_.size(); ++c) {
    if (chunk_min_[c] >= end_ns) continue;
    size_t stop = std::min((c + 1) * kChunk, launch_ns_.size());
    uint64_t bound = kFree;
    for (size_t i = c * kChunk; i < stop; ++i) {
      uint64_t t = launch_ns_[i];
      if (t >= end_ns) {
        bound = std::min(bound, t);
        continue;
      }
      if (t >= start_ns) window.push_back(records_[i]);
      launch_ns_[i] = kFree;
      --live_;
    }
    chunk_min_[c] = bound;
  }
  DropHeadChunks();
  return window;
}

void PendingRecords::DropHeadChunks() {
  // Only full chunks: records still to come are appended to the last one.
  while (head_chunk_ < chunk_min_.size() && chunk_min_[head_chunk_] == kFree &&
         (head_chunk_ + 1) * kChunk <= launch_ns_.size()) {
    ++head_chunk_;
  }
  if (head_chunk_ * kChunk * 2 <= launch_ns_.size()) return;
  auto drop = static_cast<std::ptrdiff_t>(head_chunk_ * kChunk);
  records_.erase(records_.begin(), records_.begin() + drop);
  launch_ns_.erase(launch_ns_.begin(), launch_ns_.begin() + drop);
  chunk_min_.erase(chunk_min_.begin(), chunk_min_.begin() + static_cast<std::ptrdiff_t>(head_chunk_));
  head_chunk_ = 0;
}

void PendingRecords::Compact() {
  if (live_ == launch_ns_.size()) return;
  size_t kept = 0;
  for (size_t i = 0; i < launch_ns_.size(); ++i) {
    if (launch_ns_[i] == kFree) continue;
    if (kept != i) {
      records_[kept] = records_[i];
      launch_ns_[kept] = launch_ns_[i];
    }
    ++kept;
  }
  records_.resize(kept);
  launch_ns_.resize(kept);
  head_chunk_ = 0;
  RecomputeChunkMins();
}

void PendingRecords::RecomputeChunkMins() {
  chunk_min_.assign((launch_ns_.size() + kChunk - 1) / kChunk, kFree);
  for (size_t i = 0; i < launch_ns_.size(); ++i) {
    chunk_min_[i / kChunk] = std::min(chunk_min_[i / kChunk], launch_ns_[i]);
  }
}

}  // namespace prof::cupti
