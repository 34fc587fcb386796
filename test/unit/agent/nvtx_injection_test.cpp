// NVTX injection as the NVTX library drives it: InitializeInjectionNvtx2
// fills a function table, and the host calls the slots. Checks the names
// and times ranges are recorded with, including the per-thread intern cache
// (a reused buffer must not keep its old name) and ranges pushed while
// nothing records (not in a window that opens before they end).
#include <nvtx3/nvToolsExt.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/hot_state.h"
#include "base/strings.h"
#include "agent/runtime/runtime.h"
#include "fakes.h"

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

namespace prof {
namespace {

// The core and core2 (domain) module tables the injection fills.
NvtxFunctionPointer g_slots[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer* g_table[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer g_slots2[NVTX_CBID_CORE2_SIZE];
NvtxFunctionPointer* g_table2[NVTX_CBID_CORE2_SIZE];

int NVTX_API GetModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* out, unsigned int* size) {
  if (module == NVTX_CB_MODULE_CORE2) {
    for (unsigned i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) g_table2[i] = &g_slots2[i];
    *out = g_table2;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  if (module != NVTX_CB_MODULE_CORE) return 0;
  for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_table[i] = &g_slots[i];
  *out = g_table;
  *size = NVTX_CBID_CORE_SIZE;
  return 1;
}

const void* NVTX_API GetExportTable(uint32_t id) {
  static NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks), &GetModuleFunctionTable};
  return id == NVTX_ETID_CALLBACKS ? &callbacks : nullptr;
}

using PushA = int(NVTX_API*)(const char*);
using Pop = int(NVTX_API*)();

struct Nvtx {
  Nvtx() {
    REQUIRE(InitializeInjectionNvtx2(&GetExportTable) == 1);
    push = reinterpret_cast<PushA>(g_slots[NVTX_CBID_CORE_RangePushA]);
    pop = reinterpret_cast<Pop>(g_slots[NVTX_CBID_CORE_RangePop]);
    rt.config.activities = kActNvtx;
    ClearHotBits(~0u);
    InstallRuntime(&rt);
  }
  ~Nvtx() {
    InstallRuntime(nullptr);
    ClearHotBits(~0u);
  }
  std::vector<std::string> Names(uint64_t begin_ns, uint64_t end_ns) {
    std::vector<std::string> out;
    for (const NvtxRange& r : rt.nvtx.Take(begin_ns, end_ns, &dropped)) out.push_back(Strings().Get(r.name_id));
    return out;
  }
  PushA push = nullptr;
  Pop pop = nullptr;
  Runtime rt;
  uint64_t dropped = 0;
};

TEST_CASE("a buffer reused for another NVTX name records the new name", "[nvtx]") {
  Nvtx nvtx;
  SetHotBits(kHotRecording);
  uint64_t begin = NowNs();
  char buffer[32];
  std::strcpy(buffer, "forward");
  nvtx.push(buffer);
  nvtx.pop();
  std::strcpy(buffer, "backward");  // same address, other text
  nvtx.push(buffer);
  nvtx.pop();
  nvtx.push(buffer);  // same address, same text: the cached id
  nvtx.pop();
  CHECK(nvtx.Names(begin, NowNs() + 1) == std::vector<std::string>{"forward", "backward", "backward"});
}

TEST_CASE("a range pushed while nothing records is not in the window its pop falls in", "[nvtx]") {
  Nvtx nvtx;
  nvtx.push("before_window");  // waiting: no clock read, not recorded
  SetHotBits(kHotRecording);
  uint64_t begin = NowNs();
  nvtx.push("inside_window");
  nvtx.pop();
  nvtx.pop();  // ends before_window inside the window
  CHECK(nvtx.Names(begin, NowNs() + 1) == std::vector<std::string>{"inside_window"});
}

TEST_CASE("push and pop return the same levels while idle as while recording, across the switch", "[nvtx]") {
  Nvtx nvtx;
  CHECK(nvtx.pop() == -1);  // nothing pushed
  CHECK(nvtx.push("outer") == 0);  // idle: only the level is counted
  SetHotBits(kHotRecording);
  uint64_t begin = NowNs();
  CHECK(nvtx.push("middle") == 1);
  ClearHotBits(kHotRecording);
  CHECK(nvtx.push("inner") == 2);
  CHECK(nvtx.pop() == 2);
  SetHotBits(kHotRecording);
  CHECK(nvtx.pop() == 1);  // middle: pushed while recording, ends while recording
  ClearHotBits(kHotRecording);
  CHECK(nvtx.pop() == 0);
  CHECK(nvtx.pop() == -1);
  CHECK(nvtx.Names(begin, NowNs() + 1) == std::vector<std::string>{"middle"});
}

}  // namespace
}  // namespace prof

namespace prof {
namespace {

TEST_CASE("range names are not kept while nothing records or matches them", "[nvtx]") {
  Nvtx nvtx;
  size_t before = Strings().name_bytes();
  for (int i = 0; i < 20000; ++i) {
    std::string name = "aten::op_seq_" + std::to_string(i);
    nvtx.push(name.c_str());
    nvtx.pop();
  }
  CHECK(Strings().name_bytes() == before);
}

TEST_CASE("a name cached before the table released it is interned again", "[nvtx]") {
  Nvtx nvtx;
  SetHotBits(kHotRecording);
  static const char kName[] = "cached_name";
  nvtx.push(kName);
  nvtx.pop();
  // Two windows sealed: every name last used before them is released.
  for (int w = 0; w < 2; ++w) Strings().WindowSealed(Strings().BeginWindow());
  uint64_t begin = NowNs();
  nvtx.push(kName);  // same address and text: the thread's cache must not return the released id
  nvtx.pop();
  CHECK(nvtx.Names(begin, NowNs() + 1) == std::vector<std::string>{"cached_name"});
}

using DomainCreateA = nvtxDomainHandle_t(NVTX_API*)(const char*);
using DomainPushEx = int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*);
using DomainPop = int(NVTX_API*)(nvtxDomainHandle_t);
using StartA = nvtxRangeId_t(NVTX_API*)(const char*);
using End = void(NVTX_API*)(nvtxRangeId_t);

nvtxEventAttributes_t Message(const char* text) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  return a;
}

TEST_CASE("a range in a domain the program created is named domain@name, the default domain's bare", "[nvtx]") {
  Nvtx nvtx;
  auto create = reinterpret_cast<DomainCreateA>(g_slots2[NVTX_CBID_CORE2_DomainCreateA]);
  auto push = reinterpret_cast<DomainPushEx>(g_slots2[NVTX_CBID_CORE2_DomainRangePushEx]);
  auto pop = reinterpret_cast<DomainPop>(g_slots2[NVTX_CBID_CORE2_DomainRangePop]);
  REQUIRE(create != nullptr);
  nvtxDomainHandle_t train = create("train");
  CHECK(train != nullptr);
  SetHotBits(kHotRecording);
  uint64_t begin = NowNs();
  nvtxEventAttributes_t step = Message("step");
  push(train, &step);
  pop(train);
  push(nullptr, &step);  // the default domain
  pop(nullptr);
  push(train, &step);  // cached: the same name again
  pop(train);
  CHECK(nvtx.Names(begin, NowNs() + 1) == std::vector<std::string>{"train@step", "step", "train@step"});
}

TEST_CASE("PROF_RANGE=nvtx: a matching push opens a window and its own pop closes it, nested ones do not", "[nvtx]") {
  Nvtx nvtx;
  nvtx.rt.config.range_kind = RangeKind::kNvtx;
  nvtx.rt.config.range_pattern = "^region$";
  nvtx.rt.config.step_source = StepSource::kManual;
  nvtx.rt.config.repeat = 0;
  nvtx.rt.range_markers.Configure("^region$", /*demangle=*/false);
  testing::FakeCollector collector;
  testing::FakeWriter writer;
  nvtx.rt.session = std::make_unique<Session>(nvtx.rt.config, &collector, &writer, &nvtx.rt.allocs, WindowMeta(), NowNs());
  SetHotBits(kHotNvtxNames);  // as agent_start sets it for PROF_RANGE=nvtx
  auto start = reinterpret_cast<StartA>(g_slots[NVTX_CBID_CORE_RangeStartA]);
  auto end = reinterpret_cast<End>(g_slots[NVTX_CBID_CORE_RangeEnd]);
  nvtx.push("other");
  nvtx.pop();
  CHECK(writer.windows.empty());
  nvtx.push("region");
  CHECK((LoadHotBits() & kHotRecording) != 0);
  nvtx.push("region");  // nested: part of the window
  nvtx.pop();
  CHECK((LoadHotBits() & kHotRecording) != 0);
  nvtx.pop();
  REQUIRE(writer.windows.size() == 1);
  CHECK((LoadHotBits() & kHotRecording) == 0);
  // Start/end ranges pair by id, also when another one ends first.
  nvtxRangeId_t a = start("region");
  nvtxRangeId_t b = start("region");
  end(b);
  CHECK(writer.windows.size() == 1);
  end(a);
  REQUIRE(writer.windows.size() == 2);
  CHECK(writer.windows[1].meta.range_description == "NVTX `region` range 2");
  nvtx.rt.session.reset();
}

}  // namespace
}  // namespace prof
