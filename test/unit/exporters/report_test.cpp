// The step-time and GPU idle breakdowns of the summary, folded stacks, and
// the report page's data and safety, on hand-built windows.
#include "exporters/report/report.h"

#include <dirent.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "exporters/summary/summary.h"
#include "exporters/files/window_files.h"
#include "exporters/common/window_index.h"
#include "test/unit/exporters/temp_files.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using testing::WindowBuilder;
constexpr uint64_t us = 1000;

// Step 0 [0, 1000 µs), step 1 [1000, 2000 µs) with nothing in it.
//   cudaLaunchKernel [100, 110) -> kernel k [120, 300) on stream 7
//   cudaLaunchKernel [130, 140) -> ncclDevKernel_AllReduce [250, 400) on stream 8
//   cudaMemcpy [400, 600) -> copy [450, 500)
//   cudaMemsetAsync [560, 565) on another thread -> memset [700, 720)
//   cudaDeviceSynchronize [600, 800)
Window Breakdown() {
  WindowBuilder b;
  b.Step(0, 0, 1000 * us);
  b.Step(1, 1000 * us, 2000 * us);
  b.Launch("k", 100 * us, 10 * us, 120 * us, 300 * us, 1);
  b.Launch("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 130 * us, 10 * us, 250 * us, 400 * us, 2, 8);
  b.Call(ApiId::cudaMemcpy, 400 * us, 600 * us, 3).copy_kind = 1;
  b.Copy(testing::kCuptiHtoD, testing::kCuptiPinned, testing::kCuptiDevice, 4096, 450 * us, 500 * us, 3);
  b.Call(ApiId::cudaMemsetAsync, 560 * us, 565 * us, 4, 99);
  b.Record(DeviceKind::kMemset, 700 * us, 720 * us, 4).bytes = 1024;
  b.Call(ApiId::cudaDeviceSynchronize, 600 * us, 800 * us);
  return b.Build();
}

TEST_CASE("the step-time breakdown counts each moment once, GPU work first, then what the host was in",
          "[summary][report]") {
  Summary s = ComputeSummary(Breakdown());
  REQUIRE(s.steps.size() == 2);
  const TimeBreakdown& b = s.steps[0].breakdown;
  CHECK(b.kernel_ns == 180 * us);   // k, and the part of the NCCL kernel under it
  CHECK(b.comm_ns == 100 * us);     // the NCCL kernel alone
  CHECK(b.memcpy_ns == 50 * us);
  CHECK(b.memset_ns == 20 * us);
  CHECK(b.runtime_ns == 160 * us);  // the launch call before any work, the memcpy call around its copy
  CHECK(b.sync_ns == 180 * us);     // the synchronize, less the memset inside it
  CHECK(b.other_ns == 310 * us);
  CHECK(b.total() == s.steps[0].wall_ns);
  CHECK(b.kernel_ns + b.comm_ns + b.memcpy_ns + b.memset_ns == s.steps[0].gpu_busy_ns);
  CHECK(s.steps[1].breakdown.other_ns == 1000 * us);
  CHECK(s.steps[1].breakdown.total() == 1000 * us);
  CHECK(s.breakdown.total() == 2000 * us);
  CHECK(s.breakdown.other_ns == 1310 * us);
  std::string text = RenderSummary(s);
  CHECK(text.find("== Step time breakdown") != std::string::npos);
  CHECK(std::regex_search(text, std::regex(R"( 0\s+1\.000\s+0\.180\s+0\.100\s+0\.050\s+0\.020\s+0\.160\s+0\.180\s+0\.310\n)")));
  CHECK(std::regex_search(text, std::regex(R"( window\s+2\.000\s+0\.180\s+0\.100\s+0\.050\s+0\.020\s+0\.160\s+0\.180\s+1\.310\n)")));
}

TEST_CASE("GPU idle on a stream splits as HTA's host wait, kernel wait and other", "[summary][report]") {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  b.Launch("a", 50'000, 1'000, 100'000, 200'000, 1);
  b.Launch("b", 205'000, 1'000, 210'000, 300'000, 2);  // queued after a ended: host wait 10 µs
  b.Launch("c", 150'000, 1'000, 300'020, 400'000, 3);  // queued in time, 20 ns gap: kernel wait
  b.Launch("d", 160'000, 1'000, 500'000, 600'000, 4);  // queued in time, 100 µs gap: other
  b.Launch("e", 170'000, 1'000, 100'000, 150'000, 5, 9);  // alone on its stream: no gap
  Summary s = ComputeSummary(b.Build());
  REQUIRE(s.stream_idle.size() == 2);
  const StreamIdleRow& r = s.stream_idle[0];
  CHECK(r.stream == 7);
  CHECK(r.gaps == 3);
  CHECK(r.host_wait_ns == 10'000);
  CHECK(r.kernel_wait_ns == 20);
  CHECK(r.other_ns == 100'000);
  CHECK(s.stream_idle[1].gaps == 0);
  CHECK(RenderSummary(s).find("GPU idle between work on a stream") != std::string::npos);
}

// Python frames: <module> at train.py:5 -> step at train.py:20 -> the launch.
Window WithPython() {
  WindowBuilder b;
  Window& w = b.window();
  w.python.status = "on (CPython 3.11.2)";
  uint32_t file = b.Str("/home/u/train.py"), module = b.Str("<module>"), step = b.Str("step");
  w.python.frames = {PyFrame{}, PyFrame{file, module, 5, 0}, PyFrame{file, step, 20, 0}};
  w.python.stacks = {{}, {}, {2, 1}};  // innermost first
  b.Step(0, 0, 1'000'000);
  b.Launch("k;odd", 100'000, 5'000, 110'000, 300'000, 1);
  w.host_events.back().stack_id = 2;
  b.Launch("k;odd", 400'000, 5'000, 410'000, 500'000, 2);
  w.host_events.back().stack_id = 2;
  b.Launch("other", 600'000, 5'000, 610'000, 620'000, 3);  // no stack
  return b.Build();
}

TEST_CASE("folded stacks: kernel time by Python stack, outermost first, adding up to the kernel time",
          "[report]") {
  Window w = WithPython();
  std::string folded = FoldedStacks(w, WindowIndex(w));
  CHECK(folded ==
        "train.py:5 in <module>;train.py:20 in step;cudaLaunchKernel;k,odd 280000\n"
        "(no Python frames);cudaLaunchKernel;other 10000\n");
  // No Python at all: the stack starts at the CUDA call.
  Window plain = Breakdown();
  std::string lines = FoldedStacks(plain, WindowIndex(plain));
  CHECK(lines == "cudaLaunchKernel;k 180000\ncudaLaunchKernel;ncclDevKernel_AllReduce_Sum_f32_RING_LL 150000\n");
}

nlohmann::json PageData(const std::string& page) {
  std::string open = "<script type=\"application/json\" id=\"prof-data\">";
  size_t a = page.find(open);
  REQUIRE(a != std::string::npos);
  a += open.size();
  size_t e = page.find("</script>", a);
  REQUIRE(e != std::string::npos);
  return nlohmann::json::parse(page.substr(a, e - a));
}

TEST_CASE("the page's data are the summary's numbers, and its flame graphs add up", "[report]") {
  Window w = WithPython();
  WindowIndex index(w);
  Summary s = ComputeSummary(w, index);
  nlohmann::json data = PageData(RenderReportPage("t", {ReportWindowJson(w, index, s, "label", "x.pt.trace.json")}));
  REQUIRE(data["windows"].size() == 1);
  const nlohmann::json& p = data["windows"][0];
  CHECK(p["header"] == SummaryHeader(s));
  REQUIRE(p["kernels"].size() == s.kernels.size());
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    CHECK(p["kernels"][i]["name"] == s.kernels[i].name);
    CHECK(p["kernels"][i]["total"] == s.kernels[i].total_ns);
    CHECK(p["kernels"][i]["med"] == s.kernels[i].median_ns);
  }
  CHECK(p["steps"][0]["breakdown"][6] == s.steps[0].breakdown.other_ns);
  CHECK(p["call_sites"][0]["site"] == "train.py:20 in step");
  CHECK(p["call_sites"][0]["gpu"] == 280'000);
  // The kernel flame graph: root total = kernel time; leaves are kernels.
  const nlohmann::json& root = p["flame"]["kernel"];
  CHECK(root[1] == 290'000);
  const auto& strings = p["strings"];
  const nlohmann::json& module = root[2][0];
  CHECK(strings[module[0].get<size_t>()] == "train.py:5 in <module>");
  CHECK(module[1] == 280'000);
  const nlohmann::json& leaf = module[2][0][2][0][2][0];  // step -> cudaLaunchKernel -> kernel
  CHECK(strings[leaf[0].get<size_t>()] == "k;odd");
  CHECK(leaf[2].empty());
  CHECK(p["trace_file"] == "x.pt.trace.json");
}

TEST_CASE("the page is self-contained and no name can end its data block", "[report]") {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000);
  const std::string evil = "</script><script src=\"https://example.com/x.js\"></script><!--";
  b.Launch(evil, 100'000, 5'000, 110'000, 300'000, 1);
  Window w = b.Build();
  WindowIndex index(w);
  std::string page = RenderReportPage("<b>title</b>", {ReportWindowJson(w, index, ComputeSummary(w, index), "l", "")});
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  CHECK(closes == 2);  // the data block's and the script's
  CHECK(page.find("<!--") == std::string::npos);
  CHECK(page.find("<b>title</b>") == std::string::npos);
  // Nothing to fetch: no src or href attribute naming another resource.
  CHECK_FALSE(std::regex_search(page, std::regex(R"(<(script|link|img|iframe)[^>]*\s(src|href)\s*=)", std::regex::icase)));
  CHECK(page.find("default-src 'none'") != std::string::npos);
  CHECK(PageData(page)["windows"][0]["kernels"][0]["name"] == evil);
}

TEST_CASE("a window of 100,000 kernels gives a page of a few hundred KB", "[report]") {
  WindowBuilder b;
  b.Step(0, 0, 1'000'000'000);
  for (uint32_t i = 0; i < 100'000; ++i) {
    uint64_t t = uint64_t{i} * 10'000;
    b.Launch("kernel_" + std::to_string(i % 50), t, 2'000, t + 3'000, t + 8'000, i + 1, 7 + i % 4);
  }
  Window w = b.Build();
  WindowIndex index(w);
  std::string page = RenderReportPage("big", {ReportWindowJson(w, index, ComputeSummary(w, index), "l", "")});
  CHECK(page.size() < 1'500'000);
  nlohmann::json data = PageData(page);
  size_t items = 0;
  for (const auto& lane : data["windows"][0]["timeline"]["lanes"]) items += lane["items"].size();
  CHECK(items <= 5 * (kTimelineBins + 1));  // 4 streams and a thread, each at most one item per bin
  uint64_t count = 0;
  for (const auto& lane : data["windows"][0]["timeline"]["lanes"]) {
    if (lane["kind"] == "gpu") {
      for (const auto& it : lane["items"]) count += it[4].get<uint64_t>();
    }
  }
  CHECK(count == 100'000);  // merged, never lost
}

TEST_CASE("a thread's timeline lane holds its calls and its CUPTI-only calls in start order, a record first at a tie",
          "[report]") {
  // A span of 2,000,000 ns: one bin is 1,000 ns, so items 1 µs or more apart stay apart.
  WindowBuilder b;
  b.Step(0, 0, 2'000'000);
  b.Call(ApiId::cudaLaunchKernel, 10'000, 12'000, 1);
  b.Call(ApiId::cudaDeviceSynchronize, 50'000, 60'000);
  b.Call(ApiId::cudaMemsetAsync, 90'000, 91'000, 3);
  // Calls no wrapper saw, known from their RUNTIME records only (shown: no host event has their correlation).
  auto api_record = [&](uint64_t start, uint64_t end, uint32_t correlation, uint32_t tid) {
    DeviceRecord& r = b.Record(DeviceKind::kRuntimeApi, start, end, correlation);
    r.thread_id = tid;
    r.name_id = b.window().strings.size();
    b.window().strings.push_back("cudaGetLastError");
  };
  api_record(5'000, 6'000, 100, testing::kPid);    // before every call
  api_record(50'000, 51'000, 101, testing::kPid);  // as the synchronize starts: drawn before it
  api_record(70'000, 71'000, 102, testing::kPid);  // between two calls
  api_record(30'000, 31'000, 103, 777);            // a thread with no call of its own
  Window w = b.Build();
  WindowIndex index(w);
  nlohmann::json data = PageData(RenderReportPage("t", {ReportWindowJson(w, index, ComputeSummary(w, index), "l", "")}));
  const nlohmann::json& p = data["windows"][0];
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> lanes;  // label -> (start, name)
  for (const auto& lane : p["timeline"]["lanes"]) {
    for (const auto& it : lane["items"]) {
      lanes[lane["label"]].push_back({it[0].get<uint64_t>(), p["strings"][it[2].get<size_t>()].get<std::string>()});
    }
  }
  std::string own = "thread " + std::to_string(testing::kPid);
  using Items = std::vector<std::pair<uint64_t, std::string>>;
  CHECK(lanes[own] == Items{{5'000, "cudaGetLastError"}, {10'000, "cudaLaunchKernel"}, {50'000, "cudaDeviceSynchronize"},
                            {70'000, "cudaGetLastError"}, {90'000, "cudaMemsetAsync"}});
  CHECK(lanes["thread 777"] == Items{{30'000, "cudaGetLastError"}});
  // The record at the synchronize's start is in the synchronize's block (named after the longer one), and counted.
  for (const auto& lane : p["timeline"]["lanes"]) {
    if (lane["label"] != own) continue;
    CHECK(lane["items"][2][4] == 2);
  }
}

TEST_CASE("WriteWindowFiles writes the page and folded stacks when asked", "[report][files]") {
  std::string dir = testing::MakeDir("libprof-report");
  Window w = WithPython();
  w.meta.first_step = 3;
  OutputOptions options{dir, false, true, false, true, true};
  std::string error;
  REQUIRE(WriteWindowFiles(w, options, &error));
  std::ifstream page(dir + "/worker.3.report.html"), stacks(dir + "/worker.3.stacks.txt");
  REQUIRE(page.good());
  REQUIRE(stacks.good());
  std::stringstream text;
  text << stacks.rdbuf();
  CHECK(text.str() == FoldedStacks(w, WindowIndex(w)));
  CHECK(testing::Exists(dir + "/worker.3.summary.txt"));
  CHECK_FALSE(testing::Exists(dir + "/worker.3.pt.trace.json"));
  for (const char* f : {"/worker.3.report.html", "/worker.3.stacks.txt", "/worker.3.summary.txt"}) {
    std::remove((dir + f).c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace prof
