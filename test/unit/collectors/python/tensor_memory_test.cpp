// The replay of PyTorch's allocator history (collectors/python/tensor_memory.h):
// block sizes and totals as torch.cuda.memory_allocated would read them.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "collectors/python/tensor_memory.h"

namespace prof::python {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A hand-over: segments (each with its blocks), entries, end totals.
struct Records {
  std::vector<int64_t> segments, entries, ends;
  int64_t n_segments = 0, n_entries = 0, n_ends = 0, flags = 0;

  void Segment(int64_t addr, int64_t size, bool small, std::vector<std::vector<int64_t>> blocks) {
    segments.insert(segments.end(), {0, addr, size, small ? 1 : 0, static_cast<int64_t>(blocks.size())});
    for (const auto& b : blocks) segments.insert(segments.end(), b.begin(), b.end());
    ++n_segments;
  }
  void Entry(int64_t action, int64_t time_us, int64_t addr, int64_t size, int64_t site = -1) {
    entries.insert(entries.end(), {0, action, time_us, addr, size, site});
    ++n_entries;
  }
  void End(int64_t allocated, int64_t reserved) {
    ends.insert(ends.end(), {0, allocated, reserved});
    ++n_ends;
  }
  TensorMemoryBatch Batch(const std::string& sites = "") const {
    TensorMemoryBatch b;
    b.records = {kBlobVersion, n_segments, n_entries, n_ends, flags};
    b.records.insert(b.records.end(), segments.begin(), segments.end());
    b.records.insert(b.records.end(), entries.begin(), entries.end());
    b.records.insert(b.records.end(), ends.begin(), ends.end());
    b.sites = sites;
    return b;
  }
};

}  // namespace

TEST_CASE("requests round up to 512 bytes and a small block splits off what is left", "[tensor_memory]") {
  Records r;
  r.Segment(0x100000, 2 * kMiB, true, {{0x100000, 4096, kBlockAllocated}, {0x101000, 2 * kMiB - 4096, kBlockFree}});
  r.Entry(kActionAlloc, 10, 0x101000, 4000, 0);
  r.Entry(kActionAlloc, 11, 0x102000, 1, 1);
  r.Entry(kActionFreeRequested, 12, 0x101000, 4000);
  r.End(4096 + 512, 2 * kMiB);
  ReplayResult out = ReplayTensorMemory(r.Batch("a.py:1 in f\nb.py:2 in g"));
  CHECK(out.problem.empty());
  REQUIRE(out.events.size() == 3);
  CHECK(out.events[0].bytes == 4096);
  CHECK(out.events[0].total_allocated == 8192);
  CHECK(out.events[0].site_id == 1);
  CHECK(out.events[1].bytes == 512);
  CHECK(out.events[1].site_id == 2);
  CHECK(out.events[2].bytes == -4096);
  CHECK(out.events[2].total_allocated == 4096 + 512);
  CHECK(out.events[2].total_reserved == 2 * kMiB);
  CHECK(out.events[0].ts_ns == 10'000);
  CHECK(out.sites == std::vector<std::string>{"a.py:1 in f", "b.py:2 in g"});
}

TEST_CASE("a large block keeps up to 1 MiB more than asked, and counts it", "[tensor_memory]") {
  Records r;
  r.Entry(kActionSegmentAlloc, 1, 0x1000000, 20 * kMiB);
  r.Entry(kActionAlloc, 2, 0x1000000, 4 * kMiB);       // split: 16 MiB left
  r.Entry(kActionFreeRequested, 3, 0x1000000, 4 * kMiB);
  r.Entry(kActionFreeCompleted, 4, 0x1000000, 4 * kMiB);  // merged back into 20 MiB
  r.Entry(kActionAlloc, 5, 0x1000000, 19 * kMiB + 512);   // 1 MiB - 512 left: not split
  r.End(20 * kMiB, 20 * kMiB);
  ReplayResult out = ReplayTensorMemory(r.Batch());
  CHECK(out.problem.empty());
  REQUIRE(out.events.size() == 4);
  CHECK(out.events[0].total_reserved == 20 * kMiB);
  CHECK(out.events[1].bytes == 4 * kMiB);
  CHECK(out.events[2].total_allocated == 0);
  CHECK(out.events[3].bytes == 20 * kMiB);
  CHECK(out.events[3].total_allocated == 20 * kMiB);
}

TEST_CASE("a replay that ends elsewhere than PyTorch's allocator says so", "[tensor_memory]") {
  Records r;
  r.Entry(kActionAlloc, 1, 0x5000, 100);  // no block there in the snapshot
  r.End(4096, 0);
  ReplayResult out = ReplayTensorMemory(r.Batch());
  CHECK(out.problem.rfind("approximate", 0) == 0);
  Records wrapped;
  wrapped.flags = kFlagWrapped;
  wrapped.Entry(kActionSegmentAlloc, 1, 0x1000000, 20 * kMiB);
  ReplayResult cut = ReplayTensorMemory(wrapped.Batch());
  CHECK(cut.events.empty());
  CHECK(cut.problem.find("not recorded: the window and its warmup made more") == 0);
}

TEST_CASE("records cut short or of another version are refused, not read past", "[tensor_memory]") {
  Records r;
  r.Entry(kActionAlloc, 1, 0x5000, 100);
  TensorMemoryBatch cut = r.Batch();
  cut.records.resize(cut.records.size() - 2);
  ReplayResult out = ReplayTensorMemory(cut);
  CHECK(out.events.empty());
  CHECK(out.problem == "not recorded: the records end early");
  TensorMemoryBatch other = r.Batch();
  other.records[0] = 99;
  CHECK(ReplayTensorMemory(other).problem.find("another version") != std::string::npos);
  CHECK(ReplayTensorMemory(TensorMemoryBatch{}).problem == "not recorded: the records end early");
}

TEST_CASE("a window takes its own events and waits for a hand-over only while one is due", "[tensor_memory]") {
  TensorMemory memory;
  Records r;
  r.Segment(0x100000, 2 * kMiB, true, {{0x100000, 2 * kMiB, kBlockFree}});
  r.Entry(kActionAlloc, 1, 0x100000, 512, 0);
  r.Entry(kActionAlloc, 5, 0x100200, 512, 0);
  r.Entry(kActionAlloc, 9, 0x100400, 512, 0);
  r.End(1536, 2 * kMiB);
  memory.Expect();
  memory.Deliver(r.Batch("t.py:3 in step"));
  Window w;
  memory.Take(2'000, 6'000, 0, &w);
  REQUIRE(w.tensor_memory.size() == 1);
  CHECK(w.tensor_memory[0].ts_ns == 5'000);
  CHECK(w.tensor_memory[0].total_allocated == 1024);
  CHECK(w.meta.tensor_memory == "on");
  CHECK(w.tensor_memory[0].site_id != 0);
  // The event after the window's end is the next window's.
  Window next;
  memory.Take(6'000, 10'000, 0, &next);
  REQUIRE(next.tensor_memory.size() == 1);
  CHECK(next.tensor_memory[0].ts_ns == 9'000);
  // Due and never handed over: the window says so after its deadline.
  memory.Expect();
  Window late;
  uint64_t before = NowNs();
  memory.Take(0, 1, NowNs() + 20'000'000, &late);
  CHECK(NowNs() - before >= 20'000'000);
  CHECK(late.meta.tensor_memory.find("in time") != std::string::npos);
  // Exiting: a window waiting for its hand-over is written without it.
  memory.Expect();
  memory.ProcessExiting();
  Window exiting;
  before = NowNs();
  memory.Take(0, 1, NowNs() + 5'000'000'000, &exiting);
  CHECK(NowNs() - before < 1'000'000'000);
  CHECK(exiting.meta.tensor_memory.find("exited") != std::string::npos);
  memory.NotComing("");
  Window none;
  memory.Take(0, 1, NowNs() + 5'000'000'000, &none);  // nothing due: no wait
  CHECK(none.tensor_memory.empty());
}

}  // namespace prof::python
