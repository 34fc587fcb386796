#include "collectors/python/tensor_memory.h"

#include <chrono>
#include <iterator>
#include <map>
#include <unordered_map>

#include "base/clock.h"
#include "base/strings.h"

namespace prof::python {
namespace {

// The caching allocator's rules (c10/cuda/CUDACachingAllocator.cpp, with
// PYTORCH_CUDA_ALLOC_CONF unset): requests round up to 512 bytes; a free
// block is split when what remains is at least 512 bytes (small pool) or
// more than 1 MiB (large pool); small-pool segments are 2 MiB.
constexpr int64_t kMinBlock = 512;
constexpr int64_t kSmallSize = 1 << 20;
constexpr int64_t kSmallSegment = 2 << 20;

int64_t RoundRequest(int64_t bytes) {
  return bytes < kMinBlock ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}

struct Block {
  int64_t size;
  int64_t state;
  int64_t segment;  // its segment's address
};

struct Segment {
  int64_t size;
  bool small;
};

// One device's allocator as the replay sees it.
struct DeviceState {
  std::map<int64_t, Block> blocks;
  std::map<int64_t, Segment> segments;
  uint64_t allocated = 0;
  uint64_t reserved = 0;
  uint64_t mismatches = 0;  // actions the replayed state could not take as they came

  void Merge(std::map<int64_t, Block>::iterator it) {
    auto next = std::next(it);
    if (next != blocks.end() && next->second.state == kBlockFree && next->second.segment == it->second.segment &&
        next->first == it->first + it->second.size) {
      it->second.size += next->second.size;
      blocks.erase(next);
    }
    if (it != blocks.begin()) {
      auto prev = std::prev(it);
      if (prev->second.state == kBlockFree && prev->second.segment == it->second.segment &&
          prev->first + prev->second.size == it->first) {
        prev->second.size += it->second.size;
        blocks.erase(it);
      }
    }
  }

  // The block an allocation at addr got, its size as the allocator counts it.
  int64_t Allocate(int64_t addr, int64_t request) {
    int64_t want = RoundRequest(request);
    auto it = blocks.find(addr);
    if (it == blocks.end() || it->second.state != kBlockFree) {
      ++mismatches;
      blocks[addr] = Block{want, kBlockAllocated, addr};
      return want;
    }
    Block& b = it->second;
    auto seg = segments.find(b.segment);
    bool small = seg != segments.end() && seg->second.small;
    int64_t rest = b.size - want;
    if (rest >= 0 && (small ? rest >= kMinBlock : rest > kSmallSize)) {
      blocks[addr + want] = Block{rest, kBlockFree, b.segment};
      b.size = want;
    } else if (rest < 0) {
      ++mismatches;
      b.size = want;
    }
    b.state = kBlockAllocated;
    return b.size;
  }
};

const char* Reader(const std::vector<int64_t>& r, size_t* at, size_t n, int64_t* out) {
  if (*at + n > r.size()) return "the records end early";
  for (size_t i = 0; i < n; ++i) out[i] = r[*at + i];
  *at += n;
  return nullptr;
}

// Walks the records: the snapshot's segments into `devices`, the entries
// into events. nullptr, or what is wrong with the records.
const char* Replay(const TensorMemoryBatch& batch, std::unordered_map<int64_t, DeviceState>* devices,
                   ReplayResult* out) {
  const std::vector<int64_t>& r = batch.records;
  size_t at = 0;
  int64_t h[5];
  if (const char* e = Reader(r, &at, 5, h)) return e;
  if (h[0] != kBlobVersion) return "the records are of another version";
  for (int64_t s = 0; s < h[1]; ++s) {
    int64_t seg[5];
    if (const char* e = Reader(r, &at, 5, seg)) return e;
    DeviceState& d = (*devices)[seg[0]];
    d.segments[seg[1]] = Segment{seg[2], seg[3] != 0};
    d.reserved += static_cast<uint64_t>(seg[2]);
    for (int64_t b = 0; b < seg[4]; ++b) {
      int64_t blk[3];
      if (const char* e = Reader(r, &at, 3, blk)) return e;
      d.blocks[blk[0]] = Block{blk[1], blk[2], seg[1]};
      if (blk[2] == kBlockAllocated) d.allocated += static_cast<uint64_t>(blk[1]);
    }
  }
  for (int64_t i = 0; i < h[2]; ++i) {
    int64_t e[6];
    if (const char* err = Reader(r, &at, 6, e)) return err;
    DeviceState& d = (*devices)[e[0]];
    TensorMemoryEvent ev{};
    ev.ts_ns = static_cast<uint64_t>(e[2] * 1000 - batch.epoch_offset_ns);
    ev.addr = static_cast<uint64_t>(e[3]);
    ev.device = static_cast<int16_t>(e[0]);
    ev.site_id = e[5] >= 0 ? static_cast<uint32_t>(e[5] + 1) : 0;
    switch (e[1]) {
      case kActionAlloc: {
        int64_t size = d.Allocate(e[3], e[4]);
        d.allocated += static_cast<uint64_t>(size);
        ev.kind = static_cast<uint8_t>(TensorMemoryKind::kAlloc);
        ev.bytes = size;
        break;
      }
      case kActionFreeRequested: {
        auto it = d.blocks.find(e[3]);
        if (it == d.blocks.end() || it->second.state != kBlockAllocated) {
          ++d.mismatches;
          continue;
        }
        it->second.state = kBlockAwaitingFree;
        d.allocated -= static_cast<uint64_t>(it->second.size);
        ev.kind = static_cast<uint8_t>(TensorMemoryKind::kFree);
        ev.bytes = -it->second.size;
        break;
      }
      case kActionFreeCompleted: {
        auto it = d.blocks.find(e[3]);
        if (it == d.blocks.end()) {
          ++d.mismatches;
          continue;
        }
        it->second.state = kBlockFree;
        d.Merge(it);
        continue;  // no change in what is allocated or reserved
      }
      case kActionSegmentAlloc:
        d.segments[e[3]] = Segment{e[4], e[4] == kSmallSegment};
        d.blocks[e[3]] = Block{e[4], kBlockFree, e[3]};
        d.reserved += static_cast<uint64_t>(e[4]);
        ev.kind = static_cast<uint8_t>(TensorMemoryKind::kSegmentAlloc);
        ev.bytes = e[4];
        break;
      case kActionSegmentFree:
        d.segments.erase(e[3]);
        d.blocks.erase(d.blocks.lower_bound(e[3]), d.blocks.lower_bound(e[3] + e[4]));
        d.reserved -= static_cast<uint64_t>(e[4]);
        ev.kind = static_cast<uint8_t>(TensorMemoryKind::kSegmentFree);
        ev.bytes = -e[4];
        break;
      default:
        continue;
    }
    ev.total_allocated = d.allocated;
    ev.total_reserved = d.reserved;
    out->events.push_back(ev);
  }
  for (int64_t i = 0; i < h[3]; ++i) {
    int64_t end[3];
    if (const char* e = Reader(r, &at, 3, end)) return e;
    DeviceState& d = (*devices)[end[0]];
    if (d.allocated != static_cast<uint64_t>(end[1]) || d.reserved != static_cast<uint64_t>(end[2])) {
      out->problem = "approximate: the replayed allocator ends at " + std::to_string(d.allocated) +
                     " bytes allocated, PyTorch's at " + std::to_string(end[1]);
    }
  }
  if ((h[4] & kFlagWrapped) != 0) {
    return "the window and its warmup made more allocator actions on a device than the history keeps (100,000)";
  }
  if ((h[4] & kFlagSettings) != 0) out->problem = "approximate: PYTORCH_CUDA_ALLOC_CONF changes the allocator's rounding";
  return nullptr;
}

}  // namespace

ReplayResult ReplayTensorMemory(const TensorMemoryBatch& batch) {
  ReplayResult out;
  size_t start = 0;
  while (start <= batch.sites.size() && !batch.sites.empty()) {
    size_t nl = batch.sites.find('\n', start);
    if (nl == std::string::npos) nl = batch.sites.size();
    out.sites.push_back(batch.sites.substr(start, nl - start));
    start = nl + 1;
  }
  std::unordered_map<int64_t, DeviceState> devices;
  if (const char* e = Replay(batch, &devices, &out)) {
    out.events.clear();
    out.problem = std::string("not recorded: ") + e;
    return out;
  }
  for (TensorMemoryEvent& ev : out.events) {
    if (ev.site_id > out.sites.size()) ev.site_id = 0;
  }
  uint64_t mismatches = 0;
  for (const auto& [device, d] : devices) mismatches += d.mismatches;
  if (mismatches != 0 && out.problem.empty()) {
    out.problem = "approximate: " + std::to_string(mismatches) + " allocator actions did not fit the replayed blocks";
  }
  return out;
}

void TensorMemory::Expect() {
  std::lock_guard<std::mutex> lock(mu_);
  due_ = true;
}

void TensorMemory::Deliver(TensorMemoryBatch batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    batches_.push_back(std::move(batch));
    due_ = false;
  }
  arrived_.notify_all();
}

void TensorMemory::NotComing(const std::string& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    due_ = false;
    status_ = status;
  }
  arrived_.notify_all();
}

void TensorMemory::ProcessExiting() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!due_) return;
    due_ = false;
    status_ = "not recorded: the process exited before the interpreter handed the allocator's history over";
  }
  arrived_.notify_all();
}

void TensorMemory::Take(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* w) {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t now = NowNs();
  if (due_ && deadline_ns > now) {
    arrived_.wait_for(lock, std::chrono::nanoseconds(deadline_ns - now), [this] { return !due_; });
  }
  std::string status = status_;
  if (due_) {
    due_ = false;  // a later hand-over still counts for the next window
    status = "not recorded: the interpreter did not hand the allocator's history over in time";
  }
  std::vector<TensorMemoryEvent> events = std::move(later_);
  std::vector<std::string> sites = std::move(later_sites_);
  later_.clear();
  later_sites_.clear();
  while (!batches_.empty()) {
    ReplayResult r = ReplayTensorMemory(batches_.front());
    batches_.pop_front();
    status = r.problem.empty() ? "on" : r.problem;
    uint32_t base = static_cast<uint32_t>(sites.size());
    for (TensorMemoryEvent& ev : r.events) {
      if (ev.site_id != 0) ev.site_id += base;
    }
    sites.insert(sites.end(), r.sites.begin(), r.sites.end());
    events.insert(events.end(), r.events.begin(), r.events.end());
  }
  lock.unlock();
  std::vector<uint32_t> ids(sites.size() + 1, 0);
  std::vector<TensorMemoryEvent> later;
  for (const TensorMemoryEvent& ev : events) {
    if (ev.ts_ns < start_ns) continue;
    if (ev.ts_ns > end_ns) {
      later.push_back(ev);
      continue;
    }
    TensorMemoryEvent out = ev;
    if (ev.site_id != 0) {
      if (ids[ev.site_id] == 0) ids[ev.site_id] = Strings().Intern(sites[ev.site_id - 1]);
      out.site_id = ids[ev.site_id];
    }
    w->tensor_memory.push_back(out);
  }
  if (!later.empty()) {
    lock.lock();
    later_ = std::move(later);
    later_sites_ = std::move(sites);
  }
  w->meta.tensor_memory = status;
}

}  // namespace prof::python
