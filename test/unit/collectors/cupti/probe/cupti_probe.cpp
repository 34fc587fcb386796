// cupti_probe: drives the CUPTI collector directly (no agent session), the
// way the session does, against whatever libcudart/libcupti the loader
// finds (the simulated stack in integration tests, the toolkit's or a GPU
// machine's otherwise). It launches known work in warmup, in each window and
// between windows, and prints one JSON line per window and per collected
// record, so a test can compare them with the simulator's truth log.
//
//   cupti_probe [--windows N] [--launches K] [--buffer-mb M] [--wait-ms W]
//               [--no-kernels 1]
// --no-kernels skips kernel registration and launches (for NVIDIA's real
// runtime, which would parse the probe's dummy fat binary).
//
// Output lines: {"probe":"window",...meta...} and {"probe":"record",...}.
// Exit 0 unless the CUDA runtime itself cannot be loaded (exit 3).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/clock.h"
#include "collectors/cupti/cupti_collector.h"

namespace {

// Runtime entry points, resolved from the libcudart the loader finds.
struct Runtime {
  void** (*RegisterFatBinary)(void*);
  void (*RegisterFatBinaryEnd)(void**);
  void (*RegisterFunction)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
  cudaError_t (*Malloc)(void**, size_t);
  cudaError_t (*Free)(void*);
  cudaError_t (*StreamCreate)(cudaStream_t*);
  cudaError_t (*StreamSynchronize)(cudaStream_t);
  cudaError_t (*DeviceSynchronize)();
  cudaError_t (*MemcpyAsync)(void*, const void*, size_t, cudaMemcpyKind, cudaStream_t);
  cudaError_t (*MemsetAsync)(void*, int, size_t, cudaStream_t);
  cudaError_t (*LaunchKernel)(const void*, dim3, dim3, void**, size_t, cudaStream_t);
  cudaError_t (*GetDevice)(int*);
};

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*out == nullptr) std::fprintf(stderr, "cupti_probe: %s missing\n", name);
  return *out != nullptr;
}

bool LoadRuntime(Runtime* rt) {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "cupti_probe: %s\n", dlerror());
    return false;
  }
  return Resolve(lib, "__cudaRegisterFatBinary", &rt->RegisterFatBinary) &&
         Resolve(lib, "__cudaRegisterFatBinaryEnd", &rt->RegisterFatBinaryEnd) &&
         Resolve(lib, "__cudaRegisterFunction", &rt->RegisterFunction) && Resolve(lib, "cudaMalloc", &rt->Malloc) &&
         Resolve(lib, "cudaFree", &rt->Free) && Resolve(lib, "cudaStreamCreate", &rt->StreamCreate) &&
         Resolve(lib, "cudaStreamSynchronize", &rt->StreamSynchronize) &&
         Resolve(lib, "cudaDeviceSynchronize", &rt->DeviceSynchronize) &&
         Resolve(lib, "cudaMemcpyAsync", &rt->MemcpyAsync) && Resolve(lib, "cudaMemsetAsync", &rt->MemsetAsync) &&
         Resolve(lib, "cudaLaunchKernel", &rt->LaunchKernel) && Resolve(lib, "cudaGetDevice", &rt->GetDevice);
}

// Host stubs: their addresses stand for kernels, as nvcc's stubs do.
char g_stub_window = 0;
char g_stub_warmup = 0;
char g_stub_between = 0;
unsigned char g_fatbin[64] = {};

struct Work {
  Runtime* rt;
  cudaStream_t stream;
  void* device;
  char* host;
};

bool g_kernels = true;

// The correlation ids of a batch's first and last runtime call, as the
// collector's API-enter callback stamps them into prof::tls_correlation_id
// (0 when CUPTI is not attached): a window's calls, independent of clocks.
struct CorrelationRange {
  uint32_t first = 0;
  uint32_t last = 0;
  template <typename Call>
  void Track(Call&& call) {
    prof::tls_correlation_id = 0;
    call();
    uint32_t id = prof::tls_correlation_id;
    if (id == 0) return;
    if (first == 0) first = id;
    last = id;
  }
};

// One batch: `launches` kernels of the stub, a copy, a memset, an
// allocation and its release, a sync.
CorrelationRange Batch(const Work& w, const void* stub, int launches) {
  CorrelationRange range;
  for (int i = 0; g_kernels && i < launches; ++i) {
    range.Track([&] { w.rt->LaunchKernel(stub, dim3(64), dim3(128), nullptr, 0, w.stream); });
  }
  range.Track([&] { w.rt->MemcpyAsync(w.device, w.host, 4096, cudaMemcpyHostToDevice, w.stream); });
  range.Track([&] { w.rt->MemsetAsync(w.device, 0, 4096, w.stream); });
  void* scratch = nullptr;
  cudaError_t allocated = cudaErrorUnknown;
  range.Track([&] { allocated = w.rt->Malloc(&scratch, 1 << 16); });
  if (allocated == cudaSuccess) range.Track([&] { w.rt->Free(scratch); });
  int device = 0;
  range.Track([&] { w.rt->GetDevice(&device); });  // no device work
  range.Track([&] { w.rt->StreamSynchronize(w.stream); });
  return range;
}

void RegisterKernels(const Runtime& rt) {
  void** module = rt.RegisterFatBinary(g_fatbin);
  static char window_name[] = "_Z13window_kernelv";
  static char warmup_name[] = "_Z13warmup_kernelv";
  static char between_name[] = "_Z14between_kernelv";
  rt.RegisterFunction(module, &g_stub_window, window_name, window_name, -1, nullptr, nullptr, nullptr, nullptr,
                      nullptr);
  rt.RegisterFunction(module, &g_stub_warmup, warmup_name, warmup_name, -1, nullptr, nullptr, nullptr, nullptr,
                      nullptr);
  rt.RegisterFunction(module, &g_stub_between, between_name, between_name, -1, nullptr, nullptr, nullptr, nullptr,
                      nullptr);
  rt.RegisterFatBinaryEnd(module);
}

void PrintWindow(int index, uint64_t start_ns, uint64_t end_ns, const CorrelationRange& calls,
                 const prof::Window& w) {
  const auto& l = w.meta.losses;
  std::printf("{\"probe\":\"window\",\"first_correlation\":%u,\"last_correlation\":%u", calls.first, calls.last);
  std::printf(",\"index\":%d,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
              ",\"mode\":\"%s\",\"has_gpu_timings\":%d,\"records\":%zu,\"device_records_dropped\":%" PRIu64
              ",\"cupti_records_dropped\":%" PRIu64 ",\"device_records_missing\":%" PRIu64
              ",\"unknown_activity_kinds\":%" PRIu64 ",\"cupti_api_version\":%u}\n",
              index, start_ns, end_ns, w.meta.cupti_mode.c_str(), w.meta.has_gpu_timings ? 1 : 0,
              w.device_records.size(), l.device_records_dropped, l.cupti_records_dropped, l.device_records_missing,
              l.unknown_activity_kinds, w.meta.cupti_api_version);
  for (const auto& r : w.device_records) {
    std::printf("{\"probe\":\"record\",\"window\":%d,\"kind\":%d,\"correlation\":%u,\"start_ns\":%" PRIu64
                ",\"end_ns\":%" PRIu64 ",\"stream\":%u,\"device\":%u,\"bytes\":%" PRIu64 ",\"name\":\"%s\"}\n",
                index, r.kind, r.correlation_id, r.start_ns, r.end_ns, r.stream_id, r.device_id, r.bytes,
                w.String(r.name_id).c_str());
  }
  std::fflush(stdout);
}

uint64_t ArgValue(int argc, char** argv, const char* flag, uint64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int windows = static_cast<int>(ArgValue(argc, argv, "--windows", 2));
  const int launches = static_cast<int>(ArgValue(argc, argv, "--launches", 20));
  prof::Config config;
  config.buffer_bytes = ArgValue(argc, argv, "--buffer-mb", 256) << 20;
  config.flush_timeout_ns = ArgValue(argc, argv, "--wait-ms", 3000) * 1'000'000;
  if (const char* lib = std::getenv("PROF_CUPTI_LIB")) config.cupti_lib = lib;

  g_kernels = ArgValue(argc, argv, "--no-kernels", 0) == 0;
  Runtime rt{};
  if (!LoadRuntime(&rt)) return 3;
  if (g_kernels) RegisterKernels(rt);

  Work work{&rt, nullptr, nullptr, nullptr};
  static char host[4096];
  work.host = host;
  rt.StreamCreate(&work.stream);
  rt.Malloc(&work.device, 4096);

  auto collector = prof::MakeCuptiCollector();
  Batch(work, &g_stub_between, 2);  // before anything is attached
  for (int i = 0; i < windows; ++i) {
    collector->Attach(config);
    Batch(work, &g_stub_warmup, 3);
    uint64_t start_ns = prof::NowNs();
    collector->BeginRecord(start_ns);
    CorrelationRange calls = Batch(work, &g_stub_window, launches);
    uint64_t end_ns = prof::NowNs();
    if (i + 1 == windows) {
      collector->Finish();
    } else {
      collector->Pause();
    }
    prof::Window w;
    collector->CollectWindow(start_ns, end_ns, prof::NowNs() + config.flush_timeout_ns, &w);
    PrintWindow(i, start_ns, end_ns, calls, w);
    Batch(work, &g_stub_between, 2);  // between windows, and after the last
  }
  rt.DeviceSynchronize();
  rt.Free(work.device);
  std::printf("{\"probe\":\"done\",\"mode\":\"%s\"}\n", collector->Mode().c_str());
  collector->OnExit();
  return 0;
}
