// The NVTX range store: a window takes the ranges that started in it, in
// the order they were added; later windows' ranges stay for them, in order,
// however many windows are taken before theirs; earlier ones are dropped.
#include <catch2/catch.hpp>

#include "agent/session/nvtx_store.h"

namespace prof {
namespace {

// The ranges' names, in order.
std::vector<uint32_t> Names(const std::vector<NvtxRange>& v) {
  std::vector<uint32_t> out;
  for (const NvtxRange& r : v) out.push_back(r.name_id);
  return out;
}

NvtxRange Range(uint64_t start_ns, uint64_t end_ns, uint32_t name_id) {
  NvtxRange r{};
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.name_id = name_id;
  return r;
}

TEST_CASE("each window takes its ranges in order, later windows keep theirs", "[nvtx]") {
  NvtxStore store;
  // Added as they end: an outer range of window [10, 20) ends after ranges
  // of later windows; one range started before any window.
  store.Add(Range(5, 6, 1));
  store.Add(Range(11, 12, 2));
  store.Add(Range(21, 22, 3));
  store.Add(Range(31, 32, 4));
  store.Add(Range(10, 33, 5));
  store.Add(Range(23, 34, 6));
  store.Add(Range(35, 36, 7));
  uint64_t dropped = 0;
  CHECK(Names(store.Take(10, 20, &dropped)) == std::vector<uint32_t>{2, 5});
  CHECK(Names(store.Take(20, 30, &dropped)) == std::vector<uint32_t>{3, 6});
  CHECK(Names(store.Take(30, 40, &dropped)) == std::vector<uint32_t>{4, 7});
  CHECK(store.Take(0, 100, &dropped).empty());
  CHECK(dropped == 0);
}

TEST_CASE("PyTorch's operator and module call ranges go to the window their end is in", "[nvtx]") {
  // A window that starts inside a module call (its first step at a launch
  // in the model's first layer) holds that call, and its operators; the
  // call that starts in its last step and ends after it is the next one's.
  NvtxStore store;
  NvtxRange model = Range(8, 15, 1), next_model = Range(18, 25, 2), op = Range(9, 11, 3), plain = Range(9, 12, 4);
  model.module_call = next_model.module_call = true;
  op.op_id = 7;
  for (const NvtxRange& r : {op, plain, model, next_model}) store.Add(r);
  uint64_t dropped = 0;
  CHECK(Names(store.Take(10, 20, &dropped)) == std::vector<uint32_t>{3, 1});
  CHECK(Names(store.Take(20, 30, &dropped)) == std::vector<uint32_t>{2});
}

TEST_CASE("ranges past the capacity are counted once at the next take", "[nvtx]") {
  NvtxStore store(/*max_ranges=*/2);
  for (uint64_t i = 0; i < 4; ++i) store.Add(Range(10 + i, 11 + i, static_cast<uint32_t>(i)));
  uint64_t dropped = 0;
  CHECK(store.Take(0, 100, &dropped).size() == 2);
  CHECK(dropped == 2);
  CHECK(store.Take(0, 100, &dropped).empty());
  CHECK(dropped == 2);
}

TEST_CASE("a full store keeps the ranges of a window the writer has not taken, though a later one opened",
          "[nvtx]") {
  NvtxStore store(/*max_ranges=*/2);
  store.WindowOpens(10);
  store.Add(Range(11, 12, 1));
  store.Add(Range(12, 13, 2));  // full
  store.WindowOpens(20);        // the writer still seals [10, 20)
  store.Add(Range(21, 22, 3));  // no room: dropped, not window 10's ranges
  uint64_t dropped = 0;
  CHECK(Names(store.Take(10, 20, &dropped)) == std::vector<uint32_t>{1, 2});
  CHECK(dropped == 0);  // dropped while [20, 30) was the latest opened: that window's
  store.Add(Range(22, 23, 4));
  store.Add(Range(23, 24, 5));
  store.WindowOpens(30);        // [20, 30) taken next; then the ranges before 30 may go
  store.Add(Range(31, 32, 6));  // full: dropped while [20, 30) waits
  CHECK(Names(store.Take(20, 30, &dropped)) == std::vector<uint32_t>{4, 5});
  CHECK(dropped == 1);
  store.Add(Range(32, 33, 7));
  store.Add(Range(33, 34, 8));
  store.Add(Range(34, 35, 9));  // full again; every window taken but 30: nothing before 30 to free
  CHECK(Names(store.Take(30, 40, &dropped)) == std::vector<uint32_t>{7, 8});
  CHECK(dropped == 3);
}

TEST_CASE("drops of a window that opened before the writer ran its discard are that window's", "[nvtx]") {
  NvtxStore store(/*max_ranges=*/1);
  uint64_t dropped = 0;
  store.WindowOpens(10);
  store.Add(Range(11, 12, 1));
  store.Add(Range(12, 13, 2));  // dropped in window [10, 20)
  store.Take(10, 10, &dropped);  // the writer's discard for that opening, run late
  CHECK(dropped == 0);
  CHECK(store.Take(10, 20, &dropped).size() == 1);
  CHECK(dropped == 1);
}

}  // namespace
}  // namespace prof
