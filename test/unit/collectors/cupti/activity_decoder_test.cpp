// Decoding CUPTI's record structs into DeviceRecords: every field the
// exporters rely on, the clock mapping, and what is filtered or counted.
#include "collectors/cupti/activity_decoder.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "collectors/cupti/api_classes.h"

namespace prof::cupti {
namespace {

template <typename Record>
Record Zeroed(CUpti_ActivityKind kind) {
  Record r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

struct Fixture {
  NameTable names;
  ClockMap clock;  // identity
  DecodeContext context{&names, &clock};
  DeviceRecord out{};

  template <typename Record>
  DecodeStatus Decode(const Record& r) {
    return DecodeActivity(*reinterpret_cast<const CUpti_Activity*>(&r), context, &out);
  }
};

TEST_CASE("a Kernel10 record keeps name, launch geometry, resources, stream and correlation", "[decoder]") {
  Fixture f;
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 1000;
  k.end = 2500;
  k.name = "_Z6matmulPfS_S_i";
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 14;
  k.correlationId = 77;
  k.gridX = 64;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.graphId = 9;
  k.graphNodeId = 0x100000007ull;
  REQUIRE(f.Decode(k) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kKernel));
  CHECK(f.out.start_ns == 1000);
  CHECK(f.out.end_ns == 2500);
  CHECK(f.names.Get(f.out.name_id) == "_Z6matmulPfS_S_i");
  CHECK(f.out.device_id == 1);
  CHECK(f.out.context_id == 3);
  CHECK(f.out.stream_id == 14);
  CHECK(f.out.correlation_id == 77);
  CHECK(f.out.grid[0] == 64);
  CHECK(f.out.grid[1] == 2);
  CHECK(f.out.block[0] == 256);
  CHECK(f.out.registers_per_thread == 40);
  CHECK(f.out.static_shared_bytes == 1024);
  CHECK(f.out.dynamic_shared_bytes == 4096);
  CHECK(f.out.graph_id == 9);
  CHECK(f.out.graph_node_id == 0x100000007ull);
  CHECK(f.out.capture_stack_id == 0);  // the collector names it from its graph sites
}

TEST_CASE("the same kernel name is interned once", "[decoder]") {
  Fixture f;
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 1;
  k.end = 2;
  k.name = "_Z4axpyv";
  REQUIRE(f.Decode(k) == DecodeStatus::kRecord);
  uint32_t first = f.out.name_id;
  REQUIRE(f.Decode(k) == DecodeStatus::kRecord);
  CHECK(f.out.name_id == first);
  CHECK(f.names.size() == 2);  // "" and the name
}

// Each test builds its own record kind and checks its own fields: alike in shape, other records.
TEST_CASE("Memcpy6 and MemcpyPtoP4 records keep bytes, copy kind and memory kinds", "[decoder]") {
  Fixture f;
  auto m = Zeroed<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.start = 10;
  m.end = 20;
  m.bytes = 1 << 20;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.streamId = 3;
  m.correlationId = 5;
  REQUIRE(f.Decode(m) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kMemcpy));
  CHECK(f.out.bytes == (1u << 20));
  CHECK(f.out.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
  CHECK(f.out.src_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK(f.out.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  CHECK(f.out.stream_id == 3);
  CHECK(f.out.correlation_id == 5);

  auto p = Zeroed<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  p.start = 30;
  p.end = 45;
  p.bytes = 4096;
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.correlationId = 6;
  p.deviceId = 1;
  REQUIRE(f.Decode(p) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kMemcpy));
  CHECK(f.out.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
  CHECK(f.out.bytes == 4096);
  CHECK(f.out.device_id == 1);
  CHECK(f.out.end_ns == 45);
}

TEST_CASE("a Memset4 record keeps bytes and the memory kind", "[decoder]") {
  Fixture f;
  auto m = Zeroed<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.start = 5;
  m.end = 9;
  m.bytes = 512;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.correlationId = 8;
  REQUIRE(f.Decode(m) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kMemset));
  CHECK(f.out.bytes == 512);
  CHECK(f.out.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK(f.out.correlation_id == 8);
}

TEST_CASE("runtime API records are named by their callback id", "[decoder]") {
  Fixture f;
  auto a = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
  a.start = 100;
  a.end = 200;
  a.threadId = 1234;
  a.correlationId = 3;
  REQUIRE(f.Decode(a) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kRuntimeApi));
  CHECK(f.names.Get(f.out.name_id) == "cudaMalloc");
  CHECK(f.out.thread_id == 1234);
  CHECK(f.out.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
}

TEST_CASE("driver API records are kept for launches and memory calls only", "[decoder]") {
  Fixture f;
  auto a = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  a.start = 1;
  a.end = 2;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  REQUIRE(f.Decode(a) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kDriverApi));
  CHECK(f.names.Get(f.out.name_id) == "cuLaunchKernel");
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2;
  CHECK(f.Decode(a) == DecodeStatus::kRecord);
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;
  CHECK(f.Decode(a) == DecodeStatus::kFiltered);
}

// The decoder's fields of these kinds; record_layouts_test holds each CUDA version's layout of them.
TEST_CASE("Synchronization2, Memory4 and Overhead3 records decode to their kinds", "[decoder]") {
  Fixture f;
  auto s = Zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 10;
  s.end = 50;
  s.streamId = 2;
  s.correlationId = 4;
  REQUIRE(f.Decode(s) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kSync));
  CHECK(f.out.cbid == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  CHECK(f.out.stream_id == 2);

  auto m = Zeroed<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = 0x7f0000001000;
  m.bytes = 1 << 16;
  m.timestamp = 77;
  m.correlationId = 12;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  REQUIRE(f.Decode(m) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kMemAlloc));
  CHECK(f.out.address == 0x7f0000001000);
  CHECK(f.out.bytes == (1u << 16));
  CHECK(f.out.start_ns == 77);
  CHECK(f.out.end_ns == 77);
  CHECK(f.out.memory_pool == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  REQUIRE(f.Decode(m) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kMemFree));

  auto o = Zeroed<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.start = 3;
  o.end = 4;
  REQUIRE(f.Decode(o) == DecodeStatus::kRecord);
  CHECK(f.out.kind == static_cast<uint8_t>(DeviceKind::kOverhead));
  CHECK(f.out.cbid == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
}

TEST_CASE("kinds the decoder does not know are reported as unknown, not decoded", "[decoder]") {
  Fixture f;
  auto marker = Zeroed<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  CHECK(f.Decode(marker) == DecodeStatus::kUnknownKind);
}

TEST_CASE("records CUPTI could not time are not passed on as zero-length work", "[decoder]") {
  Fixture f;
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 0;
  k.end = 0;
  CHECK(f.Decode(k) == DecodeStatus::kNoTimestamp);
  k.start = 100;
  k.end = 50;
  CHECK(f.Decode(k) == DecodeStatus::kNoTimestamp);
}

TEST_CASE("decoded times go through the clock map", "[decoder]") {
  Fixture f;
  // CUPTI 1000 ns behind the agent: every time moves forward by 1000.
  f.clock.Calibrate([] { return uint64_t{5000}; },
                    [](uint64_t* ns) {
                      *ns = 4000;
                      return true;
                    });
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 10'000;
  k.end = 12'000;
  REQUIRE(f.Decode(k) == DecodeStatus::kRecord);
  CHECK(f.out.start_ns == 11'000);
  CHECK(f.out.end_ns == 13'000);
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("a record timed before the agent's clock began is not placed at time 0", "[decoder]") {
  Fixture f;
  // CUPTI 1 s ahead of the agent: a record at CUPTI time 500 ns is before agent time 0.
  f.clock.Calibrate([] { return uint64_t{2000}; },
                    [](uint64_t* ns) {
                      *ns = 1'000'002'000;
                      return true;
                    });
  auto k = Zeroed<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 500;
  k.end = 1'000'003'000;
  CHECK(f.Decode(k) == DecodeStatus::kNoTimestamp);
}

TEST_CASE("enum fields holding values outside their enum are read as numbers", "[decoder]") {
  // A newer or damaged record: the operation type is no allocation or release.
  Fixture f;
  auto m = Zeroed<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.timestamp = 100;
  uint32_t bogus = 0xDEDEDE00;
  std::memcpy(&m.memoryOperationType, &bogus, sizeof(bogus));
  CHECK(f.Decode(m) == DecodeStatus::kFiltered);
  auto s = Zeroed<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.start = 100;
  s.end = 200;
  std::memcpy(&s.type, &bogus, sizeof(bogus));
  REQUIRE(f.Decode(s) == DecodeStatus::kRecord);
  CHECK(f.out.cbid == bogus);
}

}  // namespace
}  // namespace prof::cupti
