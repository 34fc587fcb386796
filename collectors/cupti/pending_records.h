// Decoded device records waiting for the window their call's launch falls
// in, in the order they were decoded.
//
// A writer behind the application decodes the records of many later windows
// before it takes the current one (under valgrind, all 43k records of a
// 2,000-step host loop before its tenth window), so taking a window must not
// cost a pass over all of them. The slots are grouped in chunks of kChunk,
// each with a lower bound on the launch times it still holds: a window looks
// only into the chunks that may hold a launch before its end, and what it
// takes leaves a hole (the chunks before the first live one are dropped
// once they are half of the slots, the live records moved down once).
//
// When the later windows' records are no more than the window's own (a
// writer that keeps up), the window takes the vector itself, compacted in
// place, and the few later records are copied out: the budget holds one
// copy of the decoded records, even for one huge window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/events.h"

namespace prof::cupti {

class PendingRecords {
 public:
  // Reserves room for `n` records at once (address space: pages count once
  // written), so growth never holds an old and a new copy.
  void Reserve(size_t n);
  void Append(const DeviceRecord& record, uint64_t launch_ns);
  // Records launched in [start_ns, end_ns), in decoding order; those
  // launched before start_ns are dropped, later ones stay.
  std::vector<DeviceRecord> Take(uint64_t start_ns, uint64_t end_ns);
  // Moves the live records down over every hole (the budget is reached).
  void Compact();

  size_t live() const { return live_; }
  // Slots in use, holes included: what Reserve's room is counted against.
  size_t slots() const { return launch_ns_.size(); }

 private:
  static constexpr size_t kChunk = 256;
  static constexpr uint64_t kFree = ~0ull;  // launch time of a taken slot

  void DropHeadChunks();
  void RecomputeChunkMins();

  std::vector<DeviceRecord> records_;
  std::vector<uint64_t> launch_ns_;  // kFree: taken
  // Per chunk of kChunk slots: at most the smallest launch time it holds
  // (kFree when it holds none).
  std::vector<uint64_t> chunk_min_;
  size_t head_chunk_ = 0;  // the chunks before it are full and hold nothing
  size_t live_ = 0;
};

}  // namespace prof::cupti
