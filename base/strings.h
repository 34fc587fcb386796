// Interned strings: records carry ids. Interning takes a mutex: it happens at
// kernel registration, Python frame capture and NVTX range starts, never in a
// runtime wrapper's per-call path.
//
// Two kinds of id, so memory does not grow with what the program names:
// - permanent ids (< kTransientBase): kernel names, Python files and
//   functions, CUPTI's API names, NVTX registered strings (the program keeps
//   their handles forever). They grow with the program's code, not its run
//   time; registered strings are capped (name_budget bytes).
// - transient ids (kTransientBase and up): NVTX range messages. A program may
//   make a new one per operator and step (PyTorch's emit_nvtx), so they are
//   held only while a window may need them: each entry remembers the
//   generation it was last interned in; a window takes a generation when it
//   opens (BeginWindow) and, once the writer has sealed it, the names last
//   used before it are released (WindowSealed); its end starts a generation
//   of its own (WindowEnded). A full table first releases the names no window
//   holds or waits for (those of no open or unsealed window's generation; all
//   when there is none); past name_budget bytes of names still needed, a
//   name is not interned: it gets kDroppedNameId and is counted.
// Transient ids are never in a sealed Window: the writer copies their text
// into the window's own strings (TakeWindowNames).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace prof {

inline constexpr uint32_t kTransientBase = 1u << 27;  // ids fit kTokenIdBits (agent/steps/step_detector.h)
inline constexpr uint32_t kDroppedNameId = 1;         // "[name dropped: PROF_BUFFER_MB]"
inline constexpr char kDroppedNameText[] = "[name dropped: PROF_BUFFER_MB]";

class StringTable {
 public:
  StringTable();

  // A permanent id (0 for ""); kDroppedNameId past kTransientBase ids.
  uint32_t Intern(std::string_view text);
  // A permanent id for an NVTX registered string, within name_budget bytes of
  // registered text; past it kDroppedNameId, counted.
  uint32_t InternRegistered(std::string_view text);
  // A transient id for an NVTX range message (see above).
  uint32_t InternName(std::string_view text);
  // Text of any live id ("" for an unknown or released one).
  std::string Get(uint32_t id);
  // Copy of every permanent string, id -> text, for a sealed Window.
  std::vector<std::string> Snapshot();

  // Bytes transient names (and, separately, registered strings) may hold;
  // an entry costs its text plus kEntryOverhead.
  void SetNameBudget(size_t bytes);
  // Two hash-map nodes, the bucket slots and the heap block of a text past
  // the small-string size, as glibc allocates them (about 150 bytes).
  static constexpr size_t kEntryOverhead = 160;
  size_t name_bytes();

  // The generation transient entries are stamped with; a per-thread cache of
  // ids is valid only while it is unchanged.
  uint32_t generation() const { return generation_.load(std::memory_order_acquire); }
  // Bumped each time transient ids restart (after 2^27 of them): a cache
  // keyed by id must be emptied when it changes.
  uint32_t id_epoch() const { return id_epoch_.load(std::memory_order_relaxed); }
  // Never released (an NVTX range PROF_STEP=auto chose as its marker).
  void Pin(uint32_t id);

  // A window opens (session): returns its generation.
  uint32_t BeginWindow();
  // The session's window ended: names used from now on are no window's (a
  // full table may release them while the writer still seals that window).
  uint32_t WindowEnded();
  // The writer sealed the window of generation gen: names last used before
  // it are released, and the names dropped while it was the newest window
  // are returned (the window's count).
  uint64_t WindowSealed(uint32_t gen);
  // The writer, sealing: the text of transient ids is appended to strings and
  // each id in ids is rewritten to its index there (a released one to 0).
  void TakeWindowNames(std::vector<uint32_t*> ids, std::vector<std::string>* strings);

  void ResetMutexAfterFork() { new (&mu_) std::mutex(); }

 private:
  struct Entry {
    std::string text;
    uint32_t last_gen;
    bool pinned;
  };
  // Under mu_.
  void Stamp(Entry* e, uint32_t gen);
  void Unstamp(uint32_t gen);
  template <typename Drop>
  void ReleaseIf(Drop drop);
  void ReleaseBefore(uint32_t gen);
  void ReleaseUnneeded();  // names of no open (or unsealed) window's generation
  void CountDrop();

  std::mutex mu_;
  std::vector<std::string> strings_;  // permanent: id -> text
  std::unordered_map<std::string, uint32_t> ids_;
  size_t registered_bytes_ = 0;

  std::unordered_map<uint32_t, Entry> names_;  // transient id -> entry (nodes are stable)
  std::unordered_map<std::string_view, uint32_t> name_ids_;  // views into names_
  size_t name_bytes_ = 0;
  size_t name_budget_ = 64u << 20;
  uint32_t next_name_ = kTransientBase;
  std::atomic<uint32_t> generation_{1};
  std::atomic<uint32_t> id_epoch_{0};
  std::map<uint32_t, uint32_t> per_gen_;   // generation -> unpinned names stamped with it
  std::multiset<uint32_t> open_windows_;    // generations of windows opened and not yet sealed
  std::map<uint32_t, uint64_t> dropped_;    // generation -> names dropped
};

// The process's table; lives until exit (never destroyed, so late wrappers
// and the exit path can still use it).
StringTable& Strings();

// abi::__cxa_demangle, or the input when it is not a mangled C++ name.
std::string Demangle(const char* mangled);

}  // namespace prof
