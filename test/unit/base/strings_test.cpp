// The string table's two kinds of id (base/strings.h): permanent names stay,
// NVTX range names live only while a window may need them, within a budget,
// and a sealed window keeps the text of every name it recorded.
#include "base/strings.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace prof {
namespace {

std::string Name(int i) { return "aten::op_seq_" + std::to_string(i); }

TEST_CASE("a range name is interned once and read back while it is held", "[strings]") {
  StringTable t;
  uint32_t a = t.InternName("forward");
  CHECK(a >= kTransientBase);
  CHECK(t.InternName("forward") == a);
  CHECK(t.Get(a) == "forward");
  CHECK(t.Intern("kernel") < kTransientBase);  // permanent ids are apart
}

TEST_CASE("names past the budget are dropped and counted against the window that was open", "[strings]") {
  StringTable t;
  t.SetNameBudget(100 * (StringTable::kEntryOverhead + 20));
  uint32_t gen = t.BeginWindow();
  int dropped_ids = 0;
  for (int i = 0; i < 1000; ++i) dropped_ids += t.InternName(Name(i)) == kDroppedNameId;
  CHECK(dropped_ids > 850);
  CHECK(t.name_bytes() <= 100 * (StringTable::kEntryOverhead + 20));
  CHECK(t.Get(kDroppedNameId) == kDroppedNameText);
  CHECK(t.WindowSealed(gen) == static_cast<uint64_t>(dropped_ids));
}

TEST_CASE("with no window open a full table starts over instead of dropping", "[strings]") {
  StringTable t;
  t.SetNameBudget(100 * (StringTable::kEntryOverhead + 20));
  for (int i = 0; i < 100000; ++i) REQUIRE(t.InternName(Name(i)) != kDroppedNameId);
  CHECK(t.name_bytes() <= 100 * (StringTable::kEntryOverhead + 20));
}

TEST_CASE("names used between windows make room for the next window's names", "[strings]") {
  StringTable t;
  t.SetNameBudget(100 * (StringTable::kEntryOverhead + 20));
  for (int i = 0; i < 95; ++i) t.InternName(Name(i));  // a step source matching names while waiting
  uint32_t gen = t.BeginWindow();
  for (int i = 0; i < 90; ++i) CHECK(t.InternName(Name(1000 + i)) != kDroppedNameId);
  CHECK(t.WindowSealed(gen) == 0);
}

TEST_CASE("a sealed window keeps its names while the table forgets them", "[strings]") {
  StringTable t;
  uint32_t gen1 = t.BeginWindow();
  std::vector<uint32_t> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(t.InternName(Name(i)));
  ids.push_back(ids[3]);  // a name used twice
  std::vector<uint32_t*> refs;
  for (uint32_t& id : ids) refs.push_back(&id);
  std::vector<std::string> strings = {""};
  t.TakeWindowNames(refs, &strings);
  for (int i = 0; i < 50; ++i) CHECK(strings.at(ids[i]) == Name(i));
  CHECK(ids[50] == ids[3]);
  CHECK(strings.size() == 51);
  uint32_t gen2 = t.BeginWindow();
  uint32_t next = t.InternName(Name(1000));  // the next window's name
  CHECK(t.WindowSealed(gen1) == 0);
  // Names last used in window 1 are kept until the window after it is sealed
  // (a thread may hold one across the boundary); the next window's stay.
  CHECK(t.Get(next) == Name(1000));
  size_t held = t.name_bytes();
  t.WindowSealed(gen2);
  CHECK(t.Get(next) == Name(1000));
  CHECK(t.name_bytes() < held);
  uint32_t gen3 = t.BeginWindow();
  t.WindowSealed(gen3);
  CHECK(t.name_bytes() == 0);
  CHECK(t.Get(next).empty());
}

TEST_CASE("names used window after window never grow the table", "[strings]") {
  StringTable t;
  size_t most = 0;
  for (int w = 0; w < 200; ++w) {
    uint32_t gen = t.BeginWindow();
    for (int i = 0; i < 500; ++i) t.InternName(Name(w * 500 + i));
    most = std::max(most, t.name_bytes());
    t.WindowSealed(gen);
  }
  // Two windows' worth at most, for 100,000 distinct names.
  CHECK(most <= 2 * 500 * (StringTable::kEntryOverhead + 20));
}

TEST_CASE("a released id is not handed out again for another name", "[strings]") {
  StringTable t;
  uint32_t gen1 = t.BeginWindow();
  uint32_t old_id = t.InternName("first");
  t.WindowSealed(gen1);
  uint32_t gen2 = t.BeginWindow();
  t.WindowSealed(gen2);
  REQUIRE(t.Get(old_id).empty());
  CHECK(t.InternName("second") != old_id);
  uint32_t again = t.InternName("first");
  CHECK(t.Get(again) == "first");
  CHECK(t.generation() != gen1);  // per-thread caches keyed on the generation re-intern
}

TEST_CASE("a pinned name survives every release", "[strings]") {
  StringTable t;
  t.SetNameBudget(10 * (StringTable::kEntryOverhead + 20));
  uint32_t marker = t.InternName("train_step");
  t.Pin(marker);
  for (int i = 0; i < 10000; ++i) t.InternName(Name(i));
  for (int w = 0; w < 3; ++w) t.WindowSealed(t.BeginWindow());
  CHECK(t.Get(marker) == "train_step");
  CHECK(t.InternName("train_step") == marker);
}

TEST_CASE("registered strings are permanent and have their own budget", "[strings]") {
  StringTable t;
  t.SetNameBudget(10 * (StringTable::kEntryOverhead + 20));
  uint32_t first = t.InternRegistered("registered_0");
  CHECK(first < kTransientBase);
  int dropped = 0;
  for (int i = 1; i < 100; ++i) dropped += t.InternRegistered("registered_" + std::to_string(i)) == kDroppedNameId;
  CHECK(dropped >= 89);
  for (int w = 0; w < 3; ++w) t.WindowSealed(t.BeginWindow());
  CHECK(t.Get(first) == "registered_0");
  CHECK(t.InternRegistered("registered_0") == first);
}

}  // namespace
}  // namespace prof
