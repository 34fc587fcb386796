// gen_trace: writes the large traces the `prof` tool benchmarks read, on the
// fly (never committed):
//
//   gen_trace libprof STEPS LAUNCHES_PER_STEP OUT[.gz]
//       libprof's own trace of the synthetic launch-bound window (the
//       exporter the agent runs, on a hand-built Window of STEPS steps)
//   gen_trace kineto MB OUT[.gz]
//       a Kineto-shaped trace of about MB megabytes of JSON: per step a
//       ProfilerStep#N annotation, python_function and cpu_op stacks, each
//       launch a cudaLaunchKernel with its kernel and an ac2g flow, a copy
//       with its cudaMemcpyAsync, and a cudaStreamSynchronize
//
// Prints one JSON line: {"bytes": <JSON bytes>, "events": <events>}.
#include <zlib.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "exporters/files/byte_sink.h"
#include "exporters/trace/chrome_trace.h"
#include "exporters/files/gzip_sink.h"
#include "test/bench/synthetic_window.h"

namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Counts the JSON bytes on their way to a file (plain, or through gzip).
class FileSink final : public prof::ByteSink {
 public:
  explicit FileSink(FILE* f) : f_(f) {}
  bool Append(const char* data, size_t size) override {
    bytes_ += size;
    return std::fwrite(data, 1, size, f_) == size;
  }
  bool Finish() override { return std::fflush(f_) == 0; }
  uint64_t bytes() const { return bytes_; }

 private:
  FILE* f_;
  uint64_t bytes_ = 0;
};

class CountingSink final : public prof::ByteSink {
 public:
  explicit CountingSink(prof::ByteSink& next) : next_(next) {}
  bool Append(const char* data, size_t size) override {
    bytes_ += size;
    return next_.Append(data, size);
  }
  bool Finish() override { return next_.Finish(); }
  uint64_t bytes() const { return bytes_; }

 private:
  prof::ByteSink& next_;
  uint64_t bytes_ = 0;
};

int Libprof(uint64_t steps, uint32_t launches, const std::string& out) {
  // Per step: `launches` launches (call + kernel), a copy (call + record),
  // a synchronize and a few allocations: about 2 * launches + 6 events.
  uint64_t events = steps * (2ull * launches + 6);
  prof::Window w = prof::bench::MakeSyntheticWindow(events, launches);
  FILE* f = std::fopen(out.c_str(), "wb");
  if (!f) {
    std::perror(out.c_str());
    return 1;
  }
  FileSink file(f);
  bool ok;
  uint64_t json_bytes;
  if (EndsWith(out, ".gz")) {
    prof::GzipSink zipped(file);
    CountingSink counted(zipped);
    ok = prof::WriteChromeTrace(w, "bench.pt.trace.json.gz", counted);
    json_bytes = counted.bytes();
  } else {
    CountingSink counted(file);
    ok = prof::WriteChromeTrace(w, "bench.pt.trace.json", counted);
    json_bytes = counted.bytes();
  }
  ok = std::fclose(f) == 0 && ok;
  std::printf("{\"bytes\": %llu, \"events\": %llu, \"steps\": %zu}\n", static_cast<unsigned long long>(json_bytes),
              static_cast<unsigned long long>(prof::bench::EventCount(w)), w.steps.size());
  return ok ? 0 : 1;
}

// Plain or gzip output through zlib's gzwrite.
class Out {
 public:
  bool Open(const std::string& path) {
    file_ = gzopen(path.c_str(), EndsWith(path, ".gz") ? "wb6" : "wbT");
    if (file_) gzbuffer(file_, 1 << 20);
    return file_ != nullptr;
  }
  void Write(const char* s, size_t n) {
    bytes_ += n;
    ok_ = ok_ && gzwrite(file_, s, static_cast<unsigned>(n)) == static_cast<int>(n);
  }
  void Printf(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char line[2048];
    va_list args;
    va_start(args, format);
    int n = std::vsnprintf(line, sizeof(line), format, args);
    va_end(args);
    if (n > 0) Write(line, static_cast<size_t>(std::min<int>(n, sizeof(line) - 1)));
  }
  bool Close() { return gzclose(file_) == Z_OK && ok_; }
  uint64_t bytes() const { return bytes_; }

 private:
  gzFile file_ = nullptr;
  uint64_t bytes_ = 0;
  bool ok_ = true;
};

int Kineto(uint64_t megabytes, const std::string& path) {
  Out out;
  if (!out.Open(path)) {
    std::perror(path.c_str());
    return 1;
  }
  const uint64_t limit = megabytes << 20;
  const int pid = 4242, tid = 4242, device = 0, stream = 7;
  const char* kernels[] = {
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
      "ampere_sgemm_128x64_tn",
      "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, "
      "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
      "unsigned int, float, 4>)",
      "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_"
      "128x128_32x3_nn_align4::Params)"};
  const char* ops[] = {"aten::add", "aten::mm", "aten::mean", "aten::linear"};
  out.Printf(
      "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", "
      "\"totalGlobalMem\": 85029158912, \"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, "
      "\"maxThreadsPerMultiprocessor\": 2048, \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, "
      "\"warpSize\": 32, \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472, \"numSms\": 132, "
      "\"sharedMemPerBlockOptin\": 232448}],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, "
      "\"world_size\": 1},\n  \"traceEvents\": [\n");
  uint64_t events = 0, correlation = 1, external = 1;
  double t = 1712195495000000.0;  // absolute epoch µs, as Kineto writes
  bool first = true;
  auto sep = [&]() -> const char* {
    const char* s = first ? "  " : ",\n  ";
    first = false;
    ++events;
    return s;
  };
  for (uint64_t step = 0; step == 0 || out.bytes() < limit; ++step) {
    const int launches = 40;
    double step_start = t, step_dur = launches * 12.0 + 60.0;
    out.Printf("%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%llu\", \"pid\": %d, "
               "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"External id\": %llu, \"Record function id\": 0, "
               "\"Ev Idx\": %llu}}",
               sep(), static_cast<unsigned long long>(step), pid, tid, step_start, step_dur,
               static_cast<unsigned long long>(external++), static_cast<unsigned long long>(events));
    out.Printf("%s{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(42): step\", \"pid\": %d, "
               "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"Python parent id\": 1, \"Python id\": %llu, "
               "\"Python thread\": 0}}",
               sep(), pid, tid, step_start + 0.5, step_dur - 1.0, static_cast<unsigned long long>(external++));
    t = step_start + 1.0;
    for (int i = 0; i < launches; ++i) {
      int k = i % 4;
      uint64_t c = correlation++;
      unsigned long long ext = external++;
      out.Printf("%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                 "\"dur\": 10.000, \"args\": {\"External id\": %llu, \"Sequence number\": %llu, \"Fwd thread id\": 0, "
                 "\"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\", \"1\"], \"Input type\": [\"float\", "
                 "\"float\", \"Scalar\"], \"Input Strides\": [[1024, 1], [1024, 1], []], \"Input Dims\": [[512, 1024], "
                 "[512, 1024], []], \"Ev Idx\": %llu}}",
                 sep(), ops[k], pid, tid, t, ext, ext, static_cast<unsigned long long>(events));
      out.Printf("%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": %d, \"tid\": %d, "
                 "\"ts\": %.3f, \"dur\": 4.000, \"args\": {\"External id\": %llu, \"cbid\": 211, \"correlation\": %llu}}",
                 sep(), pid, tid, t + 3.0, ext, static_cast<unsigned long long>(c));
      out.Printf("%s{\"ph\": \"s\", \"id\": %llu, \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"cat\": \"ac2g\", "
                 "\"name\": \"ac2g\"}",
                 sep(), static_cast<unsigned long long>(c), pid, tid, t + 3.0);
      double kt = t + 8.0;
      out.Printf("%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                 "\"dur\": 9.000, \"args\": {\"External id\": %llu, \"queued\": 0, \"device\": %d, \"context\": 1, "
                 "\"stream\": %d, \"correlation\": %llu, \"registers per thread\": 32, \"shared memory\": 0, "
                 "\"blocks per SM\": 4.5, \"warps per SM\": 18.0, \"grid\": [512, 1, 1], \"block\": [128, 1, 1], "
                 "\"est. achieved occupancy %%\": 28}}",
                 sep(), kernels[k], device, stream, kt, ext, device, stream, static_cast<unsigned long long>(c));
      out.Printf("%s{\"ph\": \"f\", \"id\": %llu, \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"cat\": \"ac2g\", "
                 "\"name\": \"ac2g\", \"bp\": \"e\"}",
                 sep(), static_cast<unsigned long long>(c), device, stream, kt);
      t += 12.0;
    }
    uint64_t c = correlation++;
    out.Printf("%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": %d, \"tid\": %d, "
               "\"ts\": %.3f, \"dur\": 6.000, \"args\": {\"External id\": %llu, \"cbid\": 41, \"correlation\": %llu}}",
               sep(), pid, tid, t, static_cast<unsigned long long>(external++), static_cast<unsigned long long>(c));
    out.Printf("%s{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": %d, "
               "\"tid\": %d, \"ts\": %.3f, \"dur\": 5.000, \"args\": {\"External id\": %llu, \"device\": %d, "
               "\"context\": 1, \"stream\": %d, \"correlation\": %llu, \"bytes\": 4096, \"memory bandwidth (GB/s)\": "
               "0.8192}}",
               sep(), device, stream, t + 20.0, static_cast<unsigned long long>(external - 1), device, stream,
               static_cast<unsigned long long>(c));
    out.Printf("%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": %d, "
               "\"tid\": %d, \"ts\": %.3f, \"dur\": 30.000, \"args\": {\"External id\": %llu, \"cbid\": 131, "
               "\"correlation\": %llu}}",
               sep(), pid, tid, t + 8.0, static_cast<unsigned long long>(external++),
               static_cast<unsigned long long>(correlation++));
    t = step_start + step_dur + 5.0;
  }
  out.Printf("\n  ],\n  \"traceName\": \"kineto_shaped.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n"
             "  \"baseTimeNanoseconds\": 1712190000000000000\n}\n");
  bool ok = out.Close();
  std::printf("{\"bytes\": %llu, \"events\": %llu}\n", static_cast<unsigned long long>(out.bytes()),
              static_cast<unsigned long long>(events));
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && !std::strcmp(argv[1], "libprof")) {
    return Libprof(std::strtoull(argv[2], nullptr, 10), static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)),
                   argv[4]);
  }
  if (argc == 4 && !std::strcmp(argv[1], "kineto")) return Kineto(std::strtoull(argv[2], nullptr, 10), argv[3]);
  std::fprintf(stderr, "usage: gen_trace libprof STEPS LAUNCHES_PER_STEP OUT[.gz] | gen_trace kineto MB OUT[.gz]\n");
  return 2;
}
