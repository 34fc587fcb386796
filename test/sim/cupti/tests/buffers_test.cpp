// Buffer semantics as NVIDIA documents them: who delivers, when, what an
// unforced vs a forced flush returns, and how lost records are counted.
#include <catch2/catch.hpp>
#include <cupti.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "fake_hub.h"
#include "test_client.h"

namespace {

using namespace std::chrono_literals;
using testclient::RecordsOf;

constexpr uint64_t kUs = 1000;
const fakehub::Call kLaunch{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                            "cudaLaunchKernel", "_Z4axpyPf"};

// A launch whose kernel runs [now + start_us, now + end_us).
uint32_t Launch(uint64_t start_us, uint64_t end_us, uint32_t stream = 0) {
  return fakehub::MakeCall(kLaunch, [&](uint32_t id) {
    fakehub::Enqueue(fakehub::Kernel(id, stream, fakehub::Now() + start_us * kUs, fakehub::Now() + end_us * kUs));
  });
}

void EnableKernelsAndRuntime() {
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
}

size_t Dropped() {
  size_t dropped = 0;
  REQUIRE(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS);
  return dropped;
}

}  // namespace

TEST_CASE("an unforced flush withholds a buffer whose device work is unfinished", "[buffers][flush]") {
  testclient::Fresh fresh;
  testclient::Install();
  EnableKernelsAndRuntime();
  Launch(/*start_us=*/10, /*end_us=*/1000);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(testclient::Deliveries().empty());
  fakehub::Advance(2000 * kUs);  // the kernel has ended on the sim clock
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].end != 0);
  // Delivered by the flushing thread, before the flush returned.
  CHECK(testclient::Deliveries().at(0).thread == testclient::CurrentThread());
}

TEST_CASE("a forced flush delivers everything with 0 for times still in the future", "[buffers][flush]") {
  testclient::Fresh fresh;
  testclient::Install();
  EnableKernelsAndRuntime();
  const uint64_t t0 = fakehub::Now();
  Launch(/*start_us=*/0, /*end_us=*/5000);       // started, not ended at the flush
  Launch(/*start_us=*/6000, /*end_us=*/7000);    // not started at the flush
  fakehub::Advance(10 * kUs);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  auto kernels = RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0].start == t0);
  CHECK(kernels[0].end == 0);
  CHECK(kernels[0].completed == 0);
  CHECK(kernels[1].start == 0);
  CHECK(kernels[1].end == 0);
  // Host records are complete as soon as written.
  auto api = RecordsOf<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  REQUIRE(api.size() == 2);
  CHECK(api[0].end != 0);
  // Delivered records are never delivered again.
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(RecordsOf<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).size() == 2);
}

TEST_CASE("a full buffer is delivered by CUPTI's worker thread once all its work has ended", "[buffers][worker]") {
  testclient::Fresh fresh;
  // Room for one kernel record and one API record (216 + 40 bytes).
  testclient::Install({/*buffer_size=*/sizeof(CUpti_ActivityKernel10) + sizeof(CUpti_ActivityAPI)});
  EnableKernelsAndRuntime();
  Launch(/*start_us=*/10, /*end_us=*/500);  // fills the buffer: retired at once
  // The kernel has not ended: the worker holds the full buffer back.
  std::this_thread::sleep_for(50ms);
  CHECK(testclient::Deliveries().empty());
  fakehub::Advance(1000 * kUs);
  auto deliveries = testclient::WaitForDeliveries(1, 5s);
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].thread != testclient::CurrentThread());
  CHECK(deliveries[0].bytes.size() == sizeof(CUpti_ActivityKernel10) + sizeof(CUpti_ActivityAPI));
  CHECK(testclient::Requests() == 1);
}

TEST_CASE("maxNumRecords caps the records per buffer", "[buffers]") {
  testclient::Fresh fresh;
  testclient::Install({/*buffer_size=*/1 << 16, /*max_records=*/2});
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  for (int i = 0; i < 5; ++i) fakehub::MakeCall(kLaunch);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  auto deliveries = testclient::Deliveries();
  REQUIRE(deliveries.size() == 3);
  size_t records = 0;
  for (const auto& delivery : deliveries) {
    CHECK(delivery.bytes.size() <= 2 * sizeof(CUpti_ActivityAPI));
    records += delivery.bytes.size() / sizeof(CUpti_ActivityAPI);
  }
  CHECK(records == 5);
}

TEST_CASE("a client that declines buffers loses records and every one is counted", "[buffers][drops]") {
  testclient::Fresh fresh;
  testclient::Install({/*buffer_size=*/0, /*max_records=*/0, /*decline=*/true});
  EnableKernelsAndRuntime();
  for (int i = 0; i < 3; ++i) Launch(0, 1);  // 3 API + 3 kernel records
  fakehub::Advance(10 * kUs);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(testclient::Records().empty());
  CHECK(testclient::Requests() == 6);  // asked again for each record
  CHECK(Dropped() == 6);
  CHECK(Dropped() == 0);  // reading resets the count
}

TEST_CASE("SIM_CUPTI_NULL_BUFFERS acts as if every request got NULL and counts drops exactly", "[buffers][drops][fault]") {
  testclient::Fresh fresh;
  fakehub::SetFault("CUPTI_NULL_BUFFERS", "1");
  testclient::Install();
  EnableKernelsAndRuntime();
  Launch(0, 1);
  fakehub::MakeCall(kLaunch);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  CHECK(testclient::Requests() == 0);
  CHECK(testclient::Records().empty());
  CHECK(Dropped() == 3);
}

TEST_CASE("a buffer too small for a record drops it and is handed back empty", "[buffers][drops]") {
  testclient::Fresh fresh;
  testclient::Install({/*buffer_size=*/16});
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  CHECK(Dropped() == 1);
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
  auto deliveries = testclient::WaitForDeliveries(1, 5s);
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].bytes.empty());
}

TEST_CASE("drops are counted per context and stream and all together for a NULL context", "[buffers][drops]") {
  testclient::Fresh fresh;
  testclient::Install({/*buffer_size=*/0, /*max_records=*/0, /*decline=*/true});
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
  int context_storage = 0;
  auto* context = reinterpret_cast<CUcontext>(&context_storage);
  fakehub::ContextEvent(/*destroy=*/false, context, 1);  // the fake's ops use context id 1
  Launch(0, 1, /*stream=*/5);
  Launch(0, 1, /*stream=*/5);
  Launch(0, 1, /*stream=*/6);
  size_t dropped = 0;
  REQUIRE(cuptiActivityGetNumDroppedRecords(context, 5, &dropped) == CUPTI_SUCCESS);
  CHECK(dropped == 2);
  CHECK(Dropped() == 1);  // what is left: stream 6
}

TEST_CASE("records made with no buffer callbacks registered are dropped and flushing then is an error",
          "[buffers][drops]") {
  testclient::Fresh fresh;
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  CHECK(cuptiActivityFlushAll(0) == CUPTI_ERROR_INVALID_OPERATION);
  CHECK(Dropped() == 1);
}

TEST_CASE("each thread fills its own buffer by default and all share one when per-thread is off", "[buffers]") {
  testclient::Fresh fresh;
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  auto two_threads = [] {
    fakehub::MakeCall(kLaunch);
    std::thread([] { fakehub::MakeCall(kLaunch); }).join();
  };
  two_threads();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(testclient::Requests() == 2);
  CHECK(testclient::Deliveries().size() == 2);

  testclient::Clear();
  testclient::Install();
  uint8_t per_thread = 0;
  size_t size = sizeof(per_thread);
  REQUIRE(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &per_thread) ==
          CUPTI_SUCCESS);
  two_threads();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(testclient::Requests() == 1);
  REQUIRE(testclient::Deliveries().size() == 1);
  CHECK(testclient::Records().size() == 2);
}

TEST_CASE("SIM_CUPTI_LATE_MS makes an unforced flush return at once and the buffer arrive that much later",
          "[buffers][fault]") {
  testclient::Fresh fresh;
  fakehub::SetFault("CUPTI_LATE_MS", "300");
  testclient::Install();
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME) == CUPTI_SUCCESS);
  fakehub::MakeCall(kLaunch);
  const auto flushed = std::chrono::steady_clock::now();
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  CHECK(std::chrono::steady_clock::now() - flushed < 200ms);
  CHECK(testclient::Deliveries().empty());
  // The fake clock stands still, so "later" is measured on the sim clock:
  // nothing arrives until it has moved 300 ms.
  std::this_thread::sleep_for(100ms);
  CHECK(testclient::Deliveries().empty());
  fakehub::Advance(300 * 1000 * kUs);
  auto deliveries = testclient::WaitForDeliveries(1, 5s);
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0].thread != testclient::CurrentThread());
}

TEST_CASE("cuptiActivityGetNextRecord walks a delivered buffer exactly as NVIDIA's library does", "[buffers]") {
  // Reference: the real libcupti.so.13 of the toolkit; its iterator works
  // without a driver. Skipped where the toolkit's library is absent.
  std::string path = std::string(std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda") +
                     "/lib64/libcupti.so.13";
  void* real = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (real == nullptr) {
    WARN("no NVIDIA libcupti at " << path << ": reference comparison skipped");
    return;
  }
  using NextRecord = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
  auto real_next = reinterpret_cast<NextRecord>(dlsym(real, "cuptiActivityGetNextRecord"));
  REQUIRE(real_next != nullptr);

  testclient::Fresh fresh;
  testclient::Install();
  for (auto kind : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMSET,
                    CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
    REQUIRE(cuptiActivityEnable(kind) == CUPTI_SUCCESS);
  }
  fakehub::MakeCall(kLaunch, [](uint32_t id) {
    fakehub::Enqueue(fakehub::Kernel(id, 0, fakehub::Now(), fakehub::Now() + kUs));
    fakehub::Enqueue(fakehub::Op(SIM_OP_MEMSET, id, 0, fakehub::Now(), fakehub::Now() + kUs));
    fakehub::Enqueue(fakehub::Op(SIM_OP_MEM_ALLOC, id, 0, fakehub::Now(), fakehub::Now()));
    fakehub::Enqueue(fakehub::Op(SIM_OP_SYNC, id, 0, fakehub::Now(), fakehub::Now() + kUs));
  });
  fakehub::Advance(10 * kUs);
  REQUIRE(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
  auto deliveries = testclient::Deliveries();
  REQUIRE(deliveries.size() == 1);
  std::vector<uint8_t> bytes = deliveries[0].bytes;
  bytes.resize(bytes.size() + 64, 0);  // a zeroed tail, as in a partly filled buffer

  // Whole buffer, a cut-short last record, and the zeroed tail included.
  const size_t whole = deliveries[0].bytes.size();
  for (size_t valid : {whole, whole - 8, bytes.size()}) {
    CUpti_Activity* mine = nullptr;
    CUpti_Activity* theirs = nullptr;
    int steps = 0;
    for (;;) {
      CUptiResult my_status = cuptiActivityGetNextRecord(bytes.data(), valid, &mine);
      CUptiResult their_status = real_next(bytes.data(), valid, &theirs);
      REQUIRE(my_status == their_status);
      if (my_status != CUPTI_SUCCESS) break;
      REQUIRE(mine == theirs);
      ++steps;
    }
    CHECK(steps == (valid == whole - 8 ? 4 : 5));  // API, kernel, memset, memory, sync
  }
  dlclose(real);
}
