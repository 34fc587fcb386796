#include "exporters/common/operators.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "exporters/summary/summary.h"
#include "exporters/trace/chrome_trace.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

constexpr uint32_t kAutogradTid = kPid + 7;

NvtxRange Op(WindowBuilder& b, const char* name, uint64_t start, uint64_t end, uint32_t tid, uint32_t depth,
             uint32_t op_id, int32_t seq, const char* shapes = nullptr) {
  NvtxRange r{start, end, b.Str(name), tid, depth};
  r.op_id = op_id;
  r.seq = seq;
  r.shapes_id = shapes != nullptr ? b.Str(shapes) : 0;
  b.window().nvtx_ranges.push_back(r);
  return r;
}

// aten::linear > aten::addmm launches a kernel (correlation 7); a plain NVTX
// range beside them; the backward of sequence number 4 on autograd's thread
// launches another (correlation 8); a launch outside every operator (9).
WindowBuilder Forward() {
  WindowBuilder b;
  b.Step(1, 1'000'000, 3'000'000);
  Op(b, "aten::linear", 1'100'000, 1'400'000, kPid, 0, 11, 4, "[[16, 64], [64, 64], [64]]");
  Op(b, "aten::addmm", 1'150'000, 1'350'000, kPid, 1, 12, -1, "[[64], [16, 64], [64, 64], [], []]");
  b.window().nvtx_ranges.push_back({1'050'000, 1'500'000, b.Str("my range"), kPid, 0});
  b.Launch("_Z5addmmv", 1'200'000, 10'000, 1'300'000, 1'400'000, /*correlation=*/7);
  Op(b, "AddmmBackward0", 2'000'000, 2'300'000, kAutogradTid, 0, 20, 4);
  Op(b, "Optimizer.step#AdamW.step", 2'400'000, 2'600'000, kPid, 0, 21, -1);
  b.Call(ApiId::cudaLaunchKernel, 2'100'000, 2'110'000, /*correlation=*/8, kAutogradTid);
  b.Kernel("_Z2mmv", 2'150'000, 2'250'000, 8, 7);
  b.Launch("_Z4lonev", 2'700'000, 10'000, 2'750'000, 2'800'000, /*correlation=*/9);
  return b;
}

TEST_CASE("a call belongs to the innermost operator around it on its thread") {
  WindowBuilder b = Forward();
  Window w = b.Build();
  WindowIndex index(w);
  OperatorIndex ops(w.nvtx_ranges);
  REQUIRE_FALSE(ops.empty());
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.Enclosing(kPid, 1'200'000))].op_id == 12);
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.Enclosing(kPid, 1'375'000))].op_id == 11);  // after addmm, in linear
  CHECK(ops.Enclosing(kPid, 1'060'000) == -1);           // only in the plain range
  CHECK(ops.Enclosing(kAutogradTid, 1'200'000) == -1);   // another thread
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.OfCorrelation(w, index, 7))].op_id == 12);
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.OfCorrelation(w, index, 8))].op_id == 20);
  CHECK(ops.OfCorrelation(w, index, 9) == -1);
  CHECK(ops.ForwardThread(4) == kPid);
  CHECK(ops.ForwardThread(5) == 0);
}

TEST_CASE("on no known thread, the operator entered last among each thread's innermost") {
  WindowBuilder b = Forward();
  Op(b, "aten::mm", 2'050'000, 2'060'000, kAutogradTid, 1, 22, -1);
  Op(b, "aten::add_", 2'040'000, 2'045'000, kPid, 0, 23, -1);
  Window w = b.Build();
  OperatorIndex ops(w.nvtx_ranges);
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.EnclosingOnAnyThread(2'055'000))].op_id == 22);
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.EnclosingOnAnyThread(2'042'000))].op_id == 23);  // entered after AddmmBackward0
  CHECK(w.nvtx_ranges[static_cast<size_t>(ops.EnclosingOnAnyThread(2'070'000))].op_id == 20);
  CHECK(ops.EnclosingOnAnyThread(1'900'000) == -1);
}

TEST_CASE("operators are Kineto's cpu_op events and their work carries their External id") {
  WindowBuilder b = Forward();
  json trace = TraceJson(b.Build());
  std::map<std::string, json> by_name;
  for (const json& e : Events(trace, "X")) by_name.emplace(e["name"].get<std::string>(), e);  // host slices come first
  const json& linear = by_name.at("aten::linear");
  CHECK(linear["cat"] == "cpu_op");
  CHECK(linear["args"]["External id"] == 11);
  CHECK(linear["args"]["Sequence number"] == 4);
  CHECK(linear["args"]["Fwd thread id"] == 0);
  CHECK(linear["args"]["Input Dims"] == json::parse("[[16, 64], [64, 64], [64]]"));
  const json& backward = by_name.at("AddmmBackward0");
  CHECK(backward["cat"] == "cpu_op");
  CHECK(backward["args"]["Fwd thread id"] == kPid);
  CHECK(by_name.at("Optimizer.step#AdamW.step")["cat"] == "user_annotation");
  CHECK(by_name.at("my range")["cat"] == "user_annotation");
  CHECK_FALSE(by_name.at("my range")["args"].contains("External id"));
  CHECK(by_name.at("addmm()")["args"]["External id"] == 12);
  CHECK(by_name.at("mm()")["args"]["External id"] == 20);
  CHECK_FALSE(by_name.at("lone()")["args"].contains("External id"));
  int launches_in_addmm = 0;
  for (const json& e : Events(trace, "X", "cuda_runtime")) {
    if (e["args"].value("External id", 0) == 12) ++launches_in_addmm;
  }
  CHECK(launches_in_addmm == 1);
  // Only the plain range is projected onto the GPU (Kineto's gpu_user_annotation).
  int projected = 0;
  for (const json& e : Events(trace, "X", "gpu_user_annotation")) {
    CHECK(e["name"] == "my range");
    ++projected;
  }
  CHECK(projected == 1);
}

TEST_CASE("an operator's module is the module call around it, a backward operator's that of its forward one") {
  WindowBuilder b;
  b.Step(1, 1'000'000, 3'000'000);
  b.window().nvtx_ranges.push_back({1'050'000, 1'500'000, b.Str("nn.Module: Net"), kPid, 0});
  b.window().nvtx_ranges.push_back({1'060'000, 1'450'000, b.Str("nn.Module: layers.0"), kPid, 1});
  Op(b, "aten::linear", 1'100'000, 1'400'000, kPid, 2, 11, 4);
  Op(b, "aten::addmm", 1'150'000, 1'350'000, kPid, 3, 12, -1);
  Op(b, "aten::relu", 1'460'000, 1'480'000, kPid, 1, 13, 5);  // in Net only
  Op(b, "aten::sum", 1'600'000, 1'650'000, kPid, 0, 14, 6);   // in no module
  // Autograd's wrapper around the node; after the node, its reduction of
  // the broadcast bias's gradient (aten::sum) in the wrapper alone.
  Op(b, "autograd::engine::evaluate_function: AddmmBackward0", 1'990'000, 2'350'000, kAutogradTid, 0, 23, -1);
  Op(b, "AddmmBackward0", 2'000'000, 2'300'000, kAutogradTid, 1, 20, 4);
  Op(b, "aten::mm", 2'050'000, 2'250'000, kAutogradTid, 2, 21, -1);
  Op(b, "aten::sum", 2'310'000, 2'340'000, kAutogradTid, 1, 24, -1);
  Op(b, "SumBackward0", 2'400'000, 2'450'000, kAutogradTid, 0, 22, 6);
  Window w = b.Build();
  OperatorIndex ops(w.nvtx_ranges, [&](uint32_t id) { return !ModulePath(w.String(id)).empty(); });
  REQUIRE(ops.has_modules());
  auto module_of = [&](uint32_t op_id) -> std::string {
    for (size_t i = 0; i < w.nvtx_ranges.size(); ++i) {
      if (w.nvtx_ranges[i].op_id != op_id) continue;
      int64_t m = ops.ModuleOf(static_cast<int64_t>(i));
      return m < 0 ? "-" : std::string(ModulePath(w.String(w.nvtx_ranges[static_cast<size_t>(m)].name_id)));
    }
    return "?";
  };
  CHECK(module_of(11) == "layers.0");
  CHECK(module_of(12) == "layers.0");
  CHECK(module_of(13) == "Net");
  CHECK(module_of(14) == "-");
  CHECK(module_of(20) == "layers.0");  // by its sequence number
  CHECK(module_of(21) == "layers.0");  // by its enclosing backward operator's
  CHECK(module_of(23) == "layers.0");  // autograd's wrapper: its node's
  CHECK(module_of(24) == "layers.0");  // the wrapper's own work after the node
  CHECK(module_of(22) == "-");         // its forward ran in no module
  int64_t layer = -1;
  for (size_t i = 0; i < w.nvtx_ranges.size(); ++i) {
    if (w.String(w.nvtx_ranges[i].name_id) == "nn.Module: layers.0") layer = static_cast<int64_t>(i);
  }
  REQUIRE(layer >= 0);
  CHECK(w.String(w.nvtx_ranges[static_cast<size_t>(ops.ModuleParent(layer))].name_id) == "nn.Module: Net");
}

TEST_CASE("the summary's module tree puts each module under its caller, the costlier callee first") {
  // Net calls layers.0 (which calls layers.0.attn), then head; each
  // operator launches one kernel: 300 ns in attn, 100 in layers.0 itself,
  // 500 in head, 50 in Net itself.
  WindowBuilder b;
  b.Step(1, 1'000'000, 3'000'000);
  auto module = [&](const char* path, uint64_t start, uint64_t end, uint32_t depth) {
    b.window().nvtx_ranges.push_back({start, end, b.Str(std::string("nn.Module: ") + path), kPid, depth});
  };
  module("Net", 1'000'000, 2'000'000, 0);
  module("layers.0", 1'100'000, 1'500'000, 1);
  module("layers.0.attn", 1'200'000, 1'400'000, 2);
  module("head", 1'600'000, 1'800'000, 1);
  Op(b, "aten::mm", 1'250'000, 1'350'000, kPid, 3, 1, 1);
  b.Launch("mm", 1'300'000, 1'000, 1'310'000, 1'310'300, 1);
  Op(b, "aten::add", 1'420'000, 1'480'000, kPid, 2, 2, 2);
  b.Launch("add", 1'450'000, 1'000, 1'460'000, 1'460'100, 2);
  Op(b, "aten::addmm", 1'650'000, 1'750'000, kPid, 2, 3, 3);
  b.Launch("addmm", 1'700'000, 1'000, 1'710'000, 1'710'500, 3);
  Op(b, "aten::sum", 1'850'000, 1'900'000, kPid, 1, 4, 4);
  b.Launch("sum", 1'870'000, 1'000, 1'880'000, 1'880'050, 4);
  Summary s = ComputeSummary(b.Build());
  REQUIRE(s.modules.size() == 4);
  auto row = [&](size_t i) {
    const ModuleRow& r = s.modules[i];
    return r.path + " " + std::to_string(r.depth) + " " + std::to_string(r.total_gpu_ns) + " " +
           std::to_string(r.self_gpu_ns);
  };
  CHECK(row(0) == "Net 0 950 50");
  CHECK(row(1) == "head 1 500 500");
  CHECK(row(2) == "layers.0 1 400 100");
  CHECK(row(3) == "layers.0.attn 2 300 300");
  std::string text = RenderSummary(s);
  CHECK(text.find("  Net\n") != std::string::npos);
  CHECK(text.find("    head\n") != std::string::npos);
  CHECK(text.find("      layers.0.attn\n") != std::string::npos);
}

TEST_CASE("a module call and an operator running across a step's start are drawn from it, inside the step") {
  // Each step starts at a launch inside the model's forward: the model's
  // call and the operator began before it (the first step's, before the
  // window; the second's, at the end of the first step).
  WindowBuilder b;
  b.Step(1, 1'000'000, 3'000'000);
  b.Step(2, 3'000'000, 5'000'000);
  b.window().nvtx_ranges.push_back({900'000, 2'000'000, b.Str("nn.Module: Net"), kPid, 0});
  Op(b, "aten::embedding", 950'000, 1'100'000, kPid, 1, 1, 1);
  b.Launch("gather", 1'000'000, 1'000, 1'010'000, 1'020'000, 1);
  b.window().nvtx_ranges.push_back({2'900'000, 3'500'000, b.Str("nn.Module: Net"), kPid, 0});
  Op(b, "aten::embedding", 2'950'000, 3'100'000, kPid, 1, 2, 2);
  b.Launch("gather", 3'000'000, 1'000, 3'010'000, 3'020'000, 2);
  json t = TraceJson(b.Build());
  auto one = [](const std::vector<json>& events, const std::string& name) {
    json found;
    for (const json& e : events) {
      if (e["name"] == name) {
        REQUIRE(found.is_null());
        found = e;
      }
    }
    REQUIRE_FALSE(found.is_null());
    return found;
  };
  for (int k : {1, 2}) {
    INFO("step " << k);
    json step = one(Events(t, "X", "user_annotation"), "ProfilerStep#" + std::to_string(k));
    CHECK(step["dur"].get<double>() == Approx(2'000.0));  // not cut short by the calls that began before it
    std::vector<json> nets, ops;
    for (const json& e : Events(t, "X", "user_annotation")) {
      if (e["name"] == "nn.Module: Net" && e["ts"] == step["ts"]) nets.push_back(e);
    }
    for (const json& e : Events(t, "X", "cpu_op")) {
      if (e["ts"] == step["ts"]) ops.push_back(e);
    }
    REQUIRE(nets.size() == 1);
    REQUIRE(ops.size() == 1);
    // Drawn from the step's start; the args keep the true start (100 µs
    // earlier; 50 µs for the operator) and duration.
    CHECK(nets[0]["args"]["clipped start"].get<double>() == Approx(100.0));
    CHECK(nets[0]["dur"].get<double>() == Approx(k == 1 ? 1'000.0 : 500.0));
    CHECK(nets[0]["args"]["unclipped dur"].get<double>() == Approx(k == 1 ? 1'100.0 : 600.0));
    CHECK(ops[0]["args"]["clipped start"].get<double>() == Approx(50.0));
  }
}

TEST_CASE("shapes that are not a list of integer lists are written as a string") {
  CHECK(IsShapeList("[[16, 64], [64, 64], []]"));
  CHECK(IsShapeList("[[]]"));
  CHECK(IsShapeList("[[-1, 3]]"));
  CHECK_FALSE(IsShapeList(""));
  CHECK_FALSE(IsShapeList("[[1 2]]"));
  CHECK_FALSE(IsShapeList("[[1], [2]] x"));
  CHECK_FALSE(IsShapeList("[[1]], \"a\": [[2]]"));
  CHECK_FALSE(IsShapeList("[[[1]]]"));
  CHECK_FALSE(IsShapeList("[1, 2]"));
  CHECK_FALSE(IsShapeList("[[1,]]"));
  WindowBuilder b;
  b.Step(1, 1'000'000, 2'000'000);
  Op(b, "aten::weird", 1'100'000, 1'200'000, kPid, 0, 3, -1, "[[1]], \"x\": [[2]]");
  json trace = TraceJson(b.Build());
  bool found = false;
  for (const json& e : Events(trace, "X")) {
    if (e.value("name", "") != "aten::weird") continue;
    found = true;
    CHECK(e["args"]["Input Dims"] == "[[1]], \"x\": [[2]]");
  }
  CHECK(found);
}

TEST_CASE("Kineto's category of an operator range") {
  CHECK(std::string(OperatorCategory("aten::mm", -1)) == "cpu_op");
  CHECK(std::string(OperatorCategory("MulBackward0", 3)) == "cpu_op");
  CHECK(std::string(OperatorCategory("MyFunctionBackward", -1)) == "cpu_op");
  CHECK(std::string(OperatorCategory("autograd::engine::evaluate_function: MulBackward0", -1)) == "cpu_op");
  CHECK(std::string(OperatorCategory("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", -1)) ==
        "user_annotation");
  CHECK(std::string(OperatorCategory("Optimizer.step#AdamW.step", -1)) == "user_annotation");
}

}  // namespace
}  // namespace prof
