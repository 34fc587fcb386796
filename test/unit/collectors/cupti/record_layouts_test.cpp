// Which record struct each CUPTI release delivers, and decoding a hand-built
// record of each layout libprof knows into the same DeviceRecord.
#include "collectors/cupti/record_layouts.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <vector>

#include "collectors/cupti/activity_decoder.h"
#include "collectors/cupti/cupti_13_2.h"

namespace prof::cupti {
namespace {

RecordLayouts For(uint32_t version) {
  RecordLayouts l;
  REQUIRE(LayoutsFor(version, &l));
  return l;
}

TEST_CASE("CUPTI 12.0 to 12.6 deliver Kernel9, Memcpy5, Synchronization and Memory3", "[layouts]") {
  for (uint32_t v : {19u, 20u, 21u, 22u, 23u, 24u, 25u}) {
    RecordLayouts l = For(v);
    CHECK(l.kernel == KernelLayout::kKernel9);
    CHECK(l.memcpy == MemcpyLayout::kMemcpy5);
    CHECK(l.sync == SyncLayout::kSynchronization);
    CHECK(l.memory == MemoryLayout::kMemory3);
  }
  CHECK(For(19).overhead == OverheadLayout::kOverhead);
  CHECK(For(20).overhead == OverheadLayout::kOverhead2);
  CHECK(For(22).overhead == OverheadLayout::kOverhead3);
}

TEST_CASE("CUPTI 12.8 and 12.9 switch copies and synchronizations to Memcpy6 and Synchronization2", "[layouts]") {
  for (uint32_t v : {26u, 27u, 28u}) {
    RecordLayouts l = For(v);
    CHECK(l.kernel == KernelLayout::kKernel9);
    CHECK(l.memcpy == MemcpyLayout::kMemcpy6);
    CHECK(l.sync == SyncLayout::kSynchronization2);
  }
}

TEST_CASE("CUPTI 13.0 delivers Kernel10 and Memory4", "[layouts]") {
  for (uint32_t v : {130000u, 130001u, 130099u}) {
    RecordLayouts l = For(v);
    CHECK(l.kernel == KernelLayout::kKernel10);
    CHECK(l.memcpy == MemcpyLayout::kMemcpy6);
    CHECK(l.sync == SyncLayout::kSynchronization2);
    CHECK(l.memory == MemoryLayout::kMemory4);
  }
  CHECK(DescribeLayouts(For(130001)) ==
        "Kernel10, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, Memory4, Overhead3");
}

TEST_CASE("CUPTI 13.1 and 13.2 deliver Kernel11 and otherwise 13.0's structs", "[layouts]") {
  for (uint32_t v : {130100u, 130101u, 130200u, 130202u, 130299u}) {
    RecordLayouts l = For(v);
    CHECK(l.kernel == KernelLayout::kKernel11);
    CHECK(l.memcpy == MemcpyLayout::kMemcpy6);
    CHECK(l.sync == SyncLayout::kSynchronization2);
    CHECK(l.memory == MemoryLayout::kMemory4);
    CHECK(l.overhead == OverheadLayout::kOverhead3);
    CHECK_FALSE(l.cuda12_runtime_names);
  }
  CHECK(DescribeLayouts(For(130202)) ==
        "Kernel11, Memcpy6, MemcpyPtoP4, Memset4, Synchronization2, Memory4, Overhead3");
  CHECK(CuptiRelease(130202) == "13.2");
}

TEST_CASE("versions outside 12.0 to 13.2 have no layout", "[layouts]") {
  RecordLayouts l;
  // 130300: CUPTI 13.3 delivers Kernel12, a layout libprof does not know.
  for (uint32_t v : {0u, 18u, 29u, 1000u, 129999u, 130300u, 130400u, 140000u}) {
    CHECK_FALSE(LayoutsFor(v, &l));
  }
  CHECK(std::string(SupportedCuptiRange()).find("19 (CUDA 12.0)") != std::string::npos);
  CHECK(CuptiRelease(22) == "12.4");
  CHECK(CuptiRelease(130001) == "13.0");
  CHECK(CuptiRelease(18) == "11.8 or older");
  CHECK(CuptiRelease(1000) == "");
}

// A record alone in a heap block of exactly its size: reading a field of a
// newer, longer struct would read past the block (AddressSanitizer).
template <typename Record>
std::unique_ptr<uint8_t[]> Exact(const Record& r) {
  auto block = std::make_unique<uint8_t[]>(sizeof(Record));
  std::memcpy(block.get(), &r, sizeof(Record));
  return block;
}

struct Decoder {
  NameTable names;
  ClockMap clock;
  RecordLayouts layouts;
  DeviceRecord out{};
  explicit Decoder(uint32_t version) { REQUIRE(LayoutsFor(version, &layouts)); }
  template <typename Record>
  DecodeStatus Decode(const Record& r) {
    auto block = Exact(r);
    DecodeContext context{&names, &clock, &layouts};
    return DecodeActivity(*reinterpret_cast<const CUpti_Activity*>(block.get()), context, &out);
  }
};

template <typename Record>
Record Zeroed(CUpti_ActivityKind kind) {
  Record r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

template <typename KernelRecord>
void CheckKernel(uint32_t version) {
  Decoder d(version);
  auto k = Zeroed<KernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 100;
  k.end = 350;
  k.name = "_Z4stepPf";
  k.streamId = 13;
  k.contextId = 1;
  k.correlationId = 42;
  k.gridX = 8;
  k.gridY = k.gridZ = 1;
  k.blockX = 128;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.dynamicSharedMemory = 512;
  k.graphId = 5;
  REQUIRE(d.Decode(k) == DecodeStatus::kRecord);
  CHECK(d.out.kind == static_cast<uint8_t>(DeviceKind::kKernel));
  CHECK(d.out.start_ns == 100);
  CHECK(d.out.end_ns == 350);
  CHECK(d.names.Get(d.out.name_id) == "_Z4stepPf");
  CHECK(d.out.stream_id == 13);
  CHECK(d.out.correlation_id == 42);
  CHECK(d.out.grid[0] == 8);
  CHECK(d.out.block[0] == 128);
  CHECK(d.out.registers_per_thread == 32);
  CHECK(d.out.dynamic_shared_bytes == 512);
  CHECK(d.out.graph_id == 5);
}

TEST_CASE("a hand-built Kernel9 record (CUDA 12.x) decodes like a Kernel10 one (13.0)", "[layouts]") {
  CheckKernel<CUpti_ActivityKernel9>(22);
  CheckKernel<CUpti_ActivityKernel10>(130001);
}

TEST_CASE("a Kernel11 record (CUDA 13.1, 13.2) decodes like a Kernel10 one, read within its 224 bytes", "[layouts]") {
  Decoder d(130202);
  v13_2::ActivityKernel11 k11;
  std::memset(&k11, 0, sizeof(k11));
  CUpti_ActivityKernel10& k = k11.kernel10;
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 100;
  k.end = 350;
  k.name = "_Z4stepPf";
  k.streamId = 13;
  k.correlationId = 42;
  k.gridX = 8;
  k.blockX = 128;
  k.registersPerThread = 32;
  k.graphId = 5;
  k11.priority = -3;  // a high-priority stream's launch
  REQUIRE(d.Decode(k11) == DecodeStatus::kRecord);
  CHECK(d.out.kind == static_cast<uint8_t>(DeviceKind::kKernel));
  CHECK(d.out.end_ns - d.out.start_ns == 250);
  CHECK(d.names.Get(d.out.name_id) == "_Z4stepPf");
  CHECK(d.out.stream_id == 13);
  CHECK(d.out.correlation_id == 42);
  CHECK(d.out.grid[0] == 8);
  CHECK(d.out.block[0] == 128);
  CHECK(d.out.registers_per_thread == 32);
  CHECK(d.out.graph_id == 5);
  // What 13.0 wrote in a Kernel10 record, 13.2 writes at the same offsets:
  // decoded as 13.0's, the first 216 bytes give the same record.
  Decoder as130(130001);
  REQUIRE(as130.Decode(k) == DecodeStatus::kRecord);
  CHECK(as130.out.correlation_id == d.out.correlation_id);
  CHECK(as130.out.end_ns - as130.out.start_ns == 250);
}

template <typename MemcpyRecord>
void CheckMemcpy(uint32_t version) {
  Decoder d(version);
  auto m = Zeroed<MemcpyRecord>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.start = 10;
  m.end = 90;
  m.bytes = 4096;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.streamId = 7;
  m.correlationId = 9;
  m.graphId = 3;
  REQUIRE(d.Decode(m) == DecodeStatus::kRecord);
  CHECK(d.out.kind == static_cast<uint8_t>(DeviceKind::kMemcpy));
  CHECK(d.out.bytes == 4096);
  CHECK(d.out.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
  CHECK(d.out.src_kind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
  CHECK(d.out.dst_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  CHECK(d.out.stream_id == 7);
  CHECK(d.out.correlation_id == 9);
  CHECK(d.out.graph_id == 3);
  CHECK(d.out.end_ns - d.out.start_ns == 80);
}

TEST_CASE("a hand-built Memcpy5 record (CUDA 12.0-12.6) decodes like a Memcpy6 one (12.8+)", "[layouts]") {
  CheckMemcpy<CUpti_ActivityMemcpy5>(22);
  CheckMemcpy<CUpti_ActivityMemcpy6>(26);
  CheckMemcpy<CUpti_ActivityMemcpy6>(130000);
}

// CheckMemcpy's shape for synchronization records: each Check* builds and checks its own kind.
template <typename SyncRecord>
void CheckSync(uint32_t version) {
  Decoder d(version);
  auto s = Zeroed<SyncRecord>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 1000;
  s.end = 9000;
  s.correlationId = 11;
  s.contextId = 1;
  s.streamId = 14;
  REQUIRE(d.Decode(s) == DecodeStatus::kRecord);
  CHECK(d.out.kind == static_cast<uint8_t>(DeviceKind::kSync));
  CHECK(d.out.cbid == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  CHECK(d.out.correlation_id == 11);
  CHECK(d.out.stream_id == 14);
  CHECK(d.out.end_ns - d.out.start_ns == 8000);
}

TEST_CASE("a hand-built Synchronization record (CUDA 12.0-12.6) decodes like Synchronization2", "[layouts]") {
  CheckSync<CUpti_ActivitySynchronization>(19);
  CheckSync<CUpti_ActivitySynchronization2>(27);
}

template <typename MemoryRecord>
void CheckMemory(uint32_t version) {
  Decoder d(version);
  auto m = Zeroed<MemoryRecord>(CUPTI_ACTIVITY_KIND_MEMORY2);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.correlationId = 21;
  m.address = 0x7f0000001000;
  m.bytes = 1 << 20;
  m.timestamp = 777;
  m.streamId = 15;
  m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  REQUIRE(d.Decode(m) == DecodeStatus::kRecord);
  CHECK(d.out.kind == static_cast<uint8_t>(DeviceKind::kMemAlloc));
  CHECK(d.out.address == 0x7f0000001000);
  CHECK(d.out.bytes == (1u << 20));
  CHECK(d.out.start_ns == 777);
  CHECK(d.out.stream_id == 15);
  CHECK(d.out.correlation_id == 21);
  CHECK(d.out.memory_pool == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL);
}

TEST_CASE("hand-built Memory2 and Memory3 records (CUDA 12.x) decode like Memory4 (13.0)", "[layouts]") {
  CheckMemory<CUpti_ActivityMemory2>(19);  // the shortest a 12.x could deliver
  CheckMemory<CUpti_ActivityMemory3>(24);
  CheckMemory<CUpti_ActivityMemory4>(130000);
}

TEST_CASE("Overhead records of each layout decode, the oldest without a correlation id", "[layouts]") {
  {
    Decoder d(19);
    auto o = Zeroed<CUpti_ActivityOverhead>(CUPTI_ACTIVITY_KIND_OVERHEAD);
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.start = 5;
    o.end = 15;
    REQUIRE(d.Decode(o) == DecodeStatus::kRecord);
    CHECK(d.out.cbid == CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH);
    CHECK(d.out.correlation_id == 0);
  }
  {
    Decoder d(21);
    auto o = Zeroed<CUpti_ActivityOverhead2>(CUPTI_ACTIVITY_KIND_OVERHEAD);
    o.start = 5;
    o.end = 15;
    o.correlationId = 8;
    REQUIRE(d.Decode(o) == DecodeStatus::kRecord);
    CHECK(d.out.correlation_id == 8);
  }
  {
    Decoder d(22);
    auto o = Zeroed<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
    o.start = 5;
    o.end = 15;
    o.correlationId = 8;
    REQUIRE(d.Decode(o) == DecodeStatus::kRecord);
    CHECK(d.out.correlation_id == 8);
  }
}

}  // namespace
}  // namespace prof::cupti

namespace prof::cupti {
namespace {

TEST_CASE("a RUNTIME record from a 12.x CUPTI keeps the 12.x name of an id CUDA 13 renamed", "[layouts]") {
  for (uint32_t version : {22u, 130000u}) {
    Decoder d(version);
    auto a = Zeroed<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
    a.cbid = 440;  // 12.9's cudaGetDeviceProperties_v2_v12000, 13.0's cudaGetDeviceProperties_v12000
    a.start = 1;
    a.end = 2;
    REQUIRE(d.Decode(a) == DecodeStatus::kRecord);
    CHECK(d.names.Get(d.out.name_id) ==
          (version < 100 ? "cudaGetDeviceProperties_v2" : "cudaGetDeviceProperties"));
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;  // same name in both
    REQUIRE(d.Decode(a) == DecodeStatus::kRecord);
    CHECK(d.names.Get(d.out.name_id) == "cudaMalloc");
  }
}

}  // namespace
}  // namespace prof::cupti
