// The summary's "GPU time by compiled code" table (summary_compiled.cpp):
// kernels grouped by the torch.compile graph (Inductor's generated module)
// or the @triton.jit call site their launching call's Python stack went
// through, on a hand-built window shaped like torch_compile.py's stacks.
#include <catch2/catch.hpp>
#include <map>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"
#include "tools/prof/trace/trace_to_window.h"

namespace prof {
namespace {

using testing::kPid;
using testing::WindowBuilder;

constexpr uint32_t kAutograd = kPid + 7;
const std::string kPkg = "/venv/lib/python3.11/site-packages/";
const std::string kForwardGraph = "/tmp/torchinductor_u/3a/c3aznvb.py";
const std::string kBackwardGraph = "/tmp/torchinductor_u/mu/cmuf2sa.py";
const std::string kLossGraph = "/tmp/torchinductor_u/lm/clm6mgc.py";

struct Frames {
  WindowBuilder& b;
  Window& w;
  uint32_t operator()(const std::string& file, const std::string& fn, int line) {
    if (w.python.frames.empty()) w.python.frames.resize(1);
    w.python.frames.push_back({b.Str(file), b.Str(fn), line, 0});
    return static_cast<uint32_t>(w.python.frames.size() - 1);
  }
  uint32_t Stack(std::vector<uint32_t> innermost_first) {
    if (w.python.stacks.empty()) w.python.stacks.resize(2);
    w.python.stacks.push_back(std::move(innermost_first));
    return static_cast<uint32_t>(w.python.stacks.size() - 1);
  }
};

// The launches of one training step of a compiled model, each call c with
// kernel [1000 c, 1000 c + ns): the forward graph (two Triton kernels and a
// cuBLAS one), the loss's graph, the backward graph on autograd's thread
// (a kernel named as one of the forward's: each graph numbers its own), an
// uncompiled kernel, Inductor benchmarking with torch's own kernels (no
// generated module on the stack) and a @triton.jit kernel.
Window CompiledWindow() {
  WindowBuilder b;
  Window& w = b.window();
  w.python.status = "on (CPython 3.11.7)";
  Frames f{b, w};
  uint32_t module = f("/job/train.py", "<module>", 96);
  uint32_t step = f("/job/train.py", "main", 60);
  uint32_t loss_line = f("/job/train.py", "main", 61);
  uint32_t clip = f("/job/train.py", "main", 64);
  uint32_t ema_line = f("/job/train.py", "main", 85);
  uint32_t dynamo = f(kPkg + "torch/_dynamo/eval_frame.py", "_TorchDynamoContext.__call__.<locals>._fn", 1265);
  uint32_t forward = f("/job/model.py", "TinyLM.forward", 80);
  uint32_t loss_of = f("/job/train.py", "loss_of", 31);
  uint32_t disable = f(kPkg + "torch/_dynamo/eval_frame.py", "DisableContext.__call__.<locals>._fn", 1552);
  uint32_t aot = f(kPkg + "torch/_functorch/_aot_autograd/runtime_wrappers.py", "CompiledFunction.forward", 3541);
  uint32_t output = f(kPkg + "torch/_inductor/output_code.py", "CompiledFxGraph.__call__", 830);
  uint32_t fwd_a = f(kForwardGraph, "Runner.call", 729);
  uint32_t fwd_mm = f(kForwardGraph, "Runner.call", 740);
  uint32_t fwd_b = f(kForwardGraph, "Runner.call", 749);
  uint32_t loss_a = f(kLossGraph, "Runner.call", 222);
  uint32_t bwd_a = f(kBackwardGraph, "Runner.call", 1245);
  uint32_t apply = f(kPkg + "torch/autograd/function.py", "BackwardCFunction.apply_boxed", 460);
  uint32_t heuristics = f(kPkg + "torch/_inductor/runtime/triton_heuristics.py", "CachingAutotuner.run", 2504);
  uint32_t launcher = f("<string>", "launcher", 5);
  uint32_t extern_mm = f(kPkg + "torch/_inductor/select_algorithm.py", "extern_kernels.mm", 90);
  uint32_t bench = f(kPkg + "torch/_inductor/runtime/benchmarking.py", "Benchmarker.benchmark_gpu", 300);
  uint32_t torch_fn = f(kPkg + "torch/nn/utils/clip_grad.py", "clip_grad_norm_", 40);
  uint32_t jit_run = f(kPkg + "triton/runtime/jit.py", "JITFunction.run", 786);
  uint32_t jit_launch = f(kPkg + "triton/backends/nvidia/driver.py", "CudaLauncher.__call__", 340);

  auto fwd = [&](uint32_t at, bool triton) {
    std::vector<uint32_t> s{at, output, aot, disable, forward, dynamo, step, module};
    if (triton) s.insert(s.begin(), {launcher, heuristics});
    else s.insert(s.begin(), extern_mm);
    return f.Stack(s);
  };
  uint32_t s_fwd_a = fwd(fwd_a, true), s_fwd_mm = fwd(fwd_mm, false), s_fwd_b = fwd(fwd_b, true);
  uint32_t s_loss = f.Stack({launcher, heuristics, loss_a, output, aot, disable, loss_of, dynamo, loss_line, module});
  uint32_t s_bwd = f.Stack({launcher, heuristics, bwd_a, output, aot, apply});
  uint32_t s_eager = f.Stack({torch_fn, clip, module});
  uint32_t s_bench = f.Stack({torch_fn, bench, output, step, module});
  uint32_t s_jit = f.Stack({jit_launch, jit_run, ema_line, module});

  struct L {
    ApiId api;
    const char* kernel;
    uint64_t ns;
    uint32_t stack;
    uint32_t tid = kPid;
  };
  const L launches[] = {
      {ApiId::cuLaunchKernel, "triton_poi_fused_add_0", 300, s_fwd_a},
      {ApiId::cudaLaunchKernel, "sm90_xmma_gemm_bf16", 700, s_fwd_mm},
      {ApiId::cuLaunchKernel, "triton_per_fused_native_layer_norm_1", 400, s_fwd_b},
      {ApiId::cuLaunchKernel, "triton_poi_fused_add_0", 300, s_fwd_a},  // a second launch of the same line
      {ApiId::cuLaunchKernel, "triton_per_fused__log_softmax_0", 200, s_loss},
      {ApiId::cuLaunchKernel, "triton_poi_fused_add_0", 900, s_bwd, kAutograd},
      {ApiId::cudaLaunchKernel, "multi_tensor_apply_kernel", 100, s_eager},
      {ApiId::cudaLaunchKernel, "vectorized_elementwise_kernel", 50, s_bench},
      {ApiId::cuLaunchKernelEx, "ema_kernel", 20, s_jit},
  };
  uint32_t c = 1;
  for (const L& l : launches) {
    uint64_t t = 1'000'000 + 1000 * c;
    b.Call(l.api, t, t + 100, c, l.tid).stack_id = l.stack;
    b.Kernel(l.kernel, t + 500, t + 500 + l.ns, c);
    ++c;
  }
  b.Step(1, 1'000'000, 1'000'000 + 1000 * c);
  return b.Build();
}

std::map<std::string, CompiledCodeRow> ByCode(const Summary& s) {
  std::map<std::string, CompiledCodeRow> rows;
  for (const CompiledCodeRow& r : s.compiled_code) rows[r.code] = r;
  return rows;
}

TEST_CASE("kernels of compiled code are grouped by the torch.compile graph or @triton.jit call site that launched them",
          "[summary][compiled]") {
  Summary s = ComputeSummary(CompiledWindow());
  auto rows = ByCode(s);
  REQUIRE(rows.size() == 4);  // the eager kernel and torch's own benchmarking kernel are in none

  const CompiledCodeRow& fwd = rows[kForwardGraph];
  CHECK(fwd.graph);
  CHECK(fwd.called_from == "model.py:80 in TinyLM.forward");  // the compiled function, not the line that called it
  CHECK(fwd.launches == 4);
  CHECK(fwd.kernels == 4);  // its Triton kernels and the cuBLAS kernel its code called
  CHECK(fwd.kernel_names == 3);
  CHECK(fwd.gpu_ns == 300 + 700 + 400 + 300);

  const CompiledCodeRow& loss = rows[kLossGraph];
  CHECK(loss.called_from == "train.py:31 in loss_of");
  CHECK((loss.kernels == 1 && loss.gpu_ns == 200));

  // The backward graph's kernel has a forward kernel's name, and a row of its own.
  const CompiledCodeRow& bwd = rows[kBackwardGraph];
  CHECK(bwd.called_from == "function.py:460 in BackwardCFunction.apply_boxed (no frame of your code)");
  CHECK((bwd.kernels == 1 && bwd.launches == 1 && bwd.gpu_ns == 900));

  const CompiledCodeRow& jit = rows["@triton.jit ema_kernel"];
  CHECK_FALSE(jit.graph);
  CHECK(jit.called_from == "train.py:85 in main");
  CHECK((jit.kernels == 1 && jit.gpu_ns == 20));

  // By GPU time; percentages of all GPU work in the window.
  CHECK(s.compiled_code.front().code == kForwardGraph);
  CHECK(s.compiled_code.back().code == "@triton.jit ema_kernel");
  CHECK(s.compiled_total_gpu_ns == 300 + 700 + 400 + 300 + 200 + 900 + 100 + 50 + 20);
  std::string text = RenderSummary(s);
  size_t at = text.find("\n== GPU time by compiled code (torch.compile graphs by their generated module; @triton.jit "
                        "kernels) ==\n");
  REQUIRE(at != std::string::npos);
  std::string table = text.substr(at, text.find("\n== ", at + 1) - at);
  INFO(table);
  // 1700 of 2970 ns.
  CHECK(table.find("\n         57.2           1700        4         4             3  " + kForwardGraph +
                   ", called from model.py:80 in TinyLM.forward\n") != std::string::npos);
  CHECK(table.find(kBackwardGraph) != std::string::npos);
  CHECK(table.find("multi_tensor_apply_kernel") == std::string::npos);
}

TEST_CASE("the compiled-code table is read back the same from the trace, and absent without compiled code",
          "[summary][compiled]") {
  Window w = CompiledWindow();
  std::string text;
  testing::TraceJson(w, &text);
  std::vector<CompactWindow> compact;
  std::string error;
  REQUIRE(tool::ReadWindowsFromBytes(text, &compact, &error));
  REQUIRE(compact.size() == 1);
  std::string agent = RenderSummary(ComputeSummary(w));
  std::string tool = RenderSummary(ComputeSummary(compact[0]));
  auto section = [](const std::string& t) {
    size_t at = t.find("\n== GPU time by compiled code");
    return at == std::string::npos ? std::string() : t.substr(at, t.find("\n== ", at + 1) - at);
  };
  CHECK_FALSE(section(agent).empty());
  CHECK(section(tool) == section(agent));

  // No stack through a generated module or triton's JIT: no table, the summary as before.
  for (HostEvent& e : w.host_events) e.stack_id = 1;
  Summary none = ComputeSummary(w);
  CHECK(none.compiled_code.empty());
  CHECK(RenderSummary(none).find("compiled code") == std::string::npos);
}

}  // namespace
}  // namespace prof
