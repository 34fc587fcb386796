// Activity buffers handed to CUPTI: a fixed pool whose total never exceeds
// its cap. Past the cap a request is refused: with NULL where CUPTI accepts
// it (CUPTI then drops records and counts them), otherwise with a scratch
// buffer whose records are counted and discarded.
//
// Buffers are mmap'd whole, so a released one can give its pages back.
//
// Threads: Acquire runs on whatever thread CUPTI asks for a buffer from
// (application threads, CUPTI's worker); Release on the decoding thread.
// Lock order: mutex_ is a leaf; nothing is called while holding it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace prof::cupti {

class BufferPool {
 public:
  // cap_bytes: total of all pool buffers. null_allowed: CUPTI accepts a
  // NULL answer (true for every CUPTI 13; false keeps the scratch path).
  BufferPool(size_t cap_bytes, bool null_allowed);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of buffer_bytes(), or nullptr / a scratch buffer past the cap.
  // now_ns: when CUPTI asked (HeldSince).
  uint8_t* Acquire(uint64_t now_ns = 0);
  // Gives a buffer back (pool or scratch) once its records are read, zeroed
  // again: every buffer Acquire hands out is all zeros (fresh pages, and
  // here the used_bytes CUPTI wrote are cleared), which is what lets the
  // collector tell CUPTI not to zero it on the requesting thread
  // (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER). evict: hand the pages
  // back to the kernel instead (madvise; they read back as zeros), so the
  // buffer costs no memory until CUPTI fills it again.
  void Release(uint8_t* buffer, size_t used_bytes, bool evict = false);
  bool IsScratch(const uint8_t* buffer) const;
  // A pool buffer handed out before t_ns is not back yet: records written
  // before t_ns may still be in CUPTI's hands (one it is filling, or one
  // holding a record of device work still running, which a plain flush
  // keeps).
  bool HeldSince(uint64_t t_ns) const;

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t cap_bytes() const { return buffer_bytes_ * max_buffers_; }
  size_t allocated_bytes() const;  // pool buffers ever allocated (<= cap)
  size_t resident_bytes() const;   // allocated minus those evicted since
  uint64_t refused() const;        // requests answered NULL or with scratch
  // Every Acquire so far, answered or not (no lock: a window asks whether
  // CUPTI asked libprof for any buffer since it began).
  uint64_t requests() const { return requests_.load(std::memory_order_relaxed); }
  uint64_t evictions() const;      // releases that handed the pages back

 private:
  static constexpr size_t kScratchBuffers = 2;

  size_t buffer_bytes_;
  size_t max_buffers_;
  bool null_allowed_;

  mutable std::mutex mutex_;
  std::vector<uint8_t*> all_;      // every pool buffer allocated so far
  std::vector<uint8_t*> free_;     // pool buffers not held by CUPTI, pages resident
  std::vector<uint8_t*> evicted_;  // pool buffers not held by CUPTI, pages given back
  std::vector<uint8_t*> scratch_;  // fixed, allocated on first need
  std::vector<std::pair<uint8_t*, uint64_t>> held_;  // pool buffers CUPTI has, with when it asked
  size_t next_scratch_ = 0;
  uint64_t refused_ = 0;
  std::atomic<uint64_t> requests_{0};
  uint64_t evictions_ = 0;
};

// Buffer size for a pool cap: 256 KiB buffers for large caps (per-thread
// CUPTI buffers: many threads each hold one), smaller ones so
// that even a small cap holds 8 buffers, never under 16 KiB. Multiple of 8.
size_t BufferBytesForCap(size_t cap_bytes);

}  // namespace prof::cupti
