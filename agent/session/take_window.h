// Taking one window's entries out of a buffer that may hold later windows'
// too (a writer behind the application): one pass, in place; and the bounded
// store of such entries that NVTX ranges and NCCL calls are kept in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace prof {

// Returns the entries whose time_of(entry) lies in [begin_ns, end_ns), in
// order; those at or after end_ns move down over the taken ones, in order,
// with nothing allocated for them; earlier ones are dropped.
template <typename T, typename TimeOf>
std::vector<T> TakeWindowEntries(std::vector<T>& entries, uint64_t begin_ns, uint64_t end_ns, TimeOf time_of) {
  size_t taken = 0;
  for (const T& e : entries) taken += time_of(e) < end_ns && time_of(e) >= begin_ns;
  std::vector<T> out;
  out.reserve(taken);
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const T& e = entries[i];
    if (time_of(e) >= end_ns) {
      if (kept != i) entries[kept] = e;
      ++kept;
    } else if (time_of(e) >= begin_ns) {
      out.push_back(e);
    }
  }
  entries.resize(kept);
  return out;
}

// The windows opened and not yet taken, oldest first, for a bounded store
// that frees room when full: it may drop only entries that started before
// the oldest of them (a window the writer has not sealed yet keeps its
// entries, however many windows opened since), or, when every window was
// taken, before the latest opening. Not thread-safe: the store's lock.
class OpenWindows {
 public:
  void Opens(uint64_t begin_ns) {
    begins_.push_back(begin_ns);
    latest_ = begin_ns;
  }
  // The writer took what started before end_ns (a window's [begin, end), or
  // a discard of everything before end_ns).
  void TakenBefore(uint64_t end_ns) {
    while (!begins_.empty() && begins_.front() < end_ns) begins_.pop_front();
  }
  uint64_t DropBefore() const { return begins_.empty() ? latest_ : begins_.front(); }

  // An entry the store had no room for: charged to the window opened last.
  void Dropped() { ++drops_[latest_]; }
  // What a take owes: a window's [begin, end) the drops charged to openings
  // before end (its discard, taken first, cleared the earlier ones); a
  // discard (begin == end) clears those before begin and owes nothing, so
  // drops of a window that opened before the writer ran its discard stay
  // that window's.
  uint64_t TakeDrops(uint64_t begin_ns, uint64_t end_ns) {
    uint64_t owed = 0;
    for (auto it = drops_.begin(); it != drops_.end() && it->first < end_ns;) {
      if (end_ns > begin_ns) owed += it->second;
      it = drops_.erase(it);
    }
    return owed;
  }

 private:
  std::deque<uint64_t> begins_;
  uint64_t latest_ = 0;
  std::map<uint64_t, uint64_t> drops_;  // opening -> entries dropped while it was the latest
};

// The time that places an entry in a window: its start. A PyTorch
// operator's range, and a module call's, goes by its end instead: a step
// marker may be a call inside an operator (PROF_STEP=auto's copy inside
// aten::copy_) or a module call (its launch in the model's first layer), and
// the range then belongs to the window that holds the work it launched.
template <typename T>
uint64_t WindowTime(const T& e) {
  if constexpr (requires { e.op_id; }) {
    if (e.op_id != 0 || e.module_call) return e.end_ns;
  }
  return e.start_ns;
}

// Entries with a start_ns (NVTX ranges, collective calls) seen while windows
// record, until the writer takes each window's. They are coarse (a few per
// step), so a mutex-protected vector is enough.
template <typename T>
class WindowedStore {
 public:
  explicit WindowedStore(size_t max_entries) : max_entries_(max_entries) {}
  // Past this many entries held, Add drops and counts (the agent sets it
  // from PROF_BUFFER_MB).
  void SetCapacity(size_t max_entries) {
    std::lock_guard<std::mutex> lock(mu_);
    max_entries_ = max_entries;
  }
  // A window opens at begin_ns: entries that started before it and before
  // every window the writer has not taken yet are in no window, so a full
  // store may drop them at once (the writer's discard of them may come
  // later); a window still being sealed keeps its entries.
  void WindowOpens(uint64_t begin_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.Opens(begin_ns);
  }
  void Add(const T& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= max_entries_) {
      uint64_t begin = open_.DropBefore();
      auto before = [begin](const T& e) { return WindowTime(e) < begin; };
      entries_.erase(std::remove_if(entries_.begin(), entries_.end(), before), entries_.end());
      if (entries_.size() >= max_entries_) {
        open_.Dropped();
        return;
      }
    }
    entries_.push_back(entry);
  }
  // Entries that started (WindowTime) in [begin_ns, end_ns), in the order added; older
  // ones are dropped. *dropped: entries Add refused since the last Take.
  std::vector<T> Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.TakenBefore(end_ns);
    std::vector<T> out = TakeWindowEntries(entries_, begin_ns, end_ns, [](const T& e) { return WindowTime(e); });
    *dropped += open_.TakeDrops(begin_ns, end_ns);
    return out;
  }
  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  std::mutex mu_;
  std::vector<T> entries_;  // mu_
  size_t max_entries_;      // mu_
  OpenWindows open_;        // mu_
};

}  // namespace prof
