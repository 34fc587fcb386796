// Writes the seed corpus: for each CUPTI version the target picks from, one
// input holding a record of every kind as that release delivers it (its own
// structs, filled with plausible values: times in order, launch geometry,
// copy kinds, a runtime and a driver launch callback id), plus inputs at the
// edges (no timestamps, end before start, times near 2^64 with a clock
// offset). Regenerate with:
//   clang++ -std=c++20 -I. -isystem $CUDA_HOME/include -isystem $CUDA_HOME/extras/CUPTI/include \
//     test/fuzz/activity_decoder/make_corpus.cpp collectors/cupti/record_layouts.cpp -o /tmp/make_corpus &&
//   /tmp/make_corpus test/fuzz/activity_decoder/corpus
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "test/fuzz/activity_decoder/delivered.h"

namespace {

using Bytes = std::vector<uint8_t>;

template <typename T>
void Put(Bytes* out, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out->insert(out->end(), p, p + sizeof(T));
}

uint8_t KindIndex(CUpti_ActivityKind kind) {
  for (size_t i = 0; i < fuzz::kKindCount; ++i) {
    if (fuzz::kKinds[i] == kind) return static_cast<uint8_t>(i);
  }
  return 0;
}

// One record: kind byte, name, then the struct's bytes cut to what the
// release delivers.
template <typename Record>
void Add(Bytes* out, const Record& r, CUpti_ActivityKind kind, const prof::cupti::RecordLayouts& l,
         const std::string& name = "") {
  out->push_back(KindIndex(kind));
  out->push_back(static_cast<uint8_t>(name.size()));
  out->insert(out->end(), name.begin(), name.end());
  size_t size = fuzz::DeliveredSize(kind, l);
  Bytes raw(size, 0);
  std::memcpy(raw.data(), &r, std::min(size, sizeof(Record)));
  out->insert(out->end(), raw.begin(), raw.end());
}

template <typename Record>
Record Zero() {
  Record r;
  std::memset(&r, 0, sizeof(r));
  return r;
}

// A record like the unit tests' (record_layouts_test): the fuzzer's seed, with its own values.
template <typename Kernel>
Kernel MakeKernel(uint64_t t) {
  auto k = Zero<Kernel>();
  k.start = t;
  k.end = t + 4200;
  k.correlationId = 17;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 13;
  k.gridX = 1024;
  k.gridY = k.gridZ = 1;
  k.blockX = 256;
  k.blockY = k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 2048;
  k.dynamicSharedMemory = 0;
  return k;
}

template <typename Copy>
Copy MakeCopy(uint64_t t, uint8_t copy_kind) {
  auto m = Zero<Copy>();
  m.start = t;
  m.end = t + 900;
  m.bytes = 1 << 20;
  m.copyKind = copy_kind;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.correlationId = 18;
  m.streamId = 13;
  m.contextId = 1;
  return m;
}

Bytes Header(uint8_t version_index, int64_t offset) {
  Bytes out;
  out.push_back(version_index);
  Put(&out, offset);
  return out;
}

Bytes EveryKind(uint8_t version_index, int64_t offset, uint64_t t) {
  prof::cupti::RecordLayouts l;
  prof::cupti::LayoutsFor(fuzz::kVersions[version_index], &l);
  Bytes out = Header(version_index, offset);
  if (l.kernel == prof::cupti::KernelLayout::kKernel9) {
    Add(&out, MakeKernel<CUpti_ActivityKernel9>(t), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, l, "_Z4gemmPfS_S_i");
  } else {
    Add(&out, MakeKernel<CUpti_ActivityKernel10>(t), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, l, "_Z4gemmPfS_S_i");
  }
  if (l.memcpy == prof::cupti::MemcpyLayout::kMemcpy5) {
    Add(&out, MakeCopy<CUpti_ActivityMemcpy5>(t + 5000, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), CUPTI_ACTIVITY_KIND_MEMCPY, l);
  } else {
    Add(&out, MakeCopy<CUpti_ActivityMemcpy6>(t + 5000, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH), CUPTI_ACTIVITY_KIND_MEMCPY, l);
  }
  Add(&out, MakeCopy<CUpti_ActivityMemcpyPtoP4>(t + 6000, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), CUPTI_ACTIVITY_KIND_MEMCPY2,
      l);
  auto set = Zero<CUpti_ActivityMemset4>();
  set.start = t + 7000;
  set.end = t + 7100;
  set.bytes = 4096;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.correlationId = 19;
  Add(&out, set, CUPTI_ACTIVITY_KIND_MEMSET, l);
  auto api = Zero<CUpti_ActivityAPI>();
  api.start = t - 3000;
  api.end = t - 1000;
  api.correlationId = 17;
  api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  api.processId = 4242;
  api.threadId = 4243;
  Add(&out, api, CUPTI_ACTIVITY_KIND_RUNTIME, l);
  api.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  Add(&out, api, CUPTI_ACTIVITY_KIND_DRIVER, l);
  api.cbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;  // filtered
  Add(&out, api, CUPTI_ACTIVITY_KIND_DRIVER, l);
  if (l.sync == prof::cupti::SyncLayout::kSynchronization) {
    auto s = Zero<CUpti_ActivitySynchronization>();
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = t + 8000;
    s.end = t + 9000;
    s.correlationId = 20;
    s.streamId = 13;
    Add(&out, s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, l);
  } else {
    auto s = Zero<CUpti_ActivitySynchronization2>();
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    s.start = t + 8000;
    s.end = t + 9000;
    s.correlationId = 20;
    Add(&out, s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, l);
  }
  auto mem = Zero<CUpti_ActivityMemory4>();  // Memory2/3 are its prefixes
  mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mem.timestamp = t - 9000;
  mem.address = 0x7f0000000000;
  mem.bytes = 1 << 22;
  mem.correlationId = 16;
  mem.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  Add(&out, mem, CUPTI_ACTIVITY_KIND_MEMORY2, l);
  mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  mem.timestamp = t + 10000;
  Add(&out, mem, CUPTI_ACTIVITY_KIND_MEMORY2, l);
  auto over = Zero<CUpti_ActivityOverhead3>();  // Overhead/Overhead2 share its leading fields' meaning
  over.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  over.start = t + 11000;
  over.end = t + 12000;
  Add(&out, over, CUPTI_ACTIVITY_KIND_OVERHEAD, l);
  auto name = Zero<CUpti_ActivityName>();  // a kind the decoder does not keep
  Add(&out, name, CUPTI_ACTIVITY_KIND_NAME, l);
  return out;
}

bool Write(const std::string& path, const Bytes& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus <corpus dir>\n");
    return 2;
  }
  std::string dir = argv[1];
  bool ok = true;
  for (uint8_t v = 0; v < fuzz::kVersionCount; ++v) {
    ok &= Write(dir + "/every_kind_cupti_" + std::to_string(fuzz::kVersions[v]), EveryKind(v, 0, 1'000'000'000));
  }
  // Calibrated clocks: CUPTI behind and ahead of the agent.
  ok &= Write(dir + "/offset_ahead_cupti_130000", EveryKind(5, 2'000'000'000, 1'000'000'000));
  ok &= Write(dir + "/offset_behind_cupti_22", EveryKind(2, -999'999'000, 1'000'000'000));
  // Times near the ends of the clock.
  ok &= Write(dir + "/times_near_2_64_cupti_130000", EveryKind(5, INT64_MAX, UINT64_MAX - 100'000));
  ok &= Write(dir + "/times_near_0_cupti_19", EveryKind(0, INT64_MIN, 10'000));
  return ok ? 0 : 1;
}
