#include "test/bench/synthetic_window.h"

#include <string>
#include <vector>

namespace prof::bench {
namespace {

constexpr uint32_t kPid = 31337;
constexpr uint32_t kStream = 7;

// Mangled names in the style of PyTorch's elementwise and reduction kernels
// (lengths from 40 to ~200 characters, as in the Kineto traces).
std::vector<std::string> KernelNames() {
  std::vector<std::string> names = {
      "_Z6kernelPf",
      "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
      "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_"
      "15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
      "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_"
      "14TensorIteratorEEUlffE_EEjfLi4EEEEEvT1_",
      "_Z17gemm_bias_relu_f16PK6__halfS1_S1_PS_iii",
      "_ZN7cutlass7Kernel2I62cutlass_80_tensorop_s16816gemm_relu_f16_64x64_64x4_nn_align8EEvNT_6ParamsE",
  };
  // More distinct kernels, as a model has: variants of the names above.
  for (int i = 0; i < 30; ++i) {
    std::string id = "fused_elementwise_op_" + std::to_string(i);
    names.push_back("_Z" + std::to_string(id.size()) + id + "PKfS0_Pfif");
  }
  return names;
}

uint32_t Intern(Window& w, const std::string& s) {
  w.strings.push_back(s);
  return static_cast<uint32_t>(w.strings.size() - 1);
}

HostEvent Call(ApiId api, uint64_t start_ns, uint64_t end_ns, uint32_t correlation) {
  HostEvent e{};
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.correlation_id = correlation;
  e.tid = kPid;
  e.api = static_cast<uint16_t>(api);
  e.device = 0;
  return e;
}

DeviceRecord Gpu(DeviceKind kind, uint64_t start_ns, uint64_t end_ns, uint32_t correlation) {
  DeviceRecord r{};
  r.kind = static_cast<uint8_t>(kind);
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.correlation_id = correlation;
  r.stream_id = kStream;
  r.context_id = 1;
  r.device_id = 0;
  return r;
}

void FillMeta(Window& w) {
  WindowMeta& m = w.meta;
  m.name = "bench";
  m.hostname = "benchhost";
  m.pid = static_cast<int>(kPid);
  m.epoch_offset_ns = 1'700'000'000'000'000'000;
  m.cupti_mode = "activity";
  m.has_gpu_timings = true;
  m.libprof_version = "bench";
  // The simulated device as test/unit/exporters/window_builder.h gives it too: test data, per harness.
  DeviceProps d;
  d.name = "Simulated GPU";
  d.total_global_mem = 80ull << 30;
  d.compute_major = 9;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.max_regs_per_block = 65536;
  d.max_regs_per_sm = 65536;
  d.max_shared_per_block = 49152;
  d.max_shared_per_sm = 233472;
  w.devices.push_back(d);
  w.thread_names.push_back({kPid, "python"});
}

}  // namespace

Window MakeSyntheticWindow(uint64_t events, uint32_t launches_per_step) {
  Window w;
  w.strings = {""};
  FillMeta(w);
  std::vector<uint32_t> kernels;
  for (const std::string& n : KernelNames()) kernels.push_back(Intern(w, n));

  uint64_t t = 1'000'000;    // host clock
  uint64_t gpu = 1'000'000;  // end of the last GPU work on the stream
  uint32_t correlation = 1;
  uint64_t live = 0;
  for (uint64_t step = 0; EventCount(w) < events; ++step) {
    uint64_t step_start = t;
    // One host-to-device copy of the batch.
    uint64_t copy_start = std::max(gpu, t + 2000);
    w.host_events.push_back(Call(ApiId::cudaMemcpyAsync, t, t + 4000, correlation));
    w.host_events.back().bytes = 1 << 20;
    w.host_events.back().copy_kind = 1;
    DeviceRecord copy = Gpu(DeviceKind::kMemcpy, copy_start, copy_start + 60'000, correlation++);
    copy.bytes = 1 << 20;
    copy.copy_kind = 1, copy.src_kind = 2, copy.dst_kind = 3;
    w.device_records.push_back(copy);
    gpu = copy.end_ns;
    t += 5000;
    for (uint32_t i = 0; i < launches_per_step && EventCount(w) < events; ++i) {
      uint64_t call_ns = 2500 + (i % 7) * 100;
      w.host_events.push_back(Call(ApiId::cudaLaunchKernel, t, t + call_ns, correlation));
      uint64_t k_start = std::max(gpu + 1000, t + 4000);
      DeviceRecord k = Gpu(DeviceKind::kKernel, k_start, k_start + 3000 + (i % 11) * 400, correlation++);
      k.name_id = kernels[i % kernels.size()];
      k.grid[0] = 128 + static_cast<int32_t>(i % 5) * 64, k.grid[1] = 1, k.grid[2] = 1;
      k.block[0] = 256, k.block[1] = 1, k.block[2] = 1;
      k.registers_per_thread = 32;
      w.device_records.push_back(k);
      gpu = k.end_ns;
      t += call_ns + 500;
    }
    // An allocation and a free per step (allocator churn the summary reports).
    uint64_t ptr = 0x7f0000000000ull + step * 4096;
    w.host_events.push_back(Call(ApiId::cudaMalloc, t, t + 1500, 0));
    w.alloc_samples.push_back({t + 1500, ptr, 1 << 20, live + (1 << 20), kPid,
                               static_cast<uint16_t>(ApiId::cudaMalloc), 0, 0, {}});
    w.host_events.push_back(Call(ApiId::cudaFree, t + 2000, t + 3000, 0));
    w.alloc_samples.push_back({t + 3000, ptr, -(1 << 20), live, kPid, static_cast<uint16_t>(ApiId::cudaFree), 0, 0, {}});
    t += 3500;
    // The step ends with a synchronize that waits for the GPU.
    uint64_t sync_end = std::max(gpu, t) + 2000;
    w.host_events.push_back(Call(ApiId::cudaDeviceSynchronize, t, sync_end, correlation++));
    t = sync_end + 1000;
    w.steps.push_back({step, step_start, t});
  }
  w.meta.first_step = 0;
  w.meta.last_step = w.steps.empty() ? 0 : w.steps.back().step;
  w.meta.start_ns = w.steps.empty() ? 0 : w.steps.front().start_ns;
  w.meta.end_ns = t;
  return w;
}

}  // namespace prof::bench
