// What a window's collection costs in memory: the decoded records change
// hands (no second copy), the decoded budget is a hard cap whose overflow is
// counted exactly, and the records come out in start order.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <new>

#include "base/clock.h"
#include "collectors/cupti/activity_collector.h"
#include "fake_cupti.h"

// Bytes of the large allocations made while watching: a second copy of the
// window's records would be one more allocation of their full size. Replacing
// the global operator new is the only way to see it from outside; it
// forwards to malloc and only counts during the CollectWindow below.
namespace {
constexpr size_t kLarge = 64 * 1024;
std::atomic<bool> g_watching{false};
std::atomic<size_t> g_large_bytes{0};
}  // namespace

void* operator new(size_t n) {
  if (n >= kLarge && g_watching.load(std::memory_order_relaxed)) g_large_bytes.fetch_add(n);
  void* p = std::malloc(n != 0 ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
// The nothrow forms too: a runtime that supplies its own (AddressSanitizer's)
// would otherwise pair its allocation with the free() above.
void* operator new(size_t n, const std::nothrow_t&) noexcept { return std::malloc(n != 0 ? n : 1); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace prof::cupti {
namespace {

constexpr auto kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
// Gets callbacks but enqueues no device work: no window waits for it.
constexpr uint32_t kSync = CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020;

std::unique_ptr<CuptiCollector> MakeCollector() {
  fake::Reset();
  return std::make_unique<CuptiCollector>([](const Config&, CuptiApi* api, std::string*) {
    *api = fake::Api();
    return true;
  });
}

TEST_CASE("a window takes its decoded records without a second copy and the decoded cap's losses are exact",
          "[collector][memory]") {
  Config config;
  config.buffer_bytes = 4u << 20;  // raw pool 1 MiB: holds every small API record below
  auto c = MakeCollector();
  c->Attach(config);
  uint64_t start = NowNs();
  c->BeginRecord(start);
  const size_t cap = c->decoded_capacity();
  REQUIRE(cap >= 1024);
  const uint32_t launches = static_cast<uint32_t>(cap) + 777;
  // API records (48 bytes raw, fewer than the pool holds) whose start times
  // are a permutation, so the window has to sort them.
  uint64_t base = NowNs();
  for (uint32_t id = 1; id <= launches; ++id) {
    fake::Call(kRuntime, kSync, id);
    uint64_t t = base + uint64_t{(id * 7919u) % launches} * 10;
    fake::Write(fake::RuntimeApi(id, kSync, t, t + 5));
  }
  fake::RetireCurrent();  // a half-filled buffer comes only with a forced flush
  REQUIRE(fake::State().dropped_total == 0);
  REQUIRE(fake::State().records_written == launches);

  Window w;
  g_large_bytes = 0;
  g_watching = true;
  c->CollectWindow(start, NowNs(), NowNs(), &w);
  g_watching = false;

  // The first cap records decoded are kept, the rest counted, none twice.
  CHECK(w.device_records.size() == cap);
  CHECK(w.meta.losses.device_records_dropped == launches - cap);
  CHECK(w.meta.losses.cupti_records_dropped == 0);
  CHECK(w.meta.losses.device_records_missing == 0);
  CHECK(std::is_sorted(w.device_records.begin(), w.device_records.end(),
                       [](const DeviceRecord& a, const DeviceRecord& b) { return a.start_ns < b.start_ns; }));
  // Decoding allocated the records once (plus 8 bytes of launch time and
  // 8 of sort key each); a copy for the window would double that.
  CHECK(g_large_bytes.load() >= cap * sizeof(DeviceRecord));
  CHECK(g_large_bytes.load() < cap * (sizeof(DeviceRecord) + 32));

  // The counts were the window's own: the next one starts from zero.
  Window next;
  c->CollectWindow(NowNs(), NowNs(), NowNs(), &next);
  CHECK(next.device_records.empty());
  CHECK(next.meta.losses.device_records_dropped == 0);
  c.reset();
  fake::Reset();
}

TEST_CASE("records of a later window stay decoded for it while this window's records leave", "[collector][memory]") {
  Config config;
  auto c = MakeCollector();
  c->Attach(config);
  uint64_t start = NowNs();
  c->BeginRecord(start);
  for (uint32_t id = 1; id <= 100; ++id) {
    fake::Call(kRuntime, kSync, id);
    uint64_t t = NowNs();
    fake::Write(fake::RuntimeApi(id, kSync, t, t + 5));
  }
  uint64_t end = NowNs();
  for (uint32_t id = 101; id <= 130; ++id) {
    fake::Call(kRuntime, kSync, id);
    uint64_t t = NowNs();
    fake::Write(fake::RuntimeApi(id, kSync, t, t + 5));
  }
  fake::RetireCurrent();  // a half-filled buffer comes only with a forced flush
  Window first;
  c->CollectWindow(start, end, NowNs(), &first);
  Window second;
  c->CollectWindow(end, NowNs(), NowNs(), &second);
  REQUIRE(first.device_records.size() == 100);
  REQUIRE(second.device_records.size() == 30);
  for (const DeviceRecord& r : first.device_records) CHECK(r.correlation_id <= 100);
  for (const DeviceRecord& r : second.device_records) CHECK(r.correlation_id > 100);
  CHECK(first.meta.losses.device_records_dropped + second.meta.losses.device_records_dropped == 0);
  c.reset();
  fake::Reset();
}

TEST_CASE("records dropped at the decoded cap are charged to the window they were launched in",
          "[collector][memory]") {
  // The writer lags (windows queue behind it): collecting window A decodes
  // window B's records too, and B's are what the cap drops. A must not
  // report B's losses, and B must.
  Config config;
  config.buffer_bytes = 4u << 20;
  auto c = MakeCollector();
  c->Attach(config);
  uint64_t a_start = NowNs();
  c->BeginRecord(a_start);
  const size_t cap = c->decoded_capacity();
  uint32_t id = 0;
  auto call = [&] {
    ++id;
    fake::Call(kRuntime, kSync, id);
    uint64_t t = NowNs();
    fake::Write(fake::RuntimeApi(id, kSync, t, t + 5));
  };
  for (int i = 0; i < 100; ++i) call();
  while (NowNs() < a_start + 1'000'000) {
  }  // a window end well clear of the drop buckets' width
  uint64_t a_end = NowNs();
  while (NowNs() < a_end + 1'000'000) {
  }
  uint64_t b_start = NowNs();
  const uint32_t b_calls = static_cast<uint32_t>(cap) + 500;  // 100 + cap + 500 > cap: 600 dropped
  for (uint32_t i = 0; i < b_calls; ++i) call();
  uint64_t b_end = NowNs();
  fake::RetireCurrent();
  REQUIRE(fake::State().dropped_total == 0);

  Window a;
  c->CollectWindow(a_start, a_end, NowNs(), &a);
  CHECK(a.device_records.size() == 100);
  CHECK(a.meta.losses.device_records_dropped == 0);
  Window b;
  c->CollectWindow(b_start, b_end, NowNs(), &b);
  CHECK(b.device_records.size() == cap - 100);
  CHECK(b.meta.losses.device_records_dropped == b_calls - (cap - 100));
  c.reset();
  fake::Reset();
}

TEST_CASE("a window larger than the raw pool hands decoded buffers' pages back, a small one keeps them",
          "[collector][memory]") {
  constexpr auto kLaunch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  Config config;
  config.buffer_bytes = 4u << 20;  // raw pool: 1 MiB, about 4800 kernel records
  auto launch = [](uint32_t id) {
    fake::Call(kRuntime, kLaunch, id);
    uint64_t now = NowNs();
    fake::Write(fake::Kernel(id, now + 10, now + 20, "_Z1kv"));
  };
  SECTION("small window") {
    auto c = MakeCollector();
    c->Attach(config);
    uint64_t start = NowNs();
    for (uint32_t id = 1; id <= 1000; ++id) launch(id);
    fake::RetireCurrent();
    Window w;
    c->CollectWindow(start, NowNs(), NowNs(), &w);
    CHECK(w.device_records.size() == 1000);
    CHECK(c->raw_buffers_evicted() == 0);
    c.reset();
  }
  // The section above with a window past the pool: another scenario.
  SECTION("window past the pool") {
    auto c = MakeCollector();
    c->Attach(config);
    uint64_t start = NowNs();
    for (uint32_t id = 1; id <= 6000; ++id) launch(id);
    fake::RetireCurrent();
    Window w;
    c->CollectWindow(start, NowNs(), NowNs(), &w);
    CHECK(c->raw_buffers_evicted() > 0);
    // Eviction changes memory, not content: every record written is kept or counted.
    CHECK(w.device_records.size() + w.meta.losses.device_records_dropped == fake::State().records_written);
    c.reset();
  }
  fake::Reset();
}

}  // namespace
}  // namespace prof::cupti
