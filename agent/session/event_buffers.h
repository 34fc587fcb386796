// Per-thread host-event buffers under one memory cap (PROF_BUFFER_MB).
//
// Each thread appends HostEvents to its own chain of fixed-size chunks taken
// from a preallocated pool: no lock, no allocation, no system call per event
// (a thread's very first event registers it: one mutex and one small
// allocation per thread, like Tracy's per-thread queues). When the pool is
// empty, events are dropped and counted per thread.
//
// Slots are reused: once a thread has exited and the consumer has taken (or
// discarded) its last event, the consumer empties the slot and pushes the
// buffer onto a free list, and the next thread to register pops it. A slot
// holding events no window has collected yet is never handed out, so at most
// kMaxThreads threads alive at once (or exited with unread events) have
// buffers; only past that are a thread's events dropped (counted).
//
// One consumer (the writer thread) drains the chains: it copies the events of
// a time range and returns chunks the owner has moved past to the pool.
// Publication: the owner writes an event, then stores chunk->count with
// release; the consumer loads count with acquire. The owner links a new chunk
// through chunk->next (release) and never touches the old one again, which is
// what lets the consumer free it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "agent/session/events.h"

namespace prof {

// PROF_BUFFER_MB is one budget: half for the device side (the CUPTI
// collector sizes its raw buffer pool and decoded records from it), and of
// the host half a sixteenth of the whole for NVTX range
// names (agent/base/strings.h), one for stored NVTX ranges, the rest for events.
inline constexpr uint64_t NvtxNameBytes(uint64_t budget_bytes) { return budget_bytes / 16; }
inline constexpr uint64_t NvtxRangeBytes(uint64_t budget_bytes) { return budget_bytes / 16; }
inline constexpr uint64_t HostEventBytes(uint64_t budget_bytes) {
  return budget_bytes / 2 - NvtxNameBytes(budget_bytes) - NvtxRangeBytes(budget_bytes);
}

inline constexpr uint32_t kChunkEvents = 255;  // header + 255 events = 16 KiB

struct alignas(64) EventChunk {
  std::atomic<EventChunk*> next{nullptr};      // owner moved on (owner: release)
  std::atomic<uint32_t> count{0};              // events published (owner: release)
  char pad[64 - sizeof(std::atomic<uint32_t>) - sizeof(std::atomic<EventChunk*>)];
  HostEvent events[kChunkEvents];
};
static_assert(sizeof(EventChunk) == 16384);

// Fixed pool of chunks in one lazily reserved mapping; lock-free free list
// (Treiber stack with a tag against ABA).
class ChunkPool {
 public:
  ChunkPool() = default;
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // Reserves max(bytes / 16 KiB, 1) chunks; later calls are no-ops.
  bool Init(uint64_t bytes);
  EventChunk* Acquire();  // nullptr when exhausted or not initialised
  void Release(EventChunk* chunk);
  // Gives a chunk's pages back to the kernel (it must not be on the free
  // list). Sealing copies events out of the pool; evicting each chunk as it
  // is copied keeps pool + copy near one pool's worth instead of two. The
  // price is a zero-filled page fault when the chunk is next used.
  void Evict(EventChunk* chunk);
  uint32_t capacity() const { return count_; }
  // After fork in the child: every chunk is free again (no other threads).
  void ResetAllFree();

 private:
  void Push(uint32_t index);

  EventChunk* base_ = nullptr;
  uint32_t count_ = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> next_;  // free-list links, index + 1
  std::atomic<uint64_t> head_{0};                  // (tag << 32) | (index + 1); 0 = empty
};

struct ThreadBuffer {
  uint32_t tid = 0;
  uint32_t index = 0;  // slot in EventBuffers::threads_, fixed for the buffer's life
  // Owner only.
  EventChunk* tail = nullptr;
  // Owner publishes its first chunk here; the consumer starts from it.
  std::atomic<EventChunk*> first{nullptr};
  std::atomic<uint64_t> dropped{0};  // owner increments; consumer reads
  std::atomic<bool> alive{true};     // cleared at thread exit
  // Consumer only.
  EventChunk* head = nullptr;
  uint32_t consumed = 0;
  uint64_t dropped_reported = 0;
  // Free list link: written by the consumer before it pushes the buffer,
  // read by Register after it pops it.
  ThreadBuffer* next_free = nullptr;
};

class EventBuffers {
 public:
  static constexpr uint32_t kMaxThreads = 8192;

  EventBuffers();
  bool Init(uint64_t bytes) { return pool_.Init(bytes); }

  // The calling thread's buffer (registered on first use); owner side.
  void Append(const HostEvent& event);

  // Consumer: moves events with start_ns in [begin_ns, end_ns) into out,
  // discards older ones, leaves newer ones. Adds drops since the last call.
  // Chunks copied out are evicted (ChunkPool::Evict) so the copy does not
  // double the resident footprint.
  void Collect(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out, uint64_t* dropped);
  // Consumer: discards the events that started before before_ns. Drop counts
  // are left alone: which drops a window owns is decided when they happen
  // (SetDropRange), not when the writer gets to this call.
  void Discard(uint64_t before_ns);

  // Drops are counted only for events whose start_ns is in [begin_ns,
  // end_ns): the recording window's span, published by the thread that opens
  // (end_ns = ~0) and ends it, synchronously, before the writer is told. A
  // drop is charged when it happens, so a writer that runs late (a loaded
  // machine) can neither forget a window's early drops nor charge it the
  // warmup's. Default [0, ~0): every drop counts (no schedule).
  void SetDropRange(uint64_t begin_ns, uint64_t end_ns);

  // fork child: forget the parent's threads (their buffers stay leaked; the
  // memory is a copy), free every chunk, and make each thread re-register.
  void ResetAfterFork();

  // Slots ever used (live, exited with unread events, or free for reuse).
  uint32_t thread_count() const { return count_.load(std::memory_order_acquire); }
  uint64_t unregistered_drops() const { return no_slot_drops_.load(std::memory_order_relaxed); }

  // Marks the calling thread's buffer dead (thread exit).
  void OnThreadExit(ThreadBuffer* buffer);

 private:
  ThreadBuffer* Register();
  // Consumer: the exited, fully drained thread in slot b->index gives it back.
  void FreeSlot(ThreadBuffer* b);
  bool DropCounts(uint64_t start_ns) const;
  void Drain(ThreadBuffer* b, uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out);

  ChunkPool pool_;
  std::mutex register_mu_;  // registration only; never held by the consumer
  std::unique_ptr<std::atomic<ThreadBuffer*>[]> threads_;
  std::atomic<uint32_t> count_{0};  // slots ever used (high-water mark)
  // Free buffers: pushed by the consumer only, popped under register_mu_
  // only. One popper at a time means a popped node cannot come back to the
  // head during a pop, so the plain pointer stack has no ABA problem.
  std::atomic<ThreadBuffer*> free_head_{nullptr};
  std::atomic<uint64_t> no_slot_drops_{0};  // threads past kMaxThreads
  uint64_t no_slot_drops_reported_ = 0;      // consumer only
  std::atomic<uint32_t> generation_{1};
  // SetDropRange's span under a seqlock (one writer: the session, under its
  // lock; readers: a thread that drops an event).
  std::atomic<uint32_t> drop_range_seq_{0};
  std::atomic<uint64_t> drop_begin_ns_{0};
  std::atomic<uint64_t> drop_end_ns_{~0ull};
};

}  // namespace prof
