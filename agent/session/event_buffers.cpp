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
  ~ThreadSlot() {
    // Buffers are never freed, so this stays valid after the agent's objects
    // are gone; the consumer frees the dead thread's last chunk, then the
    // slot. A call from a later thread-exit destructor finds no buffer (the
    // generation still matches, so it does not register again) and is
    // counted as dropped: the slot may already belong to another thread.
    ThreadBuffer* b = buffer;
    buffer = nullptr;
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

EventBuffers::EventBuffers() : threads_(new std::atomic<ThreadBuffer*>[kMaxThreads]) {
  for (uint32_t i = 0; i < kMaxThreads; ++i) threads_[i].store(nullptr, std::memory_order_relaxed);
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
}

ThreadBuffer* EventBuffers::Register() {
  std::lock_guard<std::mutex> lock(register_mu_);
  ThreadBuffer* b = free_head_.load(std::memory_order_acquire);
  while (b != nullptr && !free_head_.compare_exchange_weak(b, b->next_free, std::memory_order_acquire, std::memory_order_acquire)) {
  }
  if (b != nullptr) {
    // The consumer emptied it before pushing; the owner side starts afresh.
    b->tail = nullptr;
    b->dropped.store(0, std::memory_order_relaxed);
    b->dropped_reported = 0;
    b->alive.store(true, std::memory_order_relaxed);
    b->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    threads_[b->index].store(b, std::memory_order_release);
    return b;
  }
  uint32_t n = count_.load(std::memory_order_relaxed);
  if (n >= kMaxThreads) return nullptr;
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

void EventBuffers::Append(const HostEvent& event) {
  uint32_t gen = generation_.load(std::memory_order_relaxed);
  if (t_slot.generation != gen) {
    t_slot.buffer = Register();
    t_slot.generation = gen;
  }
  ThreadBuffer* b = t_slot.buffer;
  if (b == nullptr) {
    if (DropCounts(event.start_ns)) no_slot_drops_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  EventChunk* tail = b->tail;
  uint32_t n = tail != nullptr ? tail->count.load(std::memory_order_relaxed) : kChunkEvents;
  if (n == kChunkEvents) {
    EventChunk* fresh = pool_.Acquire();
    if (fresh == nullptr) {
      if (DropCounts(event.start_ns)) {
        b->dropped.store(b->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      }
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

void EventBuffers::Drain(ThreadBuffer* b, uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out) {
  if (b->head == nullptr) {
    b->head = b->first.load(std::memory_order_acquire);
    b->consumed = 0;
    if (b->head == nullptr) return;
  }
  while (b->head != nullptr) {
    EventChunk* c = b->head;
    uint32_t n = c->count.load(std::memory_order_acquire);
    while (b->consumed < n) {
      const HostEvent& e = c->events[b->consumed];
      if (e.start_ns >= end_ns) return;  // belongs to a later window
      if (e.start_ns >= begin_ns && out != nullptr) out->push_back(e);
      ++b->consumed;
    }
    EventChunk* next = c->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      // The owner moved on: this chunk is ours to return. Re-read count: all
      // events were published before next was.
      if (b->consumed < c->count.load(std::memory_order_acquire)) continue;
      b->head = next;
      b->consumed = 0;
      if (out != nullptr) pool_.Evict(c);
      pool_.Release(c);
      continue;
    }
    if (!b->alive.load(std::memory_order_acquire) && b->consumed == c->count.load(std::memory_order_acquire)) {
      // Dead thread, fully drained: give its last chunk back too.
      b->head = nullptr;
      b->first.store(nullptr, std::memory_order_relaxed);
      b->tail = nullptr;
      if (out != nullptr) pool_.Evict(c);
      pool_.Release(c);
    }
    return;
  }
}

void EventBuffers::Collect(uint64_t begin_ns, uint64_t end_ns, std::vector<HostEvent>* out, uint64_t* dropped) {
  uint32_t n = count_.load(std::memory_order_acquire);
  uint64_t drops = 0;
  for (uint32_t i = 0; i < n; ++i) {
    ThreadBuffer* b = threads_[i].load(std::memory_order_acquire);
    if (b == nullptr) continue;
    // Read before draining: once the thread is seen dead, all it wrote
    // (events, first chunk, drops) is visible, so an empty buffer is final.
    bool dead = !b->alive.load(std::memory_order_acquire);
    Drain(b, begin_ns, end_ns, out);
    uint64_t d = b->dropped.load(std::memory_order_relaxed);
    drops += d - b->dropped_reported;
    b->dropped_reported = d;
    if (dead && b->head == nullptr && b->first.load(std::memory_order_relaxed) == nullptr) FreeSlot(b);
  }
  uint64_t no_slot = no_slot_drops_.load(std::memory_order_relaxed);
  drops += no_slot - no_slot_drops_reported_;
  no_slot_drops_reported_ = no_slot;
  if (dropped != nullptr) *dropped += drops;
}

void EventBuffers::Discard(uint64_t before_ns) {
  uint32_t n = count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; ++i) {
    ThreadBuffer* b = threads_[i].load(std::memory_order_acquire);
    if (b != nullptr) Drain(b, before_ns, before_ns, nullptr);
  }
}

void EventBuffers::SetDropRange(uint64_t begin_ns, uint64_t end_ns) {
  uint32_t seq = drop_range_seq_.load(std::memory_order_relaxed);
  drop_range_seq_.store(seq + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  drop_begin_ns_.store(begin_ns, std::memory_order_relaxed);
  drop_end_ns_.store(end_ns, std::memory_order_relaxed);
  drop_range_seq_.store(seq + 2, std::memory_order_release);
}

// The drop path only (the pool is empty): a consistent read of the range.
bool EventBuffers::DropCounts(uint64_t start_ns) const {
  while (true) {
    uint32_t seq = drop_range_seq_.load(std::memory_order_acquire);
    if (seq & 1) continue;
    uint64_t begin = drop_begin_ns_.load(std::memory_order_relaxed);
    uint64_t end = drop_end_ns_.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (drop_range_seq_.load(std::memory_order_relaxed) == seq) return start_ns >= begin && start_ns < end;
  }
}

void EventBuffers::ResetAfterFork() {
  count_.store(0, std::memory_order_relaxed);
  free_head_.store(nullptr, std::memory_order_relaxed);
  for (uint32_t i = 0; i < kMaxThreads; ++i) threads_[i].store(nullptr, std::memory_order_relaxed);
  pool_.ResetAllFree();
  drop_range_seq_.store(0, std::memory_order_relaxed);
  drop_begin_ns_.store(0, std::memory_order_relaxed);
  drop_end_ns_.store(~0ull, std::memory_order_relaxed);
  generation_.store(g_next_generation.fetch_add(1), std::memory_order_relaxed);
  new (&register_mu_) std::mutex();  // a parent thread may have held it at fork
}

void EventBuffers::OnThreadExit(ThreadBuffer* buffer) {
  if (buffer != nullptr) buffer->alive.store(false, std::memory_order_release);
}

}  // namespace prof
