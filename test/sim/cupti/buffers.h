// Activity buffers with NVIDIA's documented semantics: CUPTI asks the
// client for empty buffers (bufferRequested), packs records into them
// 8-byte aligned, and hands each back once (bufferCompleted):
//  - a full buffer, by CUPTI's own worker thread, once every record in it
//    is complete (its device work has ended on the sim clock);
//  - on cuptiActivityFlushAll(0), every buffer whose records are all
//    complete, full or not, on the flushing thread, before it returns;
//  - on CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, every buffer, incomplete ones
//    included; times of device work not yet started/ended are 0 in them.
// A record that finds no buffer (the client returned NULL or too small a
// buffer) is dropped and counted for cuptiActivityGetNumDroppedRecords.
//
// One pool per activity client (internal.h: client 0 is the process-wide
// activity API; in the multi-subscriber release each subscriber's own), so
// every client gets only its own records, in its own buffers, through its
// own callbacks (cuptiActivityRegisterCallbacks, or the *_v2 pair).
//
// Lock order: mu_ is never held while client code runs (bufferRequested,
// bufferCompleted), because the client may call back into CUPTI.
#pragma once

#include <cupti.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "cupti_13_2.h"
#include "internal.h"

namespace simcupti {

// Sim-clock span of the device work a record describes; {0, 0} for host
// records (API calls), which are complete when written.
struct DeviceSpan {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

class BufferPool {
 public:
  // Client `client`'s pool (0 <= client < kMaxClients); never destroyed:
  // the worker may outlive main.
  static BufferPool& Of(int client);

  void SetCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete);
  // CUPTI 13.2's pair (cuptiActivityRegisterCallbacks_v2): replaces the other.
  void SetCallbacksV2(CUpti_BuffersCallbackRequestFunc_v2 request, CUpti_BuffersCallbackCompleteFunc_v2 complete);
  bool HasCallbacks();

  // Copies one record in. context_uid/stream_id say where a drop is counted.
  void Append(const void* record, size_t size, DeviceSpan span, uint32_t context_uid, uint32_t stream_id);

  // cuptiActivityFlushAll. Returns CUPTI_ERROR_INVALID_OPERATION before
  // cuptiActivityRegisterCallbacks, as documented.
  CUptiResult Flush(bool forced);

  // Drops since the last call, then reset: all of them (context NULL), or
  // those counted for one context uid and stream.
  size_t TakeDropped(bool all, uint32_t context_uid, uint32_t stream_id);

  // cuptiFinalize: forgets the callbacks; records not yet delivered are
  // lost (the client must flush first, as NVIDIA documents) and counted.
  void Discard();

  uint64_t records_delivered() const { return delivered_.load(); }
  uint64_t records_dropped() const { return dropped_total_.load(); }
  uint64_t records_lost_at_finalize() const { return lost_.load(); }
  // Buffers the client promised were zeroed that were not (SIM_CUPTI_CHECK_ZEROED).
  uint64_t dirty_buffers() const { return dirty_.load(); }

 private:
  struct Unfinished {
    size_t offset;  // of the record in the buffer
    DeviceSpan span;
  };
  struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t used = 0;
    size_t max_records = 0;  // 0: as many as fit
    size_t records = 0;
    uint64_t complete_at_ns = 0;     // sim clock: the last device work in it ends
    uint64_t deliver_after_ns = 0;   // sim clock: SIM_CUPTI_LATE_MS holds it back until then
    uint64_t retired_seq = 0;        // order of retirement: a flush delivers those retired before it
    uint64_t owner = 0;              // the thread (gettid) whose per-thread buffer it was, 0 for a global one
    std::vector<Unfinished> device;  // device records, to clear times still in the future
  };

  // The client's callbacks, either pair; copied out of mu_ to be called.
  struct Callbacks {
    CUpti_BuffersCallbackRequestFunc request = nullptr;
    CUpti_BuffersCallbackCompleteFunc complete = nullptr;
    CUpti_BuffersCallbackRequestFunc_v2 request_v2 = nullptr;
    CUpti_BuffersCallbackCompleteFunc_v2 complete_v2 = nullptr;
    bool any() const {
      return (request != nullptr && complete != nullptr) || (request_v2 != nullptr && complete_v2 != nullptr);
    }
  };

  explicit BufferPool(int client);
  static std::array<BufferPool*, kMaxClients>& All();
  bool Fits(const Buffer& buffer, size_t aligned_size) const;
  Buffer Request(const Callbacks& callbacks);
  void RetireLocked(Buffer buffer);  // hands a buffer over for delivery
  void Deliver(Buffer& buffer, const Callbacks& callbacks);
  void CountDropLocked(uint32_t context_uid, uint32_t stream_id);
  void StartWorkerLocked();
  void WorkerLoop();
  static void AtForkPrepare();
  static void AtForkParent();
  static void AtForkChild();

  const int client_;
  std::mutex mu_;
  uint64_t retired_seq_ = 0;  // under mu_
  std::condition_variable cv_;  // ready_ grew, or a delivery finished
  Callbacks callbacks_;
  uint64_t generation_ = 0;             // bumped by Discard: requests in flight are stale
  std::map<uint64_t, Buffer> current_;  // being filled, by owner (thread id, or 0 for global buffers)
  std::deque<Buffer> ready_;            // retired, waiting for delivery (FIFO)
  int in_delivery_ = 0;                 // buffers the worker is handing to the client right now
  bool worker_started_ = false;
  std::map<std::pair<uint32_t, uint32_t>, size_t> drops_;  // (context uid, stream) -> count
  std::atomic<uint64_t> delivered_{0};
  std::atomic<uint64_t> dropped_total_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> dirty_{0};
};

}  // namespace simcupti
