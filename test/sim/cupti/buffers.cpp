// See buffers.h for the delivery rules this implements.
#include "buffers.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <thread>

#include "internal.h"

namespace simcupti {
namespace {

constexpr size_t kAlignment = 8;  // ACTIVITY_RECORD_ALIGNMENT
// The smallest record this library writes (CUpti_ActivityAPI): a buffer
// with less room left is retired at once instead of waiting for a record.
constexpr size_t kSmallestRecord = sizeof(CUpti_ActivityAPI);
// The worker re-checks the sim clock at least this often while it waits
// for device work to end (a test hub may move its clock by hand).
constexpr auto kPollInterval = std::chrono::milliseconds(5);

size_t AlignUp(size_t size) { return (size + kAlignment - 1) & ~(kAlignment - 1); }

// Set on the thread that runs bufferCompleted, so a client that flushes
// from inside it does not wait for itself.
thread_local bool tls_delivering = false;

}  // namespace

// Every client's pool, built together at first use (the fork handlers walk them all).
std::array<BufferPool*, kMaxClients>& BufferPool::All() {
  static auto* pools = [] {
    auto* all = new std::array<BufferPool*, kMaxClients>();
    for (int c = 0; c < kMaxClients; ++c) (*all)[static_cast<size_t>(c)] = new BufferPool(c);
    return all;
  }();
  return *pools;
}

BufferPool& BufferPool::Of(int client) { return *All()[static_cast<size_t>(client)]; }

BufferPool::BufferPool(int client) : client_(client) {
  if (client == 0) pthread_atfork(&AtForkPrepare, &AtForkParent, &AtForkChild);
}

// A fork child has no worker thread: it starts one when it needs one. The
// locks are held across fork so the child never inherits one mid-update.
void BufferPool::AtForkPrepare() {
  for (BufferPool* pool : All()) pool->mu_.lock();
}
void BufferPool::AtForkParent() {
  for (BufferPool* pool : All()) pool->mu_.unlock();
}
void BufferPool::AtForkChild() {
  for (BufferPool* pool : All()) {
    pool->worker_started_ = false;
    pool->in_delivery_ = 0;
    pool->mu_.unlock();
  }
}

void BufferPool::SetCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_ = Callbacks{};
  callbacks_.request = request;
  callbacks_.complete = complete;
}

void BufferPool::SetCallbacksV2(CUpti_BuffersCallbackRequestFunc_v2 request,
                                CUpti_BuffersCallbackCompleteFunc_v2 complete) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_ = Callbacks{};
  callbacks_.request_v2 = request;
  callbacks_.complete_v2 = complete;
}

bool BufferPool::HasCallbacks() {
  std::lock_guard<std::mutex> lock(mu_);
  return callbacks_.any();
}

bool BufferPool::Fits(const Buffer& buffer, size_t aligned_size) const {
  if (buffer.data == nullptr) return false;
  if (buffer.max_records != 0 && buffer.records >= buffer.max_records) return false;
  return buffer.used + aligned_size <= buffer.size;
}

BufferPool::Buffer BufferPool::Request(const Callbacks& callbacks) {
  Buffer buffer;
  if (CurrentFaults().null_buffers) return buffer;  // as if the client declined
  uint8_t* data = nullptr;
  size_t size = 0;
  size_t max_records = 0;
  if (callbacks.request_v2 != nullptr) {
    CUpti_BufferCallbackRequestInfo info{sizeof(CUpti_BufferCallbackRequestInfo)};
    callbacks.request_v2(&data, &size, &max_records, &info);
  } else {
    callbacks.request(&data, &size, &max_records);
  }
  if (data == nullptr) return buffer;
  buffer.data = data;
  buffer.size = size;
  buffer.max_records = max_records;
  // CUPTI zeroes the buffer itself unless the client promised to (NVIDIA:
  // that memset is a stall on the requesting thread). A test may ask that
  // the promise be checked.
  if (!ClientZeroesBuffers(client_)) {
    std::memset(data, 0, size);
  } else if (CurrentFaults().check_zeroed &&
             std::any_of(data, data + size, [](uint8_t byte) { return byte != 0; })) {
    dirty_.fetch_add(1);
  }
  return buffer;
}

void BufferPool::CountDropLocked(uint32_t context_uid, uint32_t stream_id) {
  ++drops_[{context_uid, stream_id}];
  dropped_total_.fetch_add(1);
}

void BufferPool::Append(const void* record, size_t size, DeviceSpan span, uint32_t context_uid,
                        uint32_t stream_id) {
  const size_t aligned = AlignUp(size);
  const uint64_t owner = PerThreadBuffers(client_) ? ThreadId() : 0;
  std::unique_lock<std::mutex> lock(mu_);
  if (!callbacks_.any()) {
    CountDropLocked(context_uid, stream_id);  // nowhere to put it
    return;
  }
  auto it = current_.find(owner);
  if (it != current_.end() && !Fits(it->second, aligned)) {
    RetireLocked(std::move(it->second));
    current_.erase(it);
    it = current_.end();
  }
  if (it == current_.end()) {
    // Ask the client for a buffer, without holding mu_ while it runs.
    const Callbacks callbacks = callbacks_;
    const uint64_t generation = generation_;
    lock.unlock();
    Buffer fresh = Request(callbacks);
    fresh.owner = owner;
    lock.lock();
    if (generation != generation_) {  // cuptiFinalize ran meanwhile
      lost_.fetch_add(1);
      return;
    }
    if (!Fits(fresh, aligned)) {
      CountDropLocked(context_uid, stream_id);
      if (fresh.data != nullptr) RetireLocked(std::move(fresh));  // too small: give it back empty
      return;
    }
    it = current_.find(owner);
    if (it == current_.end()) {
      it = current_.emplace(owner, std::move(fresh)).first;
    } else {
      // Another thread installed a global buffer meanwhile: keep the newest.
      RetireLocked(std::move(it->second));
      it->second = std::move(fresh);
    }
  }
  Buffer& buffer = it->second;
  std::memcpy(buffer.data + buffer.used, record, size);
  if (span.end_ns != 0) {
    buffer.device.push_back({buffer.used, span});
    buffer.complete_at_ns = std::max(buffer.complete_at_ns, span.end_ns);
  }
  buffer.used += aligned;
  ++buffer.records;
  if (!Fits(buffer, kSmallestRecord)) {
    RetireLocked(std::move(buffer));
    current_.erase(it);
  }
}

void BufferPool::RetireLocked(Buffer buffer) {
  buffer.deliver_after_ns = simhub_now_ns() + CurrentFaults().late_ns;
  buffer.retired_seq = ++retired_seq_;
  ready_.push_back(std::move(buffer));
  StartWorkerLocked();
  cv_.notify_all();
}

void BufferPool::StartWorkerLocked() {
  if (worker_started_) return;
  worker_started_ = true;
  // Detached: at exit it is parked on cv_, and the pool is never destroyed.
  std::thread([this] { WorkerLoop(); }).detach();
}

void BufferPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (ready_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // Full buffers go out in the order they filled, each once all its
    // records are complete (and, with SIM_CUPTI_LATE_MS, that much later).
    const Buffer& head = ready_.front();
    const uint64_t due_ns = std::max(head.complete_at_ns, head.deliver_after_ns);
    const uint64_t now_ns = simhub_now_ns();
    if (now_ns < due_ns) {
      cv_.wait_for(lock, std::min<std::chrono::nanoseconds>(std::chrono::nanoseconds(due_ns - now_ns), kPollInterval));
      continue;
    }
    Buffer buffer = std::move(ready_.front());
    ready_.pop_front();
    const Callbacks callbacks = callbacks_;
    ++in_delivery_;
    lock.unlock();
    Deliver(buffer, callbacks);
    lock.lock();
    --in_delivery_;
    cv_.notify_all();
  }
}

void BufferPool::Deliver(Buffer& buffer, const Callbacks& callbacks) {
  const uint64_t now_ns = simhub_now_ns();
  for (const Unfinished& record : buffer.device) {
    if (record.span.end_ns > now_ns) {
      ClearUnfinishedTimes(reinterpret_cast<CUpti_Activity*>(buffer.data + record.offset),
                           /*started=*/record.span.start_ns <= now_ns);
    }
  }
  if (!callbacks.any()) {  // finalized meanwhile
    lost_.fetch_add(buffer.records);
    return;
  }
  delivered_.fetch_add(buffer.records);
  tls_delivering = true;
  if (callbacks.complete_v2 != nullptr) {
    CUpti_BufferCallbackCompleteInfo info{};
    info.structSize = sizeof(info);
    info.threadId = buffer.owner;  // no user-defined records: no layouts
    callbacks.complete_v2(buffer.data, buffer.size, buffer.used, &info);
  } else {
    // CUDA 6.0 onwards every buffer is global: context NULL, stream 0.
    callbacks.complete(nullptr, 0, buffer.data, buffer.size, buffer.used);
  }
  tls_delivering = false;
}

CUptiResult BufferPool::Flush(bool forced) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!callbacks_.any()) return CUPTI_ERROR_INVALID_OPERATION;
  const uint64_t late_ns = CurrentFaults().late_ns;
  uint64_t now_ns = simhub_now_ns();
  // Buffers being filled are handed over too: all of them when forced
  // (empty ones included, so the client gets its memory back), otherwise
  // those holding only complete records.
  for (auto it = current_.begin(); it != current_.end();) {
    Buffer& buffer = it->second;
    if (forced || (buffer.records > 0 && buffer.complete_at_ns <= now_ns)) {
      RetireLocked(std::move(buffer));
      it = current_.erase(it);
    } else {
      ++it;
    }
  }
  // With SIM_CUPTI_LATE_MS an unforced flush returns at once and the worker
  // delivers later; a forced flush still blocks until all are delivered.
  if (late_ns > 0 && !forced) return CUPTI_SUCCESS;
  // What is complete when the flush is asked for, as documented: buffers
  // other threads retire meanwhile go to the worker. (Delivering those too
  // kept a flush going for seconds while eight threads launched.)
  const uint64_t last = retired_seq_;
  for (;;) {
    now_ns = simhub_now_ns();
    auto it = std::find_if(ready_.begin(), ready_.end(), [&](const Buffer& buffer) {
      return buffer.retired_seq <= last && (forced || buffer.complete_at_ns <= now_ns);
    });
    if (it == ready_.end()) break;
    if (it->deliver_after_ns > now_ns) {
      cv_.wait_for(lock, std::chrono::nanoseconds(it->deliver_after_ns - now_ns));
      continue;
    }
    Buffer buffer = std::move(*it);
    ready_.erase(it);
    const Callbacks callbacks = callbacks_;
    lock.unlock();
    const bool nested = tls_delivering;
    Deliver(buffer, callbacks);
    tls_delivering = nested;
    lock.lock();
  }
  // "Does not return until" delivered: wait for what the worker holds.
  if (!tls_delivering) cv_.wait(lock, [&] { return in_delivery_ == 0; });
  return CUPTI_SUCCESS;
}

size_t BufferPool::TakeDropped(bool all, uint32_t context_uid, uint32_t stream_id) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = 0;
  for (auto it = drops_.begin(); it != drops_.end();) {
    if (all || it->first == std::make_pair(context_uid, stream_id)) {
      count += it->second;
      it = drops_.erase(it);
    } else {
      ++it;
    }
  }
  return count;
}

void BufferPool::Discard() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [owner, buffer] : current_) lost_.fetch_add(buffer.records);
  for (Buffer& buffer : ready_) lost_.fetch_add(buffer.records);
  current_.clear();
  ready_.clear();
  drops_.clear();
  callbacks_ = Callbacks{};
  ++generation_;
}

}  // namespace simcupti
