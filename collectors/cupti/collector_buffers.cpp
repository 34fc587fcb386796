// The CUPTI collector's activity buffers: the C callbacks CUPTI calls to
// ask for a buffer and to hand one back (they only hand it over: decoding
// is the writer thread's, collector_decode.cpp), flushes, and CUPTI's drop
// count. The buffer callbacks may run inside a flush that holds
// control_mutex_ (on CUPTI's thread or the caller's), so they never take it.
#include <mutex>

#include "base/clock.h"
#include "base/log.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/collector_parts.h"

namespace prof::cupti {

void CUPTIAPI BufferRequestedTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferRequested(buffer, size, max_records);
  } catch (...) {
    *buffer = nullptr;  // declined: CUPTI counts the records it drops
    *size = 0;
  }
}

void CUPTIAPI BufferCompletedTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid_size) {
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferCompleted(buffer, size, valid_size);
  } catch (...) {
    // The buffer is lost (never reused); its records count as missing.
  }
}

void CUPTIAPI BufferRequestedV2Trampoline(uint8_t** buffer, size_t* size, size_t* max_records,
                                         v13_2::BufferRequestInfo*) {
  BufferRequestedTrampoline(buffer, size, max_records);
}

void CUPTIAPI BufferCompletedV2Trampoline(uint8_t* buffer, size_t size, size_t valid_size, v13_2::BufferCompleteInfo*) {
  BufferCompletedTrampoline(nullptr, 0, buffer, size, valid_size);
}

void CuptiCollector::FlushLocked(bool forced) {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  // Held by another client (or sensed to be now): its buffers are not
  // libprof's to flush, and a forced flush would hand it records of work
  // still running without their times.
  if (!ActivityOursLocked() || ForeignClockLocked()) return;
  if (forced && OthersRecordingLocked()) forced = false;
  CUptiResult r = api_.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (r != CUPTI_SUCCESS) Log().debug("cuptiActivityFlushAll returned {}", ResultName(api_, r));
  ReadCuptiDropsLocked();
}

void CuptiCollector::ReadCuptiDropsLocked() {
  // CUPTI's count is read and reset for everyone: not while another client holds the API.
  if (!Subscribed(state_.load(std::memory_order_acquire)) || !ActivityOursLocked()) return;
  size_t dropped = 0;
  if (api_.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    cupti_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
}

bool CuptiCollector::MayHaveDroppedRecords() const {
  return pool_->refused() != refused_reported_ ||
         losses_.CuptiDropsSinceCharged(cupti_dropped_.load(std::memory_order_relaxed));
}

void CuptiCollector::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // No locks but the pool's leaf mutex: CUPTI may ask from inside a flush
  // that holds control_mutex_.
  *max_records = 0;
  if (!pool_) return;
  // The program's profiler holds the activity API but registered no
  // callbacks of its own yet: CUPTI without callbacks drops its records,
  // and so does this (none of it is libprof's).
  if (activity_elsewhere_.load(std::memory_order_acquire) && !multi_client_.load(std::memory_order_relaxed)) return;
  *buffer = pool_->Acquire(NowNs());
  *size = *buffer != nullptr ? pool_->buffer_bytes() : 0;
}

void CuptiCollector::OnBufferCompleted(uint8_t* buffer, size_t, size_t valid_size) {
  // Hand over only: decoding happens on the writer thread (CollectWindow).
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(completed_mutex_);
  completed_.push_back(Completed{buffer, valid_size});
}

}  // namespace prof::cupti
