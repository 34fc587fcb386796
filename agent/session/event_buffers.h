// Per-thread host-event buffers under one memory cap (PROF_BUFFER_MB).
//
// Each thread appends HostEvents to its own chain of fixed-size chunks taken
// from a preallocated pool: no lock, no allocation, no system call per event
// (a thread's very first event registers it: one mutex and one small
// allocation per thread, like Tracy's per-thread queues). When the pool is
// empty, events are dropped and counted per thread.
//
// Slots are reused: the first time the consumer (Collect or Discard) finds a
// thread exited, it takes what the thread left for later windows out of the
// slot (an orphaned chain of chunks it drains in later passes, never written
// again), empties the slot and pushes the buffer onto a free list, and the
// next thread to register pops it. So at most kMaxThreads threads alive at
// once (or exited since the consumer's last pass) have buffers, however many
// threads the process makes over its life and however late the writer runs;
// only past that are a thread's events dropped (counted).
//
// Drops are charged to the window their call started in, when they happen:
// each window the session opens (SetDropRange) gets an id and a counter, and
// Collect takes that window's counter, not whatever was dropped up to the
// moment the writer got to it (a late writer used to charge later windows'
// drops to an earlier one and leave the later ones at 0).
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

#include "model/events.h"

namespace prof {

// PROF_BUFFER_MB is one budget: half for the device side (the CUPTI
// collector sizes its raw buffer pool and decoded records from it), and of
// the host half a sixteenth of the whole for NVTX range
// names (base/strings.h), one for stored NVTX ranges, the rest for events.
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
  std::atomic<bool> alive{true};     // cleared at thread exit
  // Consumer only.
  EventChunk* head = nullptr;
  uint32_t consumed = 0;
  // Free list link: written by the consumer before it pushes the buffer,
  // read by Register after it pops it.
  ThreadBuffer* next_free = nullptr;
};

class EventBuffers {
 public:
  // Thread slots (buffers of threads alive, or exited since the consumer's
  // last pass); tests pass fewer.
  static constexpr uint32_t kMaxThreads = 8192;
  // Collect's window when the caller names none: every drop not yet reported.
  static constexpr uint64_t kAnyWindow = ~0ull;
  // Windows whose drop counters are kept at once: a writer more than this
  // many windows behind charges the oldest one's drops to the next window it
  // collects (counted still, one window off).
  static constexpr uint32_t kDropWindows = 256;
  // Drops kept while no window is open (64 KiB), for the window that opens next.
  static constexpr uint32_t kPendingDrops = 8192;

  explicit EventBuffers(uint32_t max_threads = kMaxThreads);
  bool Init(uint64_t bytes) { return pool_.Init(bytes); }

  // The calling thread's buffer (registered on first use); owner side.
  void Append(const HostEvent& event);

  // Consumer: moves events with start_ns in [begin_ns, end_ns) into out,
  // discards older ones, leaves newer ones. Adds the drops of `window` (an
  // id SetDropRange returned; kAnyWindow: all not reported yet) and any
  // that could not be charged to their own window. Chunks copied out are
  // evicted (ChunkPool::Evict) so the copy does not double the resident
  // footprint.
  void Collect(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out, uint64_t* dropped,
               uint64_t window = kAnyWindow);
  // Consumer: discards the events that started before before_ns. Drop counts
  // are left alone: which drops a window owns is decided when they happen
  // (SetDropRange), not when the writer gets to this call.
  void Discard(uint64_t before_ns);

  // Drops are counted only for events whose start_ns is in [begin_ns,
  // end_ns): the recording window's span, published by the thread that opens
  // (end_ns = ~0) and ends it, synchronously, before the writer is told. A
  // drop is charged when it happens, so a writer that runs late (a loaded
  // machine) can neither forget a window's early drops nor charge it the
  // warmup's. A window opened after its start (a time step's boundary that
  // the agent thread acts on late) is also charged the drops made since
  // that start, kept until then (pending_drops_). Default [0, ~0): every
  // drop counts (no schedule).
  // Returns the window's id for Collect: a range with a new begin_ns opens
  // a new window, the same begin_ns (its end now known) keeps the id.
  uint64_t SetDropRange(uint64_t begin_ns, uint64_t end_ns);

  // fork child: forget the parent's threads (their buffers stay leaked; the
  // memory is a copy), free every chunk, and make each thread re-register.
  void ResetAfterFork();

  // Slots ever used (live, exited since the consumer's last pass, or free for reuse).
  uint32_t thread_count() const { return count_.load(std::memory_order_acquire); }
  // Events of threads that found no slot (all of them, reported or not).
  uint64_t unregistered_drops() const { return no_slot_drops_.load(std::memory_order_relaxed); }
  // Consumer: exited threads' chains still holding events for later
  // windows, and their events parked (copied into shared chunks).
  size_t orphans() const { return orphans_.size(); }
  size_t parked() const { return parked_; }

  // Marks the calling thread's buffer dead (thread exit).
  void OnThreadExit(ThreadBuffer* buffer);

  // Frees the slots of exited threads (what they hold for later windows
  // stays, as orphans) without reading any event: the agent thread calls it
  // at each wake, so slots turn over even while the writer is busy sealing
  // an earlier window; Register calls it (if no pass is running) before it
  // gives up for want of a slot. Never blocks: false if a pass was running.
  bool Reclaim();

 private:
  ThreadBuffer* Register();
  // Append's drop path for a thread without a slot: registers it if a slot
  // has been freed since (and the thread is not exiting).
  ThreadBuffer* RegisterAgain(ThreadBuffer** slot_buffer, bool exited);
  // Consumer: the slot b->index is given back.
  void FreeSlot(ThreadBuffer* b);
  // Consumer: an exited thread's slot is freed, what it holds for later
  // windows kept as an orphan.
  void Retire(ThreadBuffer* b);
  // Consumer: Drain or Discard over every slot and orphan.
  void Pass(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out);
  // The drop path: charges one dropped event that started at start_ns to
  // the window open then (if its call started inside it).
  void CountDrop(uint64_t start_ns);
  // SetDropRange, as a window opens: charges it the pending drops at or
  // after its start and clears the older ones.
  void ClaimPendingDrops(uint64_t begin_ns, uint64_t end_ns, uint64_t window);
  void Drain(ThreadBuffer* b, uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out);
  // Drains a chain from *head (event *consumed on); `alive`: its owner's
  // flag, or null for an orphan (owner gone). True once the owner is gone
  // and every chunk is consumed and released (*head is then null).
  bool DrainChain(EventChunk** head, uint32_t* consumed, const std::atomic<bool>* alive, uint64_t begin_ns,
                  uint64_t end_ns, std::vector<HostEvent>* out);

  // Consumer: copies the events left in an exited thread's final chain
  // into parked_ and returns its chunks to the pool; false (nothing moved)
  // when the pool has no chunk to park them in.
  bool Park(EventChunk* head, uint32_t consumed);
  HostEvent& ParkedAt(size_t i) { return parked_chunks_[i / kChunkEvents]->events[i % kChunkEvents]; }
  // Consumer: the parked events' share of a pass.
  void PassParked(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out);

  struct Orphan {
    EventChunk* head;
    uint32_t consumed;
  };
  struct DropWindow {
    std::atomic<uint64_t> id{kAnyWindow};
    std::atomic<uint64_t> count{0};
  };

  ChunkPool pool_;
  const uint32_t max_threads_;
  std::mutex register_mu_;  // registration only; never held by the consumer
  // The consumer side (Pass, Reclaim): slots' read state and orphans_. Never
  // taken by a thread appending an event; Reclaim only tries it.
  std::mutex consumer_mu_;
  std::unique_ptr<std::atomic<ThreadBuffer*>[]> threads_;
  std::atomic<uint32_t> count_{0};  // slots ever used (high-water mark)
  // Free buffers: pushed by the consumer only, popped under register_mu_
  // only. One popper at a time means a popped node cannot come back to the
  // head during a pop, so the plain pointer stack has no ABA problem.
  std::atomic<ThreadBuffer*> free_head_{nullptr};
  std::atomic<uint64_t> no_slot_drops_{0};  // threads past kMaxThreads (a total)
  std::atomic<uint32_t> generation_{1};
  std::vector<Orphan> orphans_;  // consumer only
  // Consumer only: events of exited threads, packed into pool chunks (a
  // thread per request leaves a few events for a later window; holding a
  // whole chunk per exited thread ran the pool dry after a few thousand).
  std::vector<EventChunk*> parked_chunks_;
  size_t parked_ = 0;
  // SetDropRange's span and window under a seqlock (one writer: the session,
  // under its lock; readers: a thread that drops an event).
  std::atomic<uint32_t> drop_range_seq_{0};
  std::atomic<uint64_t> drop_begin_ns_{0};
  std::atomic<uint64_t> drop_end_ns_{~0ull};
  std::atomic<uint64_t> drop_window_{0};
  uint64_t last_window_ = 0;  // SetDropRange's caller only
  // Per-window drop counters, by id modulo kDropWindows; drops whose
  // window's counter was taken over by a later window.
  std::unique_ptr<DropWindow[]> drop_windows_;
  std::atomic<uint64_t> unattributed_drops_{0};
  // Drops of calls that started after the current window's end, by start_ns
  // (0: empty), until the next window opens and claims those at or after its
  // start (ClaimPendingDrops): the session opens a time-step window when its
  // agent thread next runs, which on a busy machine is milliseconds after
  // the boundary the window starts at. A ring: a drop that overwrites an
  // older one counts it as displaced (and its latest start_ns), so a window
  // that opens later than that start is charged them rather than missing any.
  std::unique_ptr<std::atomic<uint64_t>[]> pending_drops_;
  std::atomic<uint64_t> pending_next_{0};
  std::atomic<uint64_t> pending_displaced_{0};
  std::atomic<uint64_t> pending_displaced_max_ns_{0};
};

}  // namespace prof
