// Each finding fires on a window built to trigger it and stays silent on one
// built not to.
#include "exporters/summary/findings.h"

#include <catch2/catch.hpp>

#include "exporters/common/cuda_names.h"
#include "exporters/summary/summary.h"
#include "exporters/common/window_index.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using testing::WindowBuilder;

constexpr uint64_t kStepNs = 1'000'000;

bool Fires(const Window& w, const std::string& id, std::string* evidence = nullptr) {
  for (const Finding& f : ComputeSummary(w).findings) {
    if (f.id == id) {
      if (evidence) *evidence = f.evidence;
      return true;
    }
  }
  return false;
}

// `steps` steps of `step_ns`; in each, `kernels` kernels of `kernel_ns`,
// launched one every `call_every_ns` from the step start, each starting
// `latency_ns` after its call (or when the one before it ended).
WindowBuilder Loop(int steps, int kernels, uint64_t kernel_ns, uint64_t latency_ns = 2'000,
                   uint64_t call_every_ns = 1'000, uint64_t step_ns = kStepNs) {
  WindowBuilder b;
  uint32_t correlation = 1;
  for (int s = 0; s < steps; ++s) {
    uint64_t t0 = s * step_ns;
    b.Step(s, t0, t0 + step_ns);
    uint64_t gpu = t0;
    for (int k = 0; k < kernels; ++k) {
      uint64_t call = t0 + k * call_every_ns;
      uint64_t start = std::max(gpu, call + latency_ns);
      b.Launch("k", call, 1'000, start, start + kernel_ns, correlation++);
      gpu = start + kernel_ns;
    }
  }
  return b;
}

// Launch-bound: a launch every 10 µs (its call lasts 1 µs), each 2 µs
// kernel done before the next call begins: the GPU waits for every launch.
WindowBuilder LaunchBound(int kernels = 50) { return Loop(4, kernels, 2'000, 2'000, 10'000); }

namespace {

// Tensor memory with `held` bytes from before the window and, in step 0,
// blocks from two lines: 2 MiB from model.py:20, then `big` bytes from
// model.py:10.
Window TensorPeak(int64_t big, uint64_t held, bool modules = false) {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  if (modules) {  // the big block allocated in aten::mm inside blocks.0.mlp's call
    b.window().nvtx_ranges.push_back({150'000, 250'000, b.Str("nn.Module: blocks.0.mlp"), testing::kPid, 0});
    NvtxRange mm{190'000, 210'000, b.Str("aten::mm"), testing::kPid, 1};
    mm.op_id = 1;
    mm.seq = 1;
    b.window().nvtx_ranges.push_back(mm);
  }
  b.TensorsHeld(held);
  b.Tensor(100'000, 0x1000, 2 << 20, "model.py:20 in forward");
  b.Tensor(200'000, 0x9000000, big, "model.py:10 in forward");
  b.Tensor(300'000, 0x9000000, -big);
  b.Tensor(400'000, 0x1000, -(2 << 20));
  return b.Build();
}

}  // namespace

TEST_CASE("memory-spike names the one line that holds most of the tensor peak, and stays silent when none does",
          "[findings]") {
  std::string evidence;
  REQUIRE(Fires(TensorPeak(24 << 20, 4 << 20), "memory-spike", &evidence));
  CHECK(evidence.find("peak at 30.0 MiB in step 0 (4.0 MiB held from before the window)") != std::string::npos);
  CHECK(evidence.find("24.0 MiB of it (80%) was allocated by model.py:10 in forward, in 1 block") != std::string::npos);
  CHECK(evidence.find("by module") == std::string::npos);
  // With module paths, the module whose call allocated it too.
  REQUIRE(Fires(TensorPeak(24 << 20, 4 << 20, true), "memory-spike", &evidence));
  CHECK(evidence.find("in 1 block; by module, blocks.0.mlp allocated 24.0 MiB of it (80%)") != std::string::npos);
  // Control: the peak is what the window started with (parameters,
  // optimizer state); no line holds a quarter of it.
  CHECK_FALSE(Fires(TensorPeak(2 << 20, 16 << 20), "memory-spike"));
}

namespace {

// One step of 1 ms: aten::mm (sequence number 4) on the main thread, then
// MmBackward0 for it on autograd's thread for 400 µs, launching one kernel
// of `backward_kernel_ns`.
Window Backward(uint64_t backward_kernel_ns) {
  constexpr uint32_t kAutograd = testing::kPid + 7;
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  auto op = [&](const char* name, uint64_t start, uint64_t end, uint32_t tid, uint32_t op_id, int32_t seq) {
    NvtxRange r{start, end, b.Str(name), tid, 0};
    r.op_id = op_id;
    r.seq = seq;
    b.window().nvtx_ranges.push_back(r);
  };
  op("aten::mm", 100'000, 150'000, testing::kPid, 1, 4);
  b.Launch("_Z2mmv", 110'000, 5'000, 120'000, 130'000, 1);
  op("MmBackward0", 300'000, 700'000, kAutograd, 2, 4);
  b.Call(ApiId::cudaLaunchKernel, 350'000, 355'000, 2, kAutograd);
  b.Kernel("_Z6mm_bwdv", 360'000, 360'000 + backward_kernel_ns, 2, 7);
  return b.Build();
}

}  // namespace

TEST_CASE("autograd-overhead fires when autograd's threads spend far more in operators than their work's GPU time",
          "[findings]") {
  std::string evidence;
  REQUIRE(Fires(Backward(10'000), "autograd-overhead", &evidence));
  CHECK(evidence.find("autograd's thread spent 400.0 µs in operators (40% of the window), the GPU 10.0 µs") !=
        std::string::npos);
  CHECK(evidence.find("most host time in: MmBackward0 400.0 µs") != std::string::npos);
  // Control: the backward kernel keeps the GPU busy most of that time.
  CHECK_FALSE(Fires(Backward(300'000), "autograd-overhead"));
}

namespace {

constexpr const char* kElementwise = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>()";

// Two steps; in each, `per_function` elementwise kernels of `kernel_ns`
// launched from each of `functions` Python functions (forward0 in
// model.py, ...; their stack: the function's line, or every other one a
// lambda's inside it, under train.py's main)
// and 10 GEMMs. With `modules`, each function's launches run in
// aten::add inside the module call "nn.Module: blocks.<i>.mlp".
Window Elementwise(int functions, int per_function, uint64_t kernel_ns, bool modules = false) {
  WindowBuilder b;
  Window& w = b.window();
  w.python.frames.resize(1);
  w.python.stacks.resize(2);
  w.python.frames.push_back({b.Str("/job/train.py"), b.Str("main"), 80, 0});
  uint32_t main_frame = static_cast<uint32_t>(w.python.frames.size() - 1);
  std::vector<uint32_t> stacks;
  w.python.frames.push_back({b.Str("/job/model.py"), b.Str("<lambda>"), 5, 0});
  uint32_t lambda = static_cast<uint32_t>(w.python.frames.size() - 1);
  for (int f = 0; f < functions; ++f) {
    w.python.frames.push_back({b.Str("/job/model.py"), b.Str("forward" + std::to_string(f)), 10 + f, 0});
    uint32_t function = static_cast<uint32_t>(w.python.frames.size() - 1);
    // Every other launch from a lambda the function calls: the function's still.
    w.python.stacks.push_back({function, main_frame});
    w.python.stacks.push_back({lambda, function, main_frame});
    stacks.push_back(static_cast<uint32_t>(w.python.stacks.size() - 2));
  }
  uint32_t correlation = 1, op_id = 1;
  for (int s = 0; s < 2; ++s) {
    uint64_t t = s * 10 * kStepNs;
    b.Step(s, t, t + 10 * kStepNs);
    uint64_t gpu = t + 5'000;
    for (int f = 0; f < functions; ++f) {
      uint64_t module_start = t;
      for (int k = 0; k < per_function; ++k, t += 10'000) {
        if (modules) {
          NvtxRange op{t, t + 5'000, b.Str("aten::add"), testing::kPid, 0};
          op.op_id = op_id++;
          w.nvtx_ranges.push_back(op);
        }
        b.Call(ApiId::cudaLaunchKernel, t + 1'000, t + 2'000, correlation).stack_id = stacks[f] + k % 2;
        gpu = std::max(gpu, t + 3'000);
        b.Kernel(kElementwise, gpu, gpu + kernel_ns, correlation++);
        gpu += kernel_ns;
      }
      if (modules) w.nvtx_ranges.push_back({module_start, t, b.Str("nn.Module: blocks." + std::to_string(f) + ".mlp"),
                                            testing::kPid, 0});
    }
    for (int k = 0; k < 10; ++k, t += 10'000) {
      b.Launch("sm90_xmma_gemm_bf16", t, 1'000, std::max(gpu, t + 3'000), std::max(gpu, t + 3'000) + 50'000,
               correlation++);
      gpu = std::max(gpu, t + 3'000) + 50'000;
    }
  }
  return b.Build();
}

}  // namespace

TEST_CASE("small-elementwise names the function, or the module, that launches many short elementwise kernels",
          "[findings]") {
  std::string evidence;
  // 30 a step from forward0, against 10 GEMMs: 75 % of the kernels.
  REQUIRE(Fires(Elementwise(1, 30, 4'000), "small-elementwise", &evidence));
  CHECK(evidence.find("30.0 elementwise kernels per step under 20.0 µs each (threshold >= 20 per step) from "
                      "forward0 in model.py, 75% of the window's kernels") != std::string::npos);
  CHECK(evidence.find("median 4.0 µs, 240.0 µs of GPU time in all") != std::string::npos);
  // With module paths, the module, and the operators that launched them.
  REQUIRE(Fires(Elementwise(1, 30, 4'000, true), "small-elementwise", &evidence));
  CHECK(evidence.find("from module blocks.0.mlp,") != std::string::npos);
  CHECK(evidence.find("; operators: aten::add x60") != std::string::npos);
  // Controls: long elementwise kernels; few per step; many per step, but
  // spread over functions none of which launches enough of them.
  CHECK_FALSE(Fires(Elementwise(1, 30, 40'000), "small-elementwise"));
  CHECK_FALSE(Fires(Elementwise(1, 12, 4'000), "small-elementwise"));
  CHECK_FALSE(Fires(Elementwise(3, 12, 4'000), "small-elementwise"));
  CHECK(Fires(Elementwise(3, 24, 4'000), "small-elementwise", &evidence));
}

TEST_CASE("overhead-bound fires on short kernels that each wait for their launch", "[findings]") {
  std::string evidence;
  CHECK(Fires(LaunchBound().Build(), "overhead-bound", &evidence));  // 10% busy, 2 µs kernels
  CHECK(evidence.find("GPU busy 10.0%") != std::string::npos);
  // Every kernel but the window's first found its stream drained.
  CHECK(evidence.find("; 199 of 199 kernels (100%; threshold >= 50%) found their stream drained") != std::string::npos);
  CHECK_FALSE(Fires(LaunchBound().Build(), "compute-bound"));
  CHECK_FALSE(Fires(LaunchBound().Build(), "idle-gaps"));
}

TEST_CASE("overhead-bound names the PyTorch operators that launched the most kernels, when there are any",
          "[findings]") {
  WindowBuilder b = LaunchBound();
  // Every launch of the first step inside an aten::add_, the first of the second in an aten::mm.
  b.window().nvtx_ranges.push_back({0, kStepNs, b.Str("aten::add_"), testing::kPid, 0, 1});
  b.window().nvtx_ranges.push_back({kStepNs, kStepNs + 5'000, b.Str("aten::mm"), testing::kPid, 0, 2});
  std::string evidence;
  REQUIRE(Fires(b.Build(), "overhead-bound", &evidence));
  CHECK(evidence.find("; most kernels launched in: aten::add_ x50, aten::mm x1") != std::string::npos);
  REQUIRE(Fires(LaunchBound().Build(), "overhead-bound", &evidence));
  CHECK(evidence.find("most kernels launched in") == std::string::npos);
}

TEST_CASE("overhead-bound stays silent when the host queued its kernels ahead and idles the GPU elsewhere",
          "[findings]") {
  // The demo's shape: each step's short kernels queued back to back (the
  // host runs ahead of them), then the host busy outside CUDA for most of
  // the step. The GPU idles, but no kernel waited for its launch: that is
  // idle-gaps' finding, with the right cause.
  WindowBuilder ahead = Loop(4, 50, 2'000, 2'000, 1'000, 8 * kStepNs);
  std::string evidence;
  CHECK_FALSE(Fires(ahead.Build(), "overhead-bound"));
  CHECK(Fires(ahead.Build(), "idle-gaps", &evidence));
  CHECK(evidence.find("(host: no CUDA call)") != std::string::npos);
  // The same with pauses shorter than an idle gap: still no launch waited.
  CHECK_FALSE(Fires(Loop(4, 50, 2'000).Build(), "overhead-bound"));
}

TEST_CASE("overhead-bound beside idle-gaps: launch-bound bursts between host pauses, unless the waits are a trifle",
          "[findings]") {
  // Steps of 50 kernels that each wait 8 µs for their launch, then the host
  // elsewhere for over a millisecond (idle-gaps'). 3 ms steps: the waits are
  // 14% of the GPU's idle, both findings hold. 8 ms steps: 5%, the pauses
  // are what to fix.
  std::string evidence;
  Window w = Loop(4, 50, 2'000, 2'000, 10'000, 3 * kStepNs).Build();
  CHECK(Fires(w, "overhead-bound", &evidence));
  CHECK(evidence.find("100% of the GPU's") != std::string::npos);
  CHECK(evidence.find("14% of its") != std::string::npos);
  CHECK(Fires(w, "idle-gaps"));
  w = Loop(4, 50, 2'000, 2'000, 10'000, 8 * kStepNs).Build();
  CHECK_FALSE(Fires(w, "overhead-bound"));
  CHECK(Fires(w, "idle-gaps"));
}

// Steps of `step_ns`: 50 kernels that each wait 8 µs for their launch (the
// first 0.5 ms), then host work outside CUDA, then a copy at the step's end.
// The wait before the copy is idle that no launch caused; all is under 1 ms.
Window BurstThenCopy(uint64_t step_ns) {
  WindowBuilder b = Loop(4, 50, 2'000, 2'000, 10'000, step_ns);
  for (uint32_t s = 0; s < 4; ++s) {
    uint64_t call = (s + 1) * step_ns - 8'000;
    b.Call(ApiId::cudaMemcpyAsync, call, call + 2'000, 1000 + s).copy_kind = 1;
    b.Copy(1, testing::kCuptiPinned, testing::kCuptiDevice, 4096, call + 3'000, call + 5'000, 1000 + s);
  }
  return b.Build();
}

TEST_CASE("overhead-bound needs the waits for launches to be most of the GPU's idle under 1 ms", "[findings]") {
  std::string evidence;
  // 0.8 ms steps: 0.3 ms of host work after the kernels; the waits are 57%.
  CHECK(Fires(BurstThenCopy(800'000), "overhead-bound", &evidence));
  CHECK(evidence.find("57% of the GPU's") != std::string::npos);
  // 1 ms steps: 0.5 ms of host work; 44%: silent, though every kernel waited.
  CHECK_FALSE(Fires(BurstThenCopy(1'000'000), "overhead-bound"));
}

TEST_CASE("overhead-bound on a step that already replays CUDA graphs does not advise capturing one", "[findings]") {
  auto advice_for = [](const Window& w) {
    for (const Finding& f : ComputeSummary(w).findings) {
      if (f.id == "overhead-bound") return f.advice + " | " + f.evidence;
    }
    return std::string();
  };
  Window plain = LaunchBound().Build();
  CHECK(advice_for(plain).find("capture the step in a CUDA graph") != std::string::npos);
  Window graphs = LaunchBound().Build();
  for (DeviceRecord& r : graphs.device_records) {
    if (KindOf(r) == DeviceKind::kKernel) r.graph_id = 7;  // every kernel ran from a graph launch
  }
  std::string text = advice_for(graphs);
  CHECK(text.find("already replays CUDA graphs") != std::string::npos);
  CHECK(text.find("capture the step in a CUDA graph") == std::string::npos);
  CHECK(text.find("200 of 200 kernels ran from CUDA graphs") != std::string::npos);
}

TEST_CASE("overhead-bound and compute-bound need kernels: a window of copies alone is neither", "[findings]") {
  // Five steps of 1 ms, each with a 20 µs copy to the device and one back:
  // the GPU is 4% busy and there is no kernel at all.
  WindowBuilder b;
  for (uint32_t s = 0; s < 5; ++s) {
    uint64_t t0 = s * kStepNs;
    b.Step(s, t0, t0 + kStepNs);
    b.Call(ApiId::cudaMemcpy, t0, t0 + 30'000, 2 * s + 1).copy_kind = 1;
    b.Copy(1, kCuptiMemoryPageable, 3, 1 << 16, t0 + 5'000, t0 + 25'000, 2 * s + 1);
    b.Call(ApiId::cudaMemcpy, t0 + 40'000, t0 + 70'000, 2 * s + 2).copy_kind = 2;
    b.Copy(2, 3, kCuptiMemoryPageable, 1 << 16, t0 + 45'000, t0 + 65'000, 2 * s + 2);
  }
  Window w = b.Build();
  CHECK(ComputeSummary(w).has_gpu_work);
  CHECK_FALSE(Fires(w, "overhead-bound"));
  CHECK_FALSE(Fires(w, "compute-bound"));
  // The copies' own findings still fire.
  CHECK(Fires(w, "d2h-copy-in-step"));
  // Short kernels that wait for their launches in the same window (one every
  // 10 µs in the rest of each step): overhead-bound again.
  uint32_t correlation = 100;
  for (uint32_t s = 0; s < 5; ++s) {
    for (uint64_t call = s * kStepNs + 100'000; call < (s + 1) * kStepNs; call += 10'000) {
      b.Launch("k", call, 1'000, call + 2'000, call + 4'000, correlation++);
    }
  }
  CHECK(Fires(b.Build(), "overhead-bound"));
}

TEST_CASE("overhead-bound stays silent when kernels are long even if the GPU idles", "[findings]") {
  CHECK_FALSE(Fires(Loop(4, 1, 300'000).Build(), "overhead-bound"));  // 30% busy, 300 µs kernels
}

TEST_CASE("compute-bound fires when the GPU is busy and not otherwise", "[findings]") {
  CHECK(Fires(Loop(4, 1, 950'000).Build(), "compute-bound"));  // 95% busy
  CHECK_FALSE(Fires(Loop(4, 1, 950'000).Build(), "overhead-bound"));
  CHECK_FALSE(Fires(Loop(4, 1, 500'000).Build(), "compute-bound"));  // 50%
}

TEST_CASE("sync-in-step fires on a synchronize inside a step", "[findings]") {
  WindowBuilder b = Loop(3, 2, 100'000);
  b.Call(ApiId::cudaStreamSynchronize, 1'500'000, 1'600'000);
  std::string evidence;
  CHECK(Fires(b.Build(), "sync-in-step", &evidence));
  CHECK(evidence.find("cudaStreamSynchronize x1") != std::string::npos);
  CHECK_FALSE(Fires(Loop(3, 2, 100'000).Build(), "sync-in-step"));
}

TEST_CASE("sync-in-step ignores the synchronize that marks the step with PROF_STEP=sync", "[findings]") {
  WindowBuilder b = Loop(3, 2, 100'000);
  b.window().meta.config = {{"PROF_STEP", "sync"}};
  for (int s = 0; s < 3; ++s) b.Call(ApiId::cudaDeviceSynchronize, s * kStepNs + 900'000, s * kStepNs + 990'000);
  CHECK_FALSE(Fires(b.Build(), "sync-in-step"));
  b.Call(ApiId::cudaDeviceSynchronize, 500'000, 510'000);  // a second one in step 0 is real
  CHECK(Fires(b.Build(), "sync-in-step"));
}

TEST_CASE("d2h-copy-in-step fires on blocking device-to-host copies only", "[findings]") {
  WindowBuilder sync_copy = Loop(2, 1, 100'000);
  HostEvent& c = sync_copy.Call(ApiId::cudaMemcpy, 500'000, 520'000);
  c.copy_kind = 2, c.bytes = 4;
  CHECK(Fires(sync_copy.Build(), "d2h-copy-in-step"));

  WindowBuilder h2d = Loop(2, 1, 100'000);
  h2d.Call(ApiId::cudaMemcpy, 500'000, 520'000).copy_kind = 1;
  CHECK_FALSE(Fires(h2d.Build(), "d2h-copy-in-step"));

  // cudaMemcpyAsync into pinned memory does not block; into pageable it does.
  for (uint8_t dst : {testing::kCuptiPinned, testing::kCuptiPageable}) {
    WindowBuilder async = Loop(2, 1, 100'000);
    async.Call(ApiId::cudaMemcpyAsync, 500'000, 505'000, 900).copy_kind = 2;
    async.Copy(testing::kCuptiDtoH, testing::kCuptiDevice, dst, 64, 510'000, 511'000, 900);
    CHECK(Fires(async.Build(), "d2h-copy-in-step") == (dst == testing::kCuptiPageable));
  }
}

TEST_CASE("d2h-copy-in-step names the PyTorch operators the copies were made in, when there are any",
          "[findings]") {
  WindowBuilder b = Loop(2, 1, 100'000);
  for (uint64_t t : {500'000, 1'500'000}) {
    NvtxRange item{t - 10'000, t + 30'000, b.Str("aten::_local_scalar_dense"), testing::kPid, 0};
    item.op_id = static_cast<uint32_t>(t / 1000);
    b.window().nvtx_ranges.push_back(item);
    HostEvent& c = b.Call(ApiId::cudaMemcpy, t, t + 20'000);
    c.copy_kind = 2, c.bytes = 4;
  }
  std::string evidence;
  REQUIRE(Fires(b.Build(), "d2h-copy-in-step", &evidence));
  CHECK(evidence.find("; operators: aten::_local_scalar_dense (.item()) x2") != std::string::npos);

  // Without operators recorded the evidence says nothing about them.
  WindowBuilder plain = Loop(2, 1, 100'000);
  HostEvent& c = plain.Call(ApiId::cudaMemcpy, 500'000, 520'000);
  c.copy_kind = 2, c.bytes = 4;
  REQUIRE(Fires(plain.Build(), "d2h-copy-in-step", &evidence));
  CHECK(evidence.find("operators") == std::string::npos);
}

TEST_CASE("pageable-copy fires on copies from pageable memory, not pinned", "[findings]") {
  WindowBuilder pageable = Loop(2, 1, 100'000);
  pageable.Copy(testing::kCuptiHtoD, testing::kCuptiPageable, testing::kCuptiDevice, 1 << 20, 600'000, 700'000, 0);
  CHECK(Fires(pageable.Build(), "pageable-copy"));
  WindowBuilder pinned = Loop(2, 1, 100'000);
  pinned.Copy(testing::kCuptiHtoD, testing::kCuptiPinned, testing::kCuptiDevice, 1 << 20, 600'000, 700'000, 0);
  CHECK_FALSE(Fires(pinned.Build(), "pageable-copy"));
}

TEST_CASE("allocator-churn fires on cudaMalloc/cudaFree after the window's first step", "[findings]") {
  WindowBuilder churn = Loop(3, 1, 100'000);
  churn.Call(ApiId::cudaMalloc, 1'500'000, 1'510'000);
  churn.Call(ApiId::cudaFree, 2'500'000, 2'510'000);
  std::string evidence;
  CHECK(Fires(churn.Build(), "allocator-churn", &evidence));
  CHECK(evidence.find("2 calls in 2 of 2 steps") != std::string::npos);

  WindowBuilder first_step_only = Loop(3, 1, 100'000);
  first_step_only.Call(ApiId::cudaMalloc, 500'000, 510'000);
  CHECK_FALSE(Fires(first_step_only.Build(), "allocator-churn"));

  WindowBuilder stream_ordered = Loop(3, 1, 100'000);
  stream_ordered.Call(ApiId::cudaMallocAsync, 1'500'000, 1'510'000);
  CHECK_FALSE(Fires(stream_ordered.Build(), "allocator-churn"));
}

TEST_CASE("launch-latency fires when work reaches an idle GPU late", "[findings]") {
  CHECK(Fires(Loop(3, 2, 50'000, /*latency_ns=*/200'000).Build(), "launch-latency"));
  CHECK_FALSE(Fires(Loop(3, 2, 50'000, /*latency_ns=*/5'000).Build(), "launch-latency"));
}

TEST_CASE("idle-gaps fires on long GPU idle stretches and names the host call in them", "[findings]") {
  WindowBuilder b;
  b.Step(0, 0, 10'000'000);
  b.Launch("k", 0, 1'000, 1'000, 2'000'000, 1);
  b.Call(ApiId::cudaStreamSynchronize, 2'100'000, 7'900'000);
  b.Launch("k", 8'000'000, 1'000, 8'001'000, 10'000'000, 2);
  std::string evidence;
  CHECK(Fires(b.Build(), "idle-gaps", &evidence));
  CHECK(evidence.find("cudaStreamSynchronize") != std::string::npos);
  // Many 0.1 ms gaps: each below the 1 ms threshold.
  CHECK_FALSE(Fires(Loop(3, 5, 100'000, /*latency_ns=*/100'000).Build(), "idle-gaps"));
}

TEST_CASE("idle-gaps advice explains what the host did in the gaps it names, and only that", "[findings]") {
  // One 10 ms step: kernels at its start and end, and a 6 ms gap between
  // them spent inside `api` (or in no CUDA call when api is kCount).
  auto finding = [](ApiId api) {
    WindowBuilder b;
    b.Step(0, 0, 10'000'000);
    b.Launch("k", 0, 1'000, 1'000, 2'000'000, 1);
    if (api != ApiId::kCount) b.Call(api, 2'100'000, 7'900'000);
    b.Launch("k", 8'000'000, 1'000, 8'001'000, 10'000'000, 2);
    for (const Finding& f : ComputeSummary(b.Build()).findings) {
      if (f.id == "idle-gaps") return f;
    }
    return Finding{};
  };
  Finding sync = finding(ApiId::cudaStreamSynchronize);
  REQUIRE(sync.id == "idle-gaps");
  CHECK(sync.evidence.find("host: cudaStreamSynchronize") != std::string::npos);
  CHECK(sync.advice.find("synchroniz") != std::string::npos);
  CHECK(sync.advice.find("no CUDA call") == std::string::npos);
  CHECK(sync.advice.find("DataLoader") == std::string::npos);

  Finding idle = finding(ApiId::kCount);
  REQUIRE(idle.id == "idle-gaps");
  CHECK(idle.evidence.find("host: no CUDA call") != std::string::npos);
  CHECK(idle.advice.find("DataLoader") != std::string::npos);
  CHECK(idle.advice.find("synchroniz") == std::string::npos);

  Finding alloc = finding(ApiId::cudaMalloc);
  REQUIRE(alloc.id == "idle-gaps");
  CHECK(alloc.advice.find("allocate once") != std::string::npos);
  CHECK(alloc.advice.find("DataLoader") == std::string::npos);

  Finding other = finding(ApiId::cuMemMap);
  REQUIRE(other.id == "idle-gaps");
  CHECK(other.advice.find("inside cuMemMap") != std::string::npos);

  // The idle gap of the test above with a short copy in it: another scenario.
  // A 30 µs copy in the middle of the 6 ms gap does not explain it: the host
  // was busy elsewhere for the rest.
  WindowBuilder b;
  b.Step(0, 0, 10'000'000);
  b.Launch("k", 0, 1'000, 1'000, 2'000'000, 1);
  b.Call(ApiId::cudaMemcpy, 5'000'000, 5'030'000);
  b.Launch("k", 8'000'000, 1'000, 8'001'000, 10'000'000, 2);
  std::string evidence;
  REQUIRE(Fires(b.Build(), "idle-gaps", &evidence));
  CHECK(evidence.find("host: no CUDA call") != std::string::npos);
}

TEST_CASE("data-loss fires on any dropped or missing record, and only then", "[findings]") {
  WindowBuilder b = Loop(2, 1, 100'000);
  CHECK_FALSE(Fires(b.Build(), "data-loss"));
  b.window().meta.losses.cupti_records_dropped = 12;
  std::string evidence;
  CHECK(Fires(b.Build(), "data-loss", &evidence));
  CHECK(evidence.find("12 records dropped by CUPTI") != std::string::npos);
}

TEST_CASE("data-loss fires on NVTX names the name table could not keep", "[findings]") {
  WindowBuilder b = Loop(2, 1, 100'000);
  b.window().meta.losses.nvtx_names_dropped = 7;
  b.window().meta.losses.nvtx_ranges_dropped = 3;
  std::string evidence;
  CHECK(Fires(b.Build(), "data-loss", &evidence));
  CHECK(evidence.find("7 NVTX range names dropped") != std::string::npos);
  CHECK(evidence.find("3 NVTX ranges dropped") != std::string::npos);
}

TEST_CASE("data-loss fires when a window's start was not recorded, saying how long", "[findings]") {
  WindowBuilder b = Loop(2, 1, 100'000);
  b.window().meta.losses.unrecorded_start_ns = 1'250'000;
  std::string evidence;
  CHECK(Fires(b.Build(), "data-loss", &evidence));
  CHECK(evidence.find("first 1.250 ms not recorded") != std::string::npos);
}

TEST_CASE("data-loss counts calls whose CUPTI record never came, and advises by cause", "[findings]") {
  auto data_loss = [](const Window& w) {
    for (const Finding& f : ComputeSummary(w).findings) {
      if (f.id == "data-loss") return f;
    }
    return Finding{};
  };
  WindowBuilder b = Loop(2, 1, 100'000);
  b.window().meta.losses.api_records_missing = 2;
  Finding late = data_loss(b.Build());
  CHECK(late.evidence.find("2 calls whose own CUPTI record never came") != std::string::npos);
  CHECK(late.advice.find("a busy machine") != std::string::npos);
  // Dropped by CUPTI: that cause's advice, not the busy machine's.
  b.window().meta.losses.cupti_records_dropped = 4;
  Finding dropped = data_loss(b.Build());
  CHECK(dropped.advice.find("CUPTI's own buffers overflowed") != std::string::npos);
  CHECK(dropped.advice.find("a busy machine") == std::string::npos);
}

TEST_CASE("interception-only fires when there are no GPU timings, with the cause", "[findings]") {
  WindowBuilder b = Loop(2, 1, 100'000);
  CHECK_FALSE(Fires(b.Build(), "interception-only"));
  b.window().meta.has_gpu_timings = false;
  b.window().meta.cupti_mode = "interception-only (CUPTI_ERROR_UNKNOWN)";
  std::string evidence;
  CHECK(Fires(b.Build(), "interception-only", &evidence));
  CHECK(evidence.find("CUPTI_ERROR_UNKNOWN") != std::string::npos);
}

TEST_CASE("interception-only needs CUDA calls, and its advice fits where the trace came from", "[findings]") {
  // No CUDA call and no GPU work: nothing CUPTI would have timed.
  WindowBuilder empty;
  empty.Step(0, 0, kStepNs);
  empty.window().meta.has_gpu_timings = false;
  CHECK(ComputeSummary(empty.Build()).findings.empty());
  // A torch.profiler trace recorded without GPU activity: libprof's
  // variables are no cure for it.
  WindowBuilder host_only;
  host_only.Step(0, 0, kStepNs);
  host_only.Call(ApiId::cudaLaunchKernel, 1'000, 5'000, 1);
  host_only.window().meta.has_gpu_timings = false;
  host_only.window().meta.cupti_mode = kNotLibprofCuptiMode;
  for (const Finding& f : ComputeSummary(host_only.Build()).findings) {
    if (f.id != "interception-only") continue;
    CHECK(f.advice.find("PROF_CUPTI_LIB") == std::string::npos);
    CHECK(f.evidence.find("1 CUDA calls") != std::string::npos);
  }
  CHECK(Fires(host_only.Build(), "interception-only"));
}

}  // namespace
}  // namespace prof
