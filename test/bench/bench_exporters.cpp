// Exporter throughput on a hand-built window of 1M events (host events +
// device records): Chrome trace JSON plain and gzip, and the summary.
// Throughput is per core: events divided by the exporting thread's CPU time,
// so another process on the machine slows the wall clock but not the figure.
// Rounds interleave the three exporters; figures are medians over rounds.
//
// --trace-out PATH also writes the plain trace there once, for
// kernel_event_bytes.py (kernel event size against Kineto's).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "exporters/files/byte_sink.h"
#include "exporters/trace/chrome_trace.h"
#include "exporters/files/gzip_sink.h"
#include "exporters/summary/summary.h"
#include "test/bench/harness.h"
#include "test/bench/synthetic_window.h"

namespace prof::bench {
namespace {

// Counts bytes and drops them: the figure is the exporter, not the disk.
class CountingSink final : public ByteSink {
 public:
  bool Append(const char* data, size_t size) override {
    DoNotOptimize(data);
    bytes_ += size;
    return true;
  }
  bool Finish() override { return true; }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_ = 0;
};

// A "VmRSS:"-style line of /proc/self/status, in KiB (0 when missing).
uint64_t StatusKb(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, key, std::strlen(key)) == 0) kb = std::strtoull(line + std::strlen(key), nullptr, 10);
  }
  std::fclose(f);
  return kb;
}

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
bool ResetPeakRss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

struct Run {
  double cpu_ns = 0;
  uint64_t bytes = 0;
};

Run ChromePlain(const Window& w) {
  CountingSink sink;
  uint64_t t0 = ThreadCpuNs();
  bool ok = WriteChromeTrace(w, "bench.pt.trace.json", sink);  // it finishes the sink
  uint64_t t1 = ThreadCpuNs();
  if (!ok) std::fprintf(stderr, "bench_exporters: WriteChromeTrace failed\n");
  return {static_cast<double>(t1 - t0), sink.bytes()};
}

Run ChromeGzip(const Window& w) {
  CountingSink file;
  uint64_t t0 = ThreadCpuNs();
  bool ok = false;
  {
    GzipSink zipped(file);
    ok = WriteChromeTrace(w, "bench.pt.trace.json.gz", zipped);  // writes the gzip trailer
  }
  uint64_t t1 = ThreadCpuNs();
  if (!ok) std::fprintf(stderr, "bench_exporters: gzip trace failed\n");
  return {static_cast<double>(t1 - t0), file.bytes()};
}

Run Summary(const Window& w) {
  uint64_t t0 = ThreadCpuNs();
  std::string text = RenderSummary(w);
  uint64_t t1 = ThreadCpuNs();
  return {static_cast<double>(t1 - t0), text.size()};
}

int Main(int argc, char** argv) {
  const char* trace_out = nullptr;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--trace-out") == 0 && i + 1 < argc) {
      trace_out = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  Options opt = ParseOptions(static_cast<int>(rest.size()), rest.data());
  PinToOneCpu(opt.pin);
  const uint64_t events = opt.smoke ? 20'000 : 1'000'000;
  const int rounds = opt.rounds > 0 ? opt.rounds : (opt.smoke ? 1 : 7);

  Window w = MakeSyntheticWindow(events);
  const double n = static_cast<double>(EventCount(w));
  uint64_t kernels = 0;
  for (const DeviceRecord& r : w.device_records) kernels += r.kind == static_cast<uint8_t>(DeviceKind::kKernel);

  if (trace_out != nullptr) {
    std::string text;
    StringSink sink(&text);
    WriteChromeTrace(w, "bench.pt.trace.json", sink);
    FILE* f = std::fopen(trace_out, "wb");
    if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
      std::fprintf(stderr, "bench_exporters: cannot write %s\n", trace_out);
      return 1;
    }
    std::fclose(f);
  }

  // Transient memory of one plain export: peak RSS reset, export, peak
  // minus the RSS before (the window itself is already resident).
  double export_peak_mb = -1;
  {
    uint64_t before = StatusKb("VmRSS:");
    if (ResetPeakRss() && before > 0) {
      ChromePlain(w);
      export_peak_mb = static_cast<double>(StatusKb("VmHWM:") - before) / 1024.0;
    }
  }
  std::vector<double> plain_rate, gzip_rate, summary_rate;
  Run plain, gz, summary;
  // Rotate the order each round, as harness.h explains.
  for (int r = -1; r < rounds; ++r) {  // round -1 warms caches and the allocator
    for (int k = 0; k < 3; ++k) {
      int which = (k + (r < 0 ? 0 : r)) % 3;
      if (which == 0) plain = ChromePlain(w);
      if (which == 1) gz = ChromeGzip(w);
      if (which == 2) summary = Summary(w);
    }
    if (r < 0) continue;
    plain_rate.push_back(n / plain.cpu_ns * 1e9);
    gzip_rate.push_back(n / gz.cpu_ns * 1e9);
    summary_rate.push_back(n / summary.cpu_ns * 1e9);
  }
  std::string note = std::to_string(static_cast<uint64_t>(n)) + " events (" + std::to_string(kernels) +
                     " kernels), events / thread CPU second";
  EmitFigure("export_chrome_events_per_s", Summarize(plain_rate), "events/s", note);
  EmitFigure("export_gzip_events_per_s", Summarize(gzip_rate), "events/s", note);
  EmitFigure("export_summary_events_per_s", Summarize(summary_rate), "events/s", note);
  EmitValue("export_chrome_bytes_per_event", static_cast<double>(plain.bytes) / n, "B/event");
  EmitValue("export_gzip_bytes_per_event", static_cast<double>(gz.bytes) / n, "B/event");
  if (export_peak_mb >= 0) {
    EmitValue("export_chrome_peak_mb", export_peak_mb, "MB",
              "RSS the plain trace export adds at its peak, " + std::to_string(static_cast<uint64_t>(n)) + " events");
  }
  EmitValue("export_summary_bytes_per_event", static_cast<double>(summary.bytes) / n, "B/event",
            std::to_string(summary.bytes) + " bytes in all");
  return 0;
}

}  // namespace
}  // namespace prof::bench

int main(int argc, char** argv) { return prof::bench::Main(argc, argv); }
