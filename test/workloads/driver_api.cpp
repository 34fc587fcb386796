// driver_api: a driver-API program, as written before the runtime existed
// or by JIT users: its own context (cuCtxCreate), modules from a cubin and
// a fat binary on disk (cuModuleLoadData, cuModuleLoadFatBinary, cuModuleLoad),
// the JIT linker (cuLink*), kernels by name (cuModuleGetFunction,
// cuLaunchKernel), a module variable (cuModuleGetGlobal) and typed copies
// (cuMemcpyHtoD/DtoH/DtoD and Async). Prints "<step> ok" lines and
// "failures=<n>"; exit 1 if any check failed. With --steps N, a driver-API
// training loop after the copies: per step two cuLaunchKernel of `scale` on
// a stream and a cuStreamSynchronize (as Triton-compiled code launches).
//
//   driver_api --cubin PATH --fatbin PATH [--iterations N] [--steps N]
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int g_failures = 0;
int g_steps = 0;  // --steps

// The checks of api_families.cu, for CUresult: each workload is one source file built alone.
bool Expect(CUresult got, CUresult want, const char* what, int line) {
  if (got == want) return true;
  const char* name = nullptr;
  cuGetErrorName(got, &name);
  std::printf("line %d: %s -> %s (%d), expected %d\n", line, what, name ? name : "?", static_cast<int>(got),
              static_cast<int>(want));
  ++g_failures;
  return false;
}
#define CHECK(call) Expect((call), CUDA_SUCCESS, #call, __LINE__)
#define EXPECT_ERROR(call, code) Expect((call), (code), #call, __LINE__)
#define REQUIRE(cond)                                         \
  do {                                                        \
    if (!(cond)) {                                            \
      std::printf("line %d: %s is false\n", __LINE__, #cond); \
      ++g_failures;                                           \
    }                                                         \
  } while (0)

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Launch(CUfunction f, CUdeviceptr data, int n, CUstream stream) {
  void* args[] = {&data, &n};
  CHECK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
}

void Run(const std::vector<char>& cubin, const std::string& cubin_path, const std::vector<char>& fatbin) {
  CUdevice device = 0;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context = nullptr;
  CHECK(cuCtxCreate(&context, nullptr, 0, device));
  CUcontext current = nullptr;
  CHECK(cuCtxGetCurrent(&current));
  REQUIRE(current == context);

  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, cubin.data()));
  CUfunction scale = nullptr, fill = nullptr, missing = nullptr;
  CHECK(cuModuleGetFunction(&scale, module, "scale"));
  CHECK(cuModuleGetFunction(&fill, module, "fill"));
  EXPECT_ERROR(cuModuleGetFunction(&missing, module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  CUdeviceptr factor = 0;
  size_t factor_bytes = 0;
  CHECK(cuModuleGetGlobal(&factor, &factor_bytes, module, "factor"));
  REQUIRE(factor_bytes == sizeof(float));
  float value = 0;
  CHECK(cuMemcpyDtoH(&value, factor, sizeof value));
  REQUIRE(value == 2.0f);  // the image's initial value
  value = 3.0f;
  CHECK(cuMemcpyHtoD(factor, &value, sizeof value));
  std::printf("module ok\n");

  const int n = 1 << 16;
  std::vector<float> host(n), back(n, 0.0f);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  CUdeviceptr data = 0, other = 0;
  CHECK(cuMemAlloc(&data, n * sizeof(float)));
  CHECK(cuMemAlloc(&other, n * sizeof(float)));
  CHECK(cuMemcpyHtoD(data, host.data(), n * sizeof(float)));
  Launch(scale, data, n, nullptr);
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoD(other, data, n * sizeof(float)));
  CHECK(cuMemcpyDtoH(back.data(), other, n * sizeof(float)));
  std::printf("copies ok\n");

  CUstream stream = nullptr;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemcpyHtoDAsync(data, host.data(), n * sizeof(float), stream));
  Launch(scale, data, n, stream);
  CHECK(cuMemcpyDtoDAsync(other, data, n * sizeof(float), stream));
  CHECK(cuMemcpyDtoHAsync(back.data(), other, n * sizeof(float), stream));
  CHECK(cuStreamSynchronize(stream));
  if (g_steps > 0) {
    for (int step = 0; step < g_steps; ++step) {
      Launch(scale, data, n, stream);
      Launch(scale, other, n, stream);
      CHECK(cuStreamSynchronize(stream));
    }
    std::printf("steps ok\n");
  }

  // The JIT linker: the cubin linked into a new image, loaded and launched.
  CUlinkState link = nullptr;
  CHECK(cuLinkCreate(0, nullptr, nullptr, &link));
  CHECK(cuLinkAddData(link, CU_JIT_INPUT_CUBIN, const_cast<char*>(cubin.data()), cubin.size(), "kernels", 0,
                      nullptr, nullptr));
  CHECK(cuLinkAddFile(link, CU_JIT_INPUT_CUBIN, cubin_path.c_str(), 0, nullptr, nullptr));
  void* linked = nullptr;
  size_t linked_size = 0;
  CHECK(cuLinkComplete(link, &linked, &linked_size));
  REQUIRE(linked != nullptr && linked_size > 0);
  CUmodule linked_module = nullptr;
  CHECK(cuModuleLoadData(&linked_module, linked));
  CUfunction linked_fill = nullptr;
  CHECK(cuModuleGetFunction(&linked_fill, linked_module, "fill"));
  CHECK(cuLinkDestroy(link));
  {
    int count = n;
    float fill_value = 1.0f;
    void* args[] = {&data, &count, &fill_value};
    CHECK(cuLaunchKernel(linked_fill, n / 256, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }
  std::printf("link ok\n");

  // A fat binary, from memory and from its file.
  CUmodule fat_module = nullptr, file_module = nullptr;
  CHECK(cuModuleLoadFatBinary(&fat_module, fatbin.data()));
  CUfunction fat_scale = nullptr;
  CHECK(cuModuleGetFunction(&fat_scale, fat_module, "scale"));
  Launch(fat_scale, data, n, stream);
  CHECK(cuModuleLoad(&file_module, cubin_path.c_str()));
  CUmodule absent = nullptr;
  EXPECT_ERROR(cuModuleLoad(&absent, "/nonexistent.cubin"),
               CUDA_ERROR_FILE_NOT_FOUND);
  CHECK(cuStreamSynchronize(stream));
  std::printf("fatbin ok\n");

  CHECK(cuModuleUnload(file_module));
  CHECK(cuModuleUnload(fat_module));
  CHECK(cuModuleUnload(linked_module));
  CHECK(cuModuleUnload(module));
  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(other));
  CHECK(cuMemFree(data));
  CHECK(cuCtxDestroy(context));
}

}  // namespace

int main(int argc, char** argv) {
  std::string cubin_path, fatbin_path;
  int iterations = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cubin") && i + 1 < argc) {
      cubin_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--fatbin") && i + 1 < argc) {
      fatbin_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      g_steps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: driver_api --cubin PATH --fatbin PATH [--iterations N] [--steps N]\n");
      return 2;
    }
  }
  const std::vector<char> cubin = ReadFile(cubin_path), fatbin = ReadFile(fatbin_path);
  if (cubin.empty() || fatbin.empty()) {
    std::fprintf(stderr, "driver_api: cannot read %s or %s\n", cubin_path.c_str(), fatbin_path.c_str());
    return 2;
  }
  if (!CHECK(cuInit(0))) return 1;
  for (int i = 0; i < iterations; ++i) Run(cubin, cubin_path, fatbin);
  std::printf("failures=%d\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
