#include "collectors/cupti/buffer_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace prof::cupti {
namespace {

// CUPTI requires 8-byte aligned buffers; mmap gives page-aligned ones, whose
// pages can be handed back to the kernel (Evict) without freeing them.
constexpr size_t kAlign = 8;

uint8_t* AllocateBuffer(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

void FreeBuffer(uint8_t* buffer, size_t bytes) { munmap(buffer, bytes); }

// The buffer's pages stop counting in RSS until written again (they read
// back as zeros). Whole pages only. False when nothing was given back (a
// buffer under one page, or madvise failed): its bytes are unchanged.
bool EvictBuffer(uint8_t* buffer, size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t whole = bytes / page * page;
  return whole == bytes && madvise(buffer, whole, MADV_DONTNEED) == 0;
}

}  // namespace

size_t BufferBytesForCap(size_t cap_bytes) {
  constexpr size_t kMax = 256u << 10;
  constexpr size_t kMin = 16u << 10;
  size_t bytes = std::clamp(cap_bytes / 8, kMin, kMax);
  return bytes / kAlign * kAlign;
}

BufferPool::BufferPool(size_t cap_bytes, bool null_allowed)
    : buffer_bytes_(BufferBytesForCap(cap_bytes)),
      max_buffers_(std::max<size_t>(1, cap_bytes / BufferBytesForCap(cap_bytes))),
      null_allowed_(null_allowed) {}

BufferPool::~BufferPool() {
  for (uint8_t* buffer : all_) FreeBuffer(buffer, buffer_bytes_);
  for (uint8_t* buffer : scratch_) FreeBuffer(buffer, buffer_bytes_);
}

uint8_t* BufferPool::Acquire(uint64_t now_ns) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  // Resident buffers first: an evicted one costs page faults to refill.
  for (std::vector<uint8_t*>* list : {&free_, &evicted_}) {
    if (!list->empty()) {
      uint8_t* buffer = list->back();
      list->pop_back();
      held_.emplace_back(buffer, now_ns);
      return buffer;
    }
  }
  if (all_.size() < max_buffers_) {
    uint8_t* buffer = AllocateBuffer(buffer_bytes_);
    if (buffer != nullptr) {
      all_.push_back(buffer);
      held_.emplace_back(buffer, now_ns);
      return buffer;
    }
  }
  ++refused_;
  if (null_allowed_) return nullptr;
  // Older CUPTI must get a buffer: a scratch one, whose records are counted
  // and thrown away. Two rotate so a buffer is rarely handed out twice at
  // once; if it is, the records are garbage but never read as data.
  if (scratch_.empty()) {
    for (size_t i = 0; i < kScratchBuffers; ++i) {
      uint8_t* buffer = AllocateBuffer(buffer_bytes_);
      if (buffer == nullptr) break;
      scratch_.push_back(buffer);
    }
    if (scratch_.empty()) return nullptr;
  }
  uint8_t* buffer = scratch_[next_scratch_ % scratch_.size()];
  ++next_scratch_;
  return buffer;
}

void BufferPool::Release(uint8_t* buffer, size_t used_bytes, bool evict) {
  if (buffer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Scratch buffers are left alone: CUPTI may be filling one again already
    // (two rotate), and their records are only counted, never read.
    if (std::find(scratch_.begin(), scratch_.end(), buffer) != scratch_.end()) return;
    if (std::find(all_.begin(), all_.end(), buffer) == all_.end()) return;  // not ours
    std::erase_if(held_, [buffer](const auto& h) { return h.first == buffer; });
  }
  // Outside the lock (a system call, a memset): the buffer is nobody's until
  // pushed.
  if (evict && EvictBuffer(buffer, buffer_bytes_)) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++evictions_;
    evicted_.push_back(buffer);
    return;
  }
  std::memset(buffer, 0, std::min(used_bytes, buffer_bytes_));
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

bool BufferPool::IsScratch(const uint8_t* buffer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::find(scratch_.begin(), scratch_.end(), buffer) != scratch_.end();
}

bool BufferPool::HeldSince(uint64_t t_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(held_.begin(), held_.end(), [t_ns](const auto& h) { return h.second < t_ns; });
}

size_t BufferPool::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_.size() * buffer_bytes_;
}

size_t BufferPool::resident_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return (all_.size() - evicted_.size()) * buffer_bytes_;
}

uint64_t BufferPool::evictions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

uint64_t BufferPool::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

}  // namespace prof::cupti
