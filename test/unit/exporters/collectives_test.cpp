#include "exporters/common/collectives.h"

#include <catch2/catch.hpp>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/trace_to_window.h"

namespace prof {
namespace {

// The window-builder tests' usual names, in each file that uses them.
using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

constexpr const char* kAllReduceKernel = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE";

CollectiveCall Call(CollFunc func, uint64_t start_ns, uint64_t end_ns, uint64_t count, uint32_t correlation,
                    uint64_t seq) {
  CollectiveCall c{};
  c.start_ns = start_ns, c.end_ns = end_ns, c.comm_id = 0xabcdef, c.count = count, c.seq = seq, c.tid = kPid;
  c.correlation_id = correlation, c.root_or_peer = -1, c.func = static_cast<uint8_t>(func);
  c.datatype = 7;  // ncclFloat32
  c.source = static_cast<uint8_t>(CollSource::kWrapper);
  return c;
}

// Rank 3 of 4: a compute kernel [1.0, 1.1) ms and an all-reduce kernel
// [1.05, 1.25) ms of 1 MiB floats, in a step [1, 1.4) ms.
constexpr uint64_t kStreamHandle = 0x55d0c0ffee40;  // the cudaStream_t the call was given

WindowBuilder Job() {
  WindowBuilder b;
  b.Step(5, 1'000'000, 1'400'000);
  b.Launch("_Z6kernelPf", 1'000'000, 5'000, 1'000'000, 1'100'000, /*correlation=*/11);
  b.Kernel(kAllReduceKernel, 1'050'000, 1'250'000, /*correlation=*/12, /*stream=*/14);
  b.window().collectives.push_back(Call(CollFunc::kAllReduce, 1'010'000, 1'020'000, 262144, 12, 41));
  b.window().collectives.back().stream = kStreamHandle;
  b.window().communicators.push_back(CommInfo{0xabcdef, 3, 4, 0, -1, 1});
  b.window().meta.nccl_version = 22809;
  return b;
}

TEST_CASE("NCCL kernels of every version count as communication, others do not", "[collectives]") {
  CHECK(IsCommunicationKernelName(kAllReduceKernel));
  CHECK(IsCommunicationKernelName("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  CHECK(IsCommunicationKernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"));
  CHECK(IsCommunicationKernelName("ncclAllReduceRingLLKernel_sum_f32(ncclColl)"));
  CHECK_FALSE(IsCommunicationKernelName("_Z6kernelPf"));
  CHECK_FALSE(IsCommunicationKernelName("my_nccl_helper(float*)"));
}

TEST_CASE("sizes follow PyTorch's element counts and nccl-tests' bytes and factors", "[collectives]") {
  CollectiveSizes ag = SizesOf(Call(CollFunc::kAllGather, 0, 1, 100, 0, 1), 4);
  CHECK(ag.in_nelems == 100);
  CHECK(ag.out_nelems == 400);
  CHECK(ag.bytes == 1600);
  CHECK(ag.factor == Approx(0.75));
  CollectiveSizes rs = SizesOf(Call(CollFunc::kReduceScatter, 0, 1, 100, 0, 1), 4);
  CHECK(rs.in_nelems == 400);
  CHECK(rs.out_nelems == 100);
  CHECK(rs.bytes == 1600);
  CollectiveSizes ar = SizesOf(Call(CollFunc::kAllReduce, 0, 1, 100, 0, 1), 4);
  CHECK(ar.bytes == 400);
  CHECK(ar.factor == Approx(1.5));
  CollectiveSizes a2a = SizesOf(Call(CollFunc::kAlltoAll, 0, 1, 100, 0, 1), 4);
  CHECK(a2a.in_nelems == 400);
  CHECK(a2a.bytes == 1600);
  CHECK(SizesOf(Call(CollFunc::kSend, 0, 1, 100, 0, 1), 4).factor == 1.0);
}

TEST_CASE("the kernel and the call carry Kineto's collective args, and distributedInfo names the rank", "[collectives]") {
  std::string text;
  json t = TraceJson(Job().Build(), &text);
  // HTA's rank pattern needs whitespace after the colon.
  CHECK(text.find("\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 4") != std::string::npos);
  CHECK(t["distributedInfo"]["nccl_version"] == "2.28.9");
  CHECK(t["distributedInfo"]["pg_config"][0]["pg_name"] == "0x0000000000abcdef");
  CHECK(t["distributedInfo"]["pg_config"][0]["ranks"] == json::array({0, 1, 2, 3}));
  json kernel;
  for (const json& e : Events(t, "X", "kernel")) {
    if (e["name"].get<std::string>().rfind("ncclDevKernel", 0) == 0) kernel = e;
  }
  REQUIRE(kernel.is_object());
  const json& a = kernel["args"];
  CHECK(a["Collective name"] == "allreduce");
  CHECK(a["In msg nelems"] == 262144);
  CHECK(a["Out msg nelems"] == 262144);
  CHECK(a["Group size"] == 4);
  CHECK(a["dtype"] == "Float");
  CHECK(a["Process Group Name"] == "0x0000000000abcdef");
  CHECK(a["Process Group Ranks"] == "[0, 1, 2, 3]");
  CHECK(a["Seq"] == 41);
  std::vector<json> calls;
  for (const json& e : Events(t, "X", "cpu_op")) calls.push_back(e);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0]["name"] == "ncclAllReduce");
  CHECK(calls[0]["args"]["Rank"] == 3);
  CHECK(calls[0]["args"]["Seq"] == 41);
  // The call's cudaStream_t is not under "stream", Kineto's key for a GPU
  // event's stream id: HTA takes every event carrying it for GPU work, so it
  // dropped the call, and with it (by correlation) every NCCL kernel.
  CHECK(calls[0]["args"]["stream handle"] == kStreamHandle);
  CHECK_FALSE(calls[0]["args"].contains("stream"));
  for (const json& e : t["traceEvents"]) {
    if (e.value("cat", "").rfind("gpu_", 0) != 0 && e["cat"] != "kernel" && e["cat"] != "cuda_sync" &&
        e.contains("args")) {
      CHECK_FALSE(e["args"].contains("stream"));
    }
  }
  // `prof` reads the handle back, and from traces that wrote it as "stream".
  Window back;
  std::string error;
  REQUIRE(tool::TraceToWindow(t, &back, &error));
  REQUIRE(back.collectives.size() == 1);
  CHECK(back.collectives[0].stream == kStreamHandle);
  for (json& e : t["traceEvents"]) {
    if (e.value("cat", "") == "cpu_op") {
      e["args"]["stream"] = e["args"]["stream handle"];
      e["args"].erase("stream handle");
    }
  }
  REQUIRE(tool::TraceToWindow(t, &back, &error));
  REQUIRE(back.collectives.size() == 1);
  CHECK(back.collectives[0].stream == kStreamHandle);
  // The compute kernel has none.
  for (const json& e : Events(t, "X", "kernel")) {
    if (e["name"] == "kernel(float*)") CHECK_FALSE(e["args"].contains("Collective name"));
  }
}

TEST_CASE("GPU time splits into compute, communication, overlap and idle, and busy means computing", "[collectives]") {
  Summary s = ComputeSummary(Job().Build());
  // compute [1.0, 1.1), comm [1.05, 1.25), span [1.0, 1.4) ms.
  CHECK(s.gpu_compute_ns == 50'000);
  CHECK(s.gpu_overlap_ns == 50'000);
  CHECK(s.gpu_comm_ns == 150'000);
  CHECK(s.gpu_idle_ns == 150'000);
  CHECK(s.gpu_busy_percent == Approx(62.5));
  CHECK(s.compute_busy_percent == Approx(25.0));
  REQUIRE(s.collectives.size() == 1);
  const CollectiveRow& r = s.collectives[0];
  CHECK(r.name == "AllReduce");
  CHECK(r.bytes == 1048576);
  CHECK(r.ranks == 4);
  CHECK(r.count == 1);
  CHECK(r.total_ns == 200'000);
  CHECK(r.algbw_gbps == Approx(1048576.0 / 200'000));
  CHECK(r.busbw_gbps == Approx(1048576.0 / 200'000 * 1.5));
  bool communication = false;
  for (const Finding& f : s.findings) {
    communication = communication || f.id == "communication";
    CHECK(f.id != "compute-bound");
  }
  CHECK(communication);
  std::string text = RenderSummary(s);
  CHECK(text.find("GPU time: compute 12.5%, communication 37.5%, overlapped 12.5%, idle 37.5%") != std::string::npos);
  CHECK(text.find("== NCCL collectives") != std::string::npos);
}

}  // namespace
}  // namespace prof
