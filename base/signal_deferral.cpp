#include "base/signal_deferral.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace prof {
namespace {

// One word per slot: 0 free, else (kernel tid << 8 | pending signal, 0 if
// none). Written by the owning thread (claim, release) and by a handler
// running on that same thread (the signal), so the only contention is
// between threads claiming free slots. A cache line each: threads in their
// sections at the same time do not share one.
struct alignas(64) Slot {
  std::atomic<uint64_t> word{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the handler needs a lock-free word");
constexpr uint64_t kSignalMask = 0xff;
static_assert(NSIG - 1 <= static_cast<int>(kSignalMask), "a signal number fits in the word's low byte");

Slot g_slots[kExitDeferralSlots];
std::atomic<uint64_t> g_missed{0};

// Ordinary thread-locals, read and written only in normal context; one
// struct, so a section finds them with one TLS lookup.
struct ThreadState {
  int depth = 0;     // nesting of this thread's sections
  int slot = -1;     // slot held by the outermost section, or -1
  uint32_t tid = 0;  // kernel tid, 0 until the first section (a fork child's thread: set again)
};
thread_local ThreadState t_state;

uint32_t KernelTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

// A free slot for tid other than `first` (held), or -1; counted when none.
__attribute__((noinline)) int ClaimElsewhere(uint64_t mine, int first) {
  for (int n = 1; n < kExitDeferralSlots; ++n) {
    int i = (first + n) % kExitDeferralSlots;
    uint64_t expected = 0;
    // A load first: a held slot costs no locked instruction.
    if (g_slots[i].word.load(std::memory_order_relaxed) == 0 &&
        g_slots[i].word.compare_exchange_strong(expected, mine, std::memory_order_seq_cst)) {
      return i;
    }
  }
  g_missed.fetch_add(1, std::memory_order_relaxed);
  return -1;
}

// A free slot for tid, or -1. The first place tried differs between threads
// (tid modulo the table) and is nearly always free: one CAS.
int Claim(uint32_t tid) {
  uint64_t mine = static_cast<uint64_t>(tid) << 8;
  int first = static_cast<int>(tid % kExitDeferralSlots);
  uint64_t expected = 0;
  if (g_slots[first].word.compare_exchange_strong(expected, mine, std::memory_order_seq_cst)) return first;
  return ClaimElsewhere(mine, first);
}

}  // namespace

ExitSignalDeferral::ExitSignalDeferral() {
  ThreadState* t = &t_state;
  if (t->depth++ > 0) return;
  if (t->tid == 0) t->tid = KernelTid();
  // seq_cst claim: nothing the section does (taking a lock) is moved before
  // it, so a handler that does not find the slot finds the thread holding none.
  int slot = Claim(t->tid);
  t->slot = slot;
}

ExitSignalDeferral::~ExitSignalDeferral() {
  ThreadState& t = t_state;
  if (--t.depth > 0) return;
  int slot = t.slot;
  t.slot = -1;
  if (slot < 0) return;
  // One step frees the slot and takes what a handler left: a signal landing
  // before it is in `old`; one landing after it finds no slot and takes the
  // exit path itself, on a thread that now holds none of our locks.
  uint64_t old = g_slots[slot].word.exchange(0, std::memory_order_seq_cst);
  int sig = static_cast<int>(old & kSignalMask);
  if (sig != 0) raise(sig);
}

bool DeferExitSignal(int sig) {
  // The kernel's answer, not a cached one: a thread-local may not be read here.
  uint64_t tid = static_cast<uint64_t>(syscall(SYS_gettid));
  for (Slot& slot : g_slots) {
    uint64_t word = slot.word.load(std::memory_order_acquire);
    if (word == 0 || (word >> 8) != tid) continue;
    // Only this thread (interrupted here) could change its own slot.
    if ((word & kSignalMask) == 0) {
      slot.word.compare_exchange_strong(word, word | (static_cast<uint64_t>(sig) & kSignalMask),
                                        std::memory_order_seq_cst);
    }
    return true;
  }
  return false;
}

uint64_t ExitSignalDeferralsMissed() { return g_missed.load(std::memory_order_relaxed); }

void ExitSignalDeferralAfterFork() {
  for (Slot& slot : g_slots) slot.word.store(0, std::memory_order_relaxed);
  g_missed.store(0, std::memory_order_relaxed);
  // The only thread of the child: its tid changed (the others' cached tids
  // went with their threads).
  ThreadState& t = t_state;
  t.tid = KernelTid();
  if (t.slot >= 0) t.slot = Claim(t.tid);
}

}  // namespace prof
