// Python stacks in the exporters: python_function slices (nesting, breaks at
// steps and at calls without a stack, Kineto's args), call sites (user code
// vs standard library and site-packages), the call-site table.
#include "exporters/common/python_sites.h"

#include <catch2/catch.hpp>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/validate.h"

namespace prof {
namespace {

// The window-builder tests' usual names, in each file that uses them.
using nlohmann::json;
using testing::Events;
using testing::kPid;
using testing::TraceJson;
using testing::WindowBuilder;

// Frames (file, function, line) and stacks (innermost first) set on a built window.
struct PyBuilder {
  Window& w;
  uint32_t Str(const std::string& s) {
    w.strings.push_back(s);
    return static_cast<uint32_t>(w.strings.size() - 1);
  }
  uint32_t Frame(const std::string& file, const std::string& fn, int line) {
    if (w.python.frames.empty()) w.python.frames.resize(1);
    w.python.frames.push_back({Str(file), Str(fn), line, 0});
    return static_cast<uint32_t>(w.python.frames.size() - 1);
  }
  uint32_t Stack(std::vector<uint32_t> frames) {
    if (w.python.stacks.empty()) w.python.stacks.resize(2);
    w.python.stacks.push_back(std::move(frames));
    return static_cast<uint32_t>(w.python.stacks.size() - 1);
  }
};

constexpr uint32_t kOtherTid = kPid + 5;

// Step 1 [0, 100 µs), step 2 [100, 200 µs) after the time base. Main thread: two calls under
// train.py:57 in step, one under train.py:58, then in step 2 the first stack
// again; a call with no stack between. Another thread: no Python frames.
Window StackWindow() {
  constexpr uint64_t t0 = 1'000'000;  // the time base: timestamps in the trace are µs after it
  WindowBuilder b;
  b.Step(1, t0, t0 + 100'000);
  b.Step(2, t0 + 100'000, t0 + 200'000);
  b.Call(ApiId::cudaMalloc, t0 + 10'000, t0 + 12'000, 1);
  b.Call(ApiId::cudaFree, t0 + 14'000, t0 + 15'000, 2);
  b.Call(ApiId::cudaStreamSynchronize, t0 + 20'000, t0 + 30'000, 3);
  b.Call(ApiId::cudaMemsetAsync, t0 + 32'000, t0 + 33'000, 4);  // no stack
  b.Call(ApiId::cudaMalloc, t0 + 110'000, t0 + 112'000, 5);
  b.Call(ApiId::cudaDeviceSynchronize, t0 + 40'000, t0 + 50'000, 6, kOtherTid);
  Window w = b.Build();
  PyBuilder p{w};
  w.python.status = "on (CPython 3.11.2)";
  uint32_t main_f = p.Frame("/job/train.py", "main", 90);
  uint32_t step57 = p.Frame("/job/train.py", "train_step", 57);
  uint32_t step58 = p.Frame("/job/train.py", "train_step", 58);
  uint32_t torch = p.Frame("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "_call_impl", 1501);
  uint32_t a = p.Stack({torch, step57, main_f});
  uint32_t c = p.Stack({step58, main_f});
  for (HostEvent& e : w.host_events) {
    if (e.correlation_id == 1 || e.correlation_id == 2 || e.correlation_id == 5) e.stack_id = a;
    if (e.correlation_id == 3) e.stack_id = c;
    if (e.correlation_id == 6) e.stack_id = 1;
  }
  return w;
}

TEST_CASE("python_function slices span the calls under each frame and break at steps and stackless calls", "[python]") {
  json t = TraceJson(StackWindow());
  auto r = tool::ValidateTrace(t);
  INFO((r.errors.empty() ? "" : r.errors[0]));
  CHECK(r.ok());
  std::vector<json> py = Events(t, "X", "python_function");
  std::vector<std::tuple<std::string, double, double>> got;
  for (const json& e : py) got.emplace_back(e["name"], e["ts"].get<double>(), e["dur"].get<double>());
  std::sort(got.begin(), got.end(), [](const auto& x, const auto& y) {
    return std::get<1>(x) != std::get<1>(y) ? std::get<1>(x) < std::get<1>(y) : std::get<2>(x) > std::get<2>(y);
  });
  const std::string mod = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl";
  std::vector<std::tuple<std::string, double, double>> want = {
      {"/job/train.py(90): main", 10, 20},        // 10 -> 30 µs: the calls of both stacks
      {"/job/train.py(57): train_step", 10, 5},  // malloc + free
      {mod, 10, 5},
      {"/job/train.py(58): train_step", 20, 10},
      {"/job/train.py(90): main", 110, 2},  // step 2: new slices
      {"/job/train.py(57): train_step", 110, 2},
      {mod, 110, 2},
  };
  CHECK(got == want);
  // Kineto's args: Python id, and Python parent id (null at the top).
  json top = py[0];
  for (const json& e : py) {
    if (e["name"] == "/job/train.py(90): main") CHECK(e["args"]["Python parent id"].is_null());
    if (e["name"] == "/job/train.py(58): train_step" ) {
      bool found = false;
      for (const json& p : py) found |= p["args"]["Python id"] == e["args"]["Python parent id"] &&
                                         p["name"] == "/job/train.py(90): main";
      CHECK(found);
    }
  }
  // The thread without Python frames has no slices, and the header says so.
  for (const json& e : py) CHECK(e["tid"] == kPid);
  CHECK(t["libprof"]["python"]["threads_without_python_frames"] == json::array({kOtherTid}));
  CHECK(t["libprof"]["python"]["stacks"] == "on (CPython 3.11.2)");
}

TEST_CASE("a window without Python stacks writes neither slices nor the python block", "[python]") {
  WindowBuilder b;
  b.Step(1, 0, 100'000);
  b.Call(ApiId::cudaMalloc, 10'000, 12'000, 1);
  json t = TraceJson(b.Build());
  CHECK(Events(t, "X", "python_function").empty());
  CHECK_FALSE(t["libprof"].contains("python"));
  CHECK(RenderSummary(b.Build()).find("Python call site") == std::string::npos);
}

TEST_CASE("the call site is the innermost frame of the user's code", "[python]") {
  CHECK(IsUserFile("/job/train.py", ""));
  CHECK_FALSE(IsUserFile("/usr/lib/python3.11/threading.py", ""));
  CHECK_FALSE(IsUserFile("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", ""));
  CHECK_FALSE(IsUserFile("/usr/lib/python3/dist-packages/numpy/core/numeric.py", ""));
  CHECK_FALSE(IsUserFile("<frozen importlib._bootstrap>", ""));
  CHECK(IsUserFile("/usr/lib/python3.11/mylib/x.py", "/usr/lib/python3.11/mylib/,/other"));
  CHECK(IsUserFile("/site/lib/python3.12/site-packages/mine/model.py", "/site/lib/python3.12/site-packages/mine"));
  Window w = StackWindow();
  uint32_t a = w.host_events[0].stack_id;
  CHECK(CallSiteText(w, CallSiteFrame(w, a, "")) == "train.py:57 in train_step");
  CHECK(CallSiteText(w, CallSiteFrame(w, a, "/venv/")) == "module.py:1501 in _call_impl");
  CHECK(CallSiteFrame(w, 1, "") == 0);
}

TEST_CASE("the summary charges calls to their call sites and findings name them", "[python]") {
  Window w = StackWindow();
  Summary s = ComputeSummary(w);
  std::map<std::string, CallSiteRow> rows;
  for (const CallSiteRow& r : s.call_sites) rows[r.site] = r;
  REQUIRE(rows.count("train.py:57 in train_step"));
  CHECK(rows["train.py:57 in train_step"].allocs == 3);
  CHECK(rows["train.py:58 in train_step"].syncs == 1);
  CHECK(rows["(no Python frames)"].calls == 2);  // the stackless call and the other thread's sync
  std::string text = RenderSummary(s);
  CHECK(text.find("== GPU time by Python call site") != std::string::npos);
  bool named = false;
  for (const Finding& f : s.findings) {
    if (f.id == "sync-in-step") named = f.evidence.find("top call sites: train.py:58 in train_step x1") != std::string::npos;
  }
  CHECK(named);
}

TEST_CASE("calls charged to a waiting thread's stack are marked via it in slices, call sites and findings", "[python]") {
  // The other thread's sync (correlation 6) is charged to the main thread's
  // stack at train.py:58, as if the main thread waited there.
  Window w = StackWindow();
  uint32_t own = 0;
  for (const HostEvent& e : w.host_events) {
    if (e.correlation_id == 3) own = e.stack_id;
  }
  w.python.stacks.push_back(w.python.stacks[own]);
  auto via_stack = static_cast<uint32_t>(w.python.stacks.size() - 1);
  w.python.via.assign(w.python.stacks.size(), 0);
  w.python.via[via_stack] = kPid;
  for (HostEvent& e : w.host_events) {
    if (e.correlation_id == 6) e.stack_id = via_stack;
  }
  json t = TraceJson(w);
  auto r = tool::ValidateTrace(t);
  INFO((r.errors.empty() ? "" : r.errors[0]));
  CHECK(r.ok());
  std::string via = " (via thread " + std::to_string(kPid) + ")";
  std::vector<std::string> other;
  for (const json& e : Events(t, "X", "python_function")) {
    if (e["tid"] == kOtherTid) {
      other.push_back(e["name"]);
      CHECK(e["args"]["via thread"] == kPid);
    } else {
      CHECK(e["args"].count("via thread") == 0);
      CHECK(e["name"].get<std::string>().find("(via thread") == std::string::npos);
    }
  }
  CHECK(other == std::vector<std::string>{"/job/train.py(90): main" + via, "/job/train.py(58): train_step" + via});
  CHECK(t["libprof"]["python"]["threads_via"] == json::parse("[[" + std::to_string(kOtherTid) + "," +
                                                              std::to_string(kPid) + ",1]]"));
  CHECK(t["libprof"]["python"]["threads_without_python_frames"].empty());
  Summary s = ComputeSummary(w);
  std::map<std::string, CallSiteRow> rows;
  for (const CallSiteRow& row : s.call_sites) rows[row.site] = row;
  REQUIRE(rows.count("train.py:58 in train_step" + via));
  CHECK(rows["train.py:58 in train_step" + via].syncs == 1);
  CHECK(rows["train.py:58 in train_step"].syncs == 1);  // the main thread's own call: a row of its own
  CHECK(rows["(no Python frames)"].calls == 1);         // only the stackless call is left there
  bool named = false;
  for (const Finding& f : s.findings) {
    if (f.id == "sync-in-step") named = f.evidence.find("train.py:58 in train_step" + via + " x1") != std::string::npos;
  }
  CHECK(named);
}

}  // namespace
}  // namespace prof
