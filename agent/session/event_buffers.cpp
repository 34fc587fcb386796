#include "agent/session/event_buffers.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

namespace prof {
namespace {

// Unique per EventBuffers instance and per fork, so a thread's cached buffer
// from another instance or from the parent process is never reused.
std::atomic<uint32_t> g_next_generation{1};

struct ThreadSlot {
  ThreadBuffer* buffer = nullptr;
  uint32_t generation = 0;
  bool exited = false;  // set by the destructor: never register again
  ~ThreadSlot() {
    // Buffers are never freed, so this stays valid after the agent's objects
    // are gone; the consumer frees the dead thread's last chunk, then the
    // slot. A call from a later thread-exit destructor finds no buffer (the
    // generation still matches and `exited` is set, so it does not register
    // again) and is counted as dropped: the slot may already belong to
    // another thread.
    ThreadBuffer* b = buffer;
    buffer = nullptr;
    exited = true;
    if (b != nullptr) b->alive.store(false, std::memory_order_release);
  }
};
thread_local ThreadSlot t_slot;

}  // namespace

ChunkPool::~ChunkPool() {
  if (base_ != nullptr) munmap(base_, static_cast<size_t>(count_) * sizeof(EventChunk));
}

bool ChunkPool::Init(uint64_t bytes) {
  if (base_ != nullptr) return true;
  uint64_t n = bytes / sizeof(EventChunk);
  if (n == 0) n = 1;
  if (n > 0xFFFF'FFF0ull) n = 0xFFFF'FFF0ull;
  // MAP_NORESERVE: pages cost memory only once a thread writes into them.
  void* p = mmap(nullptr, n * sizeof(EventChunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  next_.reset(new (std::nothrow) std::atomic<uint32_t>[n]);
  if (!next_) {
    munmap(p, n * sizeof(EventChunk));
    return false;
  }
  count_ = static_cast<uint32_t>(n);
  base_ = static_cast<EventChunk*>(p);
  ResetAllFree();
  return true;
}

void ChunkPool::ResetAllFree() {
  head_.store(0, std::memory_order_relaxed);
  for (uint32_t i = count_; i-- > 0;) Push(i);
}

void ChunkPool::Push(uint32_t index) {
  uint64_t old_head = head_.load(std::memory_order_relaxed);
  uint64_t new_head;
  do {
    next_[index].store(static_cast<uint32_t>(old_head), std::memory_order_relaxed);
    uint64_t tag = (old_head >> 32) + 1;
    new_head = (tag << 32) | (index + 1);
  } while (!head_.compare_exchange_weak(old_head, new_head, std::memory_order_release, std::memory_order_relaxed));
}

EventChunk* ChunkPool::Acquire() {
  uint64_t old_head = head_.load(std::memory_order_acquire);
  while (true) {
    uint32_t top = static_cast<uint32_t>(old_head);
    if (top == 0) return nullptr;
    uint32_t next = next_[top - 1].load(std::memory_order_relaxed);
    uint64_t new_head = (((old_head >> 32) + 1) << 32) | next;
    if (head_.compare_exchange_weak(old_head, new_head, std::memory_order_acquire, std::memory_order_acquire)) {
      EventChunk* chunk = &base_[top - 1];
      chunk->count.store(0, std::memory_order_relaxed);
      chunk->next.store(nullptr, std::memory_order_relaxed);
      return chunk;
    }
  }
}

void ChunkPool::Release(EventChunk* chunk) { Push(static_cast<uint32_t>(chunk - base_)); }

void ChunkPool::Evict(EventChunk* chunk) {
  // Not yet on the free list, so no thread writes it. Failure only keeps the
  // pages resident (the footprint stays what it was), so it is ignored.
  (void)madvise(chunk, sizeof(EventChunk), MADV_DONTNEED);
}

EventBuffers::EventBuffers(uint32_t max_threads)
    : max_threads_(max_threads),
      threads_(new std::atomic<ThreadBuffer*>[max_threads]),
      drop_windows_(new DropWindow[kDropWindows]),
      pending_drops_(new std::atomic<uint64_t>[kPendingDrops]) {
  for (uint32_t i = 0; i < kPendingDrops; ++i) pending_drops_[i].store(0, std::memory_order_relaxed);
  for (uint32_t i = 0; i < max_threads_; ++i) threads_[i].store(nullptr, std::memory_order_relaxed);
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
  drop_windows_[0].id.store(0, std::memory_order_relaxed);  // window 0: [0, ~0), no schedule
}

ThreadBuffer* EventBuffers::Register() {
  std::lock_guard<std::mutex> lock(register_mu_);
  ThreadBuffer* b = free_head_.load(std::memory_order_acquire);
  while (b != nullptr && !free_head_.compare_exchange_weak(b, b->next_free, std::memory_order_acquire, std::memory_order_acquire)) {
  }
  if (b != nullptr) {
    // The consumer emptied it before pushing; the owner side starts afresh.
    b->tail = nullptr;
    b->alive.store(true, std::memory_order_relaxed);
    b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    threads_[b->index].store(b, std::memory_order_release);
    return b;
  }
  uint32_t n = count_.load(std::memory_order_relaxed);
  if (n >= max_threads_) {
    // Every slot taken: those of threads that exited since the consumer's
    // last pass are free for the asking.
    if (!Reclaim()) return nullptr;
    b = free_head_.load(std::memory_order_acquire);
    while (b != nullptr &&
           !free_head_.compare_exchange_weak(b, b->next_free, std::memory_order_acquire, std::memory_order_acquire)) {
    }
    if (b == nullptr) return nullptr;
    b->tail = nullptr;
    b->alive.store(true, std::memory_order_relaxed);
    b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    threads_[b->index].store(b, std::memory_order_release);
    return b;
  }
  b = new (std::nothrow) ThreadBuffer;
  if (b == nullptr) return nullptr;
  b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
  b->index = n;
  threads_[n].store(b, std::memory_order_release);
  count_.store(n + 1, std::memory_order_release);
  return b;
}

void EventBuffers::FreeSlot(ThreadBuffer* b) {
  // The slot reads empty first, so no later Collect drains the buffer while
  // it is on the free list or after a new thread took it.
  threads_[b->index].store(nullptr, std::memory_order_relaxed);
  b->head = nullptr;
  b->consumed = 0;
  b->first.store(nullptr, std::memory_order_relaxed);
  ThreadBuffer* top = free_head_.load(std::memory_order_relaxed);
  do {
    b->next_free = top;
  } while (!free_head_.compare_exchange_weak(top, b, std::memory_order_release, std::memory_order_relaxed));
}

// No slot when this thread first asked (every one live, or held by threads
// that exited since the last pass while a pass was running): asks again once
// a pass has freed some, or the thread would drop every event of its life.
// The drop path only, out of line.
__attribute__((noinline)) ThreadBuffer* EventBuffers::RegisterAgain(ThreadBuffer** slot_buffer, bool exited) {
  if (exited || free_head_.load(std::memory_order_relaxed) == nullptr) return nullptr;
  *slot_buffer = Register();
  return *slot_buffer;
}

void EventBuffers::Append(const HostEvent& event) {
  ThreadSlot& slot = t_slot;  // one TLS look-up
  uint32_t gen = generation_.load(std::memory_order_relaxed);
  if (slot.generation != gen) {
    slot.buffer = Register();
    slot.generation = gen;
  }
  ThreadBuffer* b = slot.buffer;
  if (__builtin_expect(b == nullptr, 0)) {
    b = RegisterAgain(&slot.buffer, slot.exited);
    if (b == nullptr) {
      no_slot_drops_.fetch_add(1, std::memory_order_relaxed);
      CountDrop(event.start_ns);
      return;
    }
  }
  EventChunk* tail = b->tail;
  uint32_t n = tail != nullptr ? tail->count.load(std::memory_order_relaxed) : kChunkEvents;
  if (n == kChunkEvents) {
    EventChunk* fresh = pool_.Acquire();
    if (fresh == nullptr) {
      CountDrop(event.start_ns);
      return;
    }
    if (tail == nullptr) {
      b->first.store(fresh, std::memory_order_release);
    } else {
      tail->next.store(fresh, std::memory_order_release);
    }
    b->tail = tail = fresh;
    n = 0;
  }
  tail->events[n] = event;
  tail->events[n].tid = b->tid;
  tail->count.store(n + 1, std::memory_order_release);
}

bool EventBuffers::DrainChain(EventChunk** head, uint32_t* consumed, const std::atomic<bool>* alive,
                              uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out) {
  while (*head != nullptr) {
    EventChunk* c = *head;
    uint32_t n = c->count.load(std::memory_order_acquire);
    while (*consumed < n) {
      const HostEvent& e = c->events[*consumed];
      if (e.start_ns >= end_ns) return false;  // belongs to a later window
      if (e.start_ns >= begin_ns && out != nullptr) out->push_back(e);
      ++*consumed;
    }
    EventChunk* next = c->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      // The owner moved on: this chunk is ours to return. Re-read count: all
      // events were published before next was.
      if (*consumed < c->count.load(std::memory_order_acquire)) continue;
      *head = next;
      *consumed = 0;
      if (out != nullptr) pool_.Evict(c);
      pool_.Release(c);
      continue;
    }
    bool gone = alive == nullptr || !alive->load(std::memory_order_acquire);
    if (gone && *consumed == c->count.load(std::memory_order_acquire)) {
      // Dead thread, fully drained: give its last chunk back too.
      *head = nullptr;
      if (out != nullptr) pool_.Evict(c);
      pool_.Release(c);
      return true;
    }
    return false;
  }
  return alive == nullptr || !alive->load(std::memory_order_acquire);
}

void EventBuffers::Drain(ThreadBuffer* b, uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out) {
  if (b->head == nullptr) {
    b->head = b->first.load(std::memory_order_acquire);
    b->consumed = 0;
    if (b->head == nullptr) return;
  }
  if (DrainChain(&b->head, &b->consumed, &b->alive, begin_ns, end_ns, out)) {
    b->first.store(nullptr, std::memory_order_relaxed);
    b->tail = nullptr;
  }
}

void EventBuffers::Retire(ThreadBuffer* b) {
  if (b->head != nullptr || b->first.load(std::memory_order_relaxed) != nullptr) {
    // Events for later windows: they outlive the slot, parked (packed with
    // other exited threads') or, when the pool has no chunk for that, as
    // the thread's own chain. Drain has started it (head set) unless it
    // never had a chunk.
    EventChunk* head = b->head != nullptr ? b->head : b->first.load(std::memory_order_relaxed);
    uint32_t consumed = b->head != nullptr ? b->consumed : 0;
    if (!Park(head, consumed)) {
      try {
        orphans_.push_back({head, consumed});
      } catch (...) {
        return;  // no memory for the list: the slot keeps the chain until it is drained
      }
    }
  }
  FreeSlot(b);
}

bool EventBuffers::Park(EventChunk* head, uint32_t consumed) {
  // The owner is gone: the chain is final.
  size_t left = 0;
  for (EventChunk* c = head; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
    left += c->count.load(std::memory_order_acquire) - (c == head ? consumed : 0);
  }
  size_t need = (parked_ + left + kChunkEvents - 1) / kChunkEvents;
  size_t had = parked_chunks_.size();
  try {
    parked_chunks_.reserve(need);
  } catch (...) {
    return false;
  }
  while (parked_chunks_.size() < need) {
    EventChunk* c = pool_.Acquire();
    if (c == nullptr) {
      while (parked_chunks_.size() > had) {
        pool_.Release(parked_chunks_.back());
        parked_chunks_.pop_back();
      }
      return false;
    }
    parked_chunks_.push_back(c);
  }
  for (EventChunk* c = head; c != nullptr;) {
    uint32_t n = c->count.load(std::memory_order_acquire);
    for (uint32_t i = c == head ? consumed : 0; i < n; ++i) ParkedAt(parked_++) = c->events[i];
    EventChunk* next = c->next.load(std::memory_order_acquire);
    pool_.Release(c);
    c = next;
  }
  return true;
}

void EventBuffers::PassParked(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out) {
  size_t kept = 0;
  for (size_t i = 0; i < parked_; ++i) {
    const HostEvent e = ParkedAt(i);
    if (e.start_ns >= end_ns) {
      ParkedAt(kept++) = e;
    } else if (e.start_ns >= begin_ns && out != nullptr) {
      out->push_back(e);
    }
  }
  parked_ = kept;
  size_t need = (kept + kChunkEvents - 1) / kChunkEvents;
  while (parked_chunks_.size() > need) {
    pool_.Release(parked_chunks_.back());
    parked_chunks_.pop_back();
  }
}

bool EventBuffers::Reclaim() {
  std::unique_lock<std::mutex> lock(consumer_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  uint32_t n = count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadBuffer* b = threads_[i].load(std::memory_order_acquire);
    if (b != nullptr && !b->alive.load(std::memory_order_acquire)) Retire(b);
  }
  return true;
}

void EventBuffers::Pass(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out) {
  std::lock_guard<std::mutex> lock(consumer_mu_);
  uint32_t n = count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadBuffer* b = threads_[i].load(std::memory_order_acquire);
    if (b == nullptr) continue;
    // Read before draining: once the thread is seen dead, all it wrote
    // (events, first chunk) is visible, so what is left is final.
    bool dead = !b->alive.load(std::memory_order_acquire);
    Drain(b, begin_ns, end_ns, out);
    if (dead) Retire(b);
  }
  std::erase_if(orphans_, [&](Orphan& o) { return DrainChain(&o.head, &o.consumed, nullptr, begin_ns, end_ns, out); });
  PassParked(begin_ns, end_ns, out);
}

void EventBuffers::Collect(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out, uint64_t* dropped,
                           uint64_t window) {
  Pass(begin_ns, end_ns, out);
  uint64_t drops = unattributed_drops_.exchange(0, std::memory_order_relaxed);
  if (window == kAnyWindow) {
    for (uint32_t i = 0; i < kDropWindows; ++i) drops += drop_windows_[i].count.exchange(0, std::memory_order_relaxed);
  } else {
    DropWindow& w = drop_windows_[window % kDropWindows];
    if (w.id.load(std::memory_order_acquire) == window) drops += w.count.exchange(0, std::memory_order_relaxed);
  }
  if (dropped != nullptr) *dropped += drops;
}

void EventBuffers::Discard(uint64_t before_ns) { Pass(before_ns, before_ns, nullptr); }

uint64_t EventBuffers::SetDropRange(uint64_t begin_ns, uint64_t end_ns) {
  uint64_t window = drop_window_.load(std::memory_order_relaxed);
  bool opens = begin_ns != drop_begin_ns_.load(std::memory_order_relaxed) || begin_ns == ~0ull;
  if (opens) {
    // A window opens: its counter starts at 0. One kDropWindows ids older
    // and never collected (a writer that far behind): its drops are not
    // lost, the next Collect takes them.
    window = ++last_window_;
    DropWindow& w = drop_windows_[window % kDropWindows];
    uint64_t left = w.count.exchange(0, std::memory_order_relaxed);
    if (left != 0) unattributed_drops_.fetch_add(left, std::memory_order_relaxed);
    w.id.store(window, std::memory_order_release);
  }
  uint32_t seq = drop_range_seq_.load(std::memory_order_relaxed);
  drop_range_seq_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  drop_begin_ns_.store(begin_ns, std::memory_order_relaxed);
  drop_end_ns_.store(end_ns, std::memory_order_relaxed);
  drop_window_.store(window, std::memory_order_relaxed);
  // seq_cst, as the scan below: a dropper that parked a drop and then read
  // the old sequence number has its drop seen by the scan (ClaimPendingDrops).
  drop_range_seq_.store(seq + 2, std::memory_order_seq_cst);
  if (opens) ClaimPendingDrops(begin_ns, end_ns, window);
  return window;
}

void EventBuffers::ClaimPendingDrops(uint64_t begin_ns, uint64_t end_ns, uint64_t window) {
  uint64_t claimed = 0;
  for (uint32_t i = 0; i < kPendingDrops; ++i) {
    uint64_t v = pending_drops_[i].load(std::memory_order_seq_cst);
    if (v == 0 || v >= end_ns) continue;
    // Before begin_ns: a drop between two windows, nobody's; cleared.
    bool ours = v >= begin_ns;
    if (pending_drops_[i].compare_exchange_strong(v, 0, std::memory_order_seq_cst) && ours) ++claimed;
  }
  // More drops between the boundary and the opening than the ring holds:
  // those it lost may be this window's. Charged to it (at most that many
  // too many, all of them drops), so none of its own is left out.
  uint64_t displaced = pending_displaced_.exchange(0, std::memory_order_relaxed);
  if (displaced != 0 && pending_displaced_max_ns_.exchange(0, std::memory_order_relaxed) >= begin_ns) {
    claimed += displaced;
  }
  if (claimed == 0) return;
  DropWindow& w = drop_windows_[window % kDropWindows];
  if (w.id.load(std::memory_order_acquire) == window) {
    w.count.fetch_add(claimed, std::memory_order_relaxed);
  } else {
    unattributed_drops_.fetch_add(claimed, std::memory_order_relaxed);
  }
}

// The drop path only (the pool is empty, or no slot): a consistent read of
// the range, then the window's counter. A drop of a call that started after
// the current window's end may belong to the next window, which the session
// opens late (its agent thread acts on a time step's boundary when it next
// runs): it waits in pending_drops_ until a window opens and claims it.
void EventBuffers::CountDrop(uint64_t start_ns) {
  if (start_ns == 0) start_ns = 1;  // 0 marks an empty pending slot
  while (true) {
    uint64_t begin, end, window;
    uint32_t seq;
    while (true) {
      seq = drop_range_seq_.load(std::memory_order_acquire);
      if (seq & 1) continue;
      begin = drop_begin_ns_.load(std::memory_order_relaxed);
      end = drop_end_ns_.load(std::memory_order_relaxed);
      window = drop_window_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (drop_range_seq_.load(std::memory_order_relaxed) == seq) break;
    }
    if (begin != ~0ull) {  // ~0: no window has opened yet
      if (start_ns < begin) return;  // before the window: its warmup, or between windows
      if (start_ns < end) {
        DropWindow& w = drop_windows_[window % kDropWindows];
        if (w.id.load(std::memory_order_acquire) == window) {
          w.count.fetch_add(1, std::memory_order_relaxed);
        } else {
          unattributed_drops_.fetch_add(1, std::memory_order_relaxed);
        }
        return;
      }
    }
    // After the window's end (or before the first): pending, for a window
    // that may open later.
    uint32_t slot = static_cast<uint32_t>(pending_next_.fetch_add(1, std::memory_order_relaxed) % kPendingDrops);
    uint64_t old = pending_drops_[slot].exchange(start_ns, std::memory_order_seq_cst);
    if (old != 0) {
      pending_displaced_.fetch_add(1, std::memory_order_relaxed);
      uint64_t max = pending_displaced_max_ns_.load(std::memory_order_relaxed);
      while (old > max && !pending_displaced_max_ns_.compare_exchange_weak(max, old, std::memory_order_relaxed)) {
      }
    }
    // No window opened meanwhile: the next opening's scan sees the drop.
    if (drop_range_seq_.load(std::memory_order_seq_cst) == seq) return;
    // One did: take the drop back and judge it by the new range, unless the
    // opening's scan has claimed it (or a later drop displaced it: counted).
    uint64_t mine = start_ns;
    if (!pending_drops_[slot].compare_exchange_strong(mine, 0, std::memory_order_seq_cst)) return;
  }
}

void EventBuffers::ResetAfterFork() {
  count_.store(0, std::memory_order_relaxed);
  free_head_.store(nullptr, std::memory_order_relaxed);
  for (uint32_t i = 0; i < max_threads_; ++i) threads_[i].store(nullptr, std::memory_order_relaxed);
  pool_.ResetAllFree();
  orphans_.clear();  // their chunks are free again below
  parked_chunks_.clear();
  parked_ = 0;
  drop_range_seq_.store(0, std::memory_order_relaxed);
  drop_begin_ns_.store(0, std::memory_order_relaxed);
  drop_end_ns_.store(~0ull, std::memory_order_relaxed);
  drop_window_.store(0, std::memory_order_relaxed);
  last_window_ = 0;
  for (uint32_t i = 0; i < kDropWindows; ++i) {
    drop_windows_[i].id.store(i == 0 ? 0 : kAnyWindow, std::memory_order_relaxed);
    drop_windows_[i].count.store(0, std::memory_order_relaxed);
  }
  unattributed_drops_.store(0, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kPendingDrops; ++i) pending_drops_[i].store(0, std::memory_order_relaxed);
  pending_next_.store(0, std::memory_order_relaxed);
  pending_displaced_.store(0, std::memory_order_relaxed);
  pending_displaced_max_ns_.store(0, std::memory_order_relaxed);
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
  new (&register_mu_) std::mutex();  // a parent thread may have held it at fork
  new (&consumer_mu_) std::mutex();
}

void EventBuffers::OnThreadExit(ThreadBuffer* buffer) {
  if (buffer != nullptr) buffer->alive.store(false, std::memory_order_release);
}

}  // namespace prof
