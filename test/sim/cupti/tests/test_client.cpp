// See test_client.h.
#include "test_client.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace testclient {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
Options g_options;
size_t g_requests = 0;
std::vector<Delivery> g_deliveries;

void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_requests;
  *max_records = g_options.max_records;
  if (g_options.decline) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *size = g_options.buffer_size;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, (g_options.buffer_size + 7) & ~size_t{7}));
  std::memset(*buffer, 0xAB, *size);  // CUPTI must zero it (ZEROED_OUT_ACTIVITY_BUFFER is 0)
}

void CUPTIAPI Completed(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
  Delivery delivery;
  delivery.bytes.assign(buffer, buffer + valid);
  delivery.size = size;
  delivery.thread = CurrentThread();
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  g_deliveries.push_back(std::move(delivery));
  g_cv.notify_all();
}

}  // namespace

uint32_t CurrentThread() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

void Install(const Options& options) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_options = options;
  }
  cuptiActivityRegisterCallbacks(Requested, Completed);
}

size_t Requests() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_requests;
}

std::vector<Delivery> Deliveries() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_deliveries;
}

std::vector<Delivery> WaitForDeliveries(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(g_mu);
  g_cv.wait_for(lock, timeout, [&] { return g_deliveries.size() >= n; });
  return g_deliveries;
}

void Clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_deliveries.clear();
  g_requests = 0;
  g_options = {};
}

std::vector<std::vector<uint8_t>> Records() {
  std::vector<std::vector<uint8_t>> out;
  for (Delivery& delivery : Deliveries()) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(delivery.bytes.data(), delivery.bytes.size(), &record) == CUPTI_SUCCESS) {
      const auto* begin = reinterpret_cast<const uint8_t*>(record);
      const size_t remaining = delivery.bytes.size() - static_cast<size_t>(begin - delivery.bytes.data());
      out.emplace_back(begin, begin + std::min<size_t>(remaining, 256));
    }
  }
  return out;
}

Fresh::Fresh() {
  fakehub::Reset();
  Clear();
}

Fresh::~Fresh() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // returns our buffers
  cuptiFinalize();
  size_t ignored = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &ignored);
  uint8_t per_thread = 1;
  size_t size = sizeof(per_thread);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread);
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  cuptiActivityEnableLatencyTimestamps(0);
  fakehub::Reset();
  Clear();
}

}  // namespace testclient
