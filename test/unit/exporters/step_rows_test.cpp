// The summary and the report page stay readable and bounded for a window of
// many steps: all rows up to kStepRowsAll, past that the first rows and the
// slowest of the others, said once; the timeline draws runs of steps.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "exporters/common/window_index.h"
#include "exporters/report/report.h"
#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using testing::WindowBuilder;
constexpr uint64_t us = 1000;

// n steps of 100 µs, each with a launch; the steps listed in `slow` take 300 µs + their index.
Window ManySteps(size_t n, const std::vector<size_t>& slow) {
  WindowBuilder b;
  uint64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    bool is_slow = std::find(slow.begin(), slow.end(), i) != slow.end();
    uint64_t len = is_slow ? 300 * us + i : 100 * us;
    b.Step(1000 + i, t, t + len);
    b.Launch("k", t + 10 * us, 5 * us, t + 20 * us, t + 40 * us, static_cast<uint32_t>(i + 1));
    t += len;
  }
  return b.Build();
}

nlohmann::json PageWindow(const Window& w) {
  WindowIndex index(w);
  Summary s = ComputeSummary(w, index);
  std::string page = RenderReportPage("t", {ReportWindowJson(w, index, s, "label", "x.pt.trace.json")});
  std::string open = "<script type=\"application/json\" id=\"prof-data\">";
  size_t a = page.find(open) + open.size();
  return nlohmann::json::parse(page.substr(a, page.find("</script>", a) - a))["windows"][0];
}

TEST_CASE("up to kStepRowsAll steps, every step is listed", "[summary][report]") {
  Window w = ManySteps(kStepRowsAll, {});
  Summary s = ComputeSummary(w);
  std::vector<size_t> listed = ListedStepRows(s.steps);
  REQUIRE(listed.size() == kStepRowsAll);
  for (size_t i = 0; i < listed.size(); ++i) CHECK(listed[i] == i);
  std::string text = RenderSummary(s);
  CHECK(text.find("listed: the first") == std::string::npos);
  CHECK(text.find(std::to_string(1000 + kStepRowsAll - 1)) != std::string::npos);
  nlohmann::json p = PageWindow(w);
  CHECK(p["steps"].size() == kStepRowsAll);
  CHECK(p["steps_total"] == kStepRowsAll);
}

TEST_CASE("past kStepRowsAll steps: the first rows and the slowest others, in step order, said once",
          "[summary][report]") {
  // Among the slow ones, step index 5 is inside the first rows (listed there
  // anyway); the others are spread over the window.
  std::vector<size_t> slow = {5};
  for (size_t i = 0; i < kStepRowsSlowest + 20; ++i) slow.push_back(200 + i * 37);
  const size_t n = 200 + (kStepRowsSlowest + 20) * 37 + 50;
  Window w = ManySteps(n, slow);
  Summary s = ComputeSummary(w);
  REQUIRE(s.steps.size() == n);
  std::vector<size_t> listed = ListedStepRows(s.steps);
  REQUIRE(listed.size() == kStepRowsFirst + kStepRowsSlowest);
  for (size_t i = 0; i < kStepRowsFirst; ++i) CHECK(listed[i] == i);
  // The slowest of the others are the last kStepRowsSlowest slow steps
  // (each slow step takes longer than the one before), in step order.
  for (size_t i = 0; i < kStepRowsSlowest; ++i) CHECK(listed[kStepRowsFirst + i] == slow[slow.size() - kStepRowsSlowest + i]);

  std::string text = RenderSummary(s);
  CHECK(text.find(std::to_string(n) + " steps; listed: the first 100 and the 100 slowest of the others") !=
        std::string::npos);
  CHECK(text.find("wall per step: min 0.100, median 0.100") != std::string::npos);
  // A fast step past the first rows is not listed; the slowest is.
  CHECK(text.find("\n  " + std::to_string(1000 + 150) + " ") == std::string::npos);
  CHECK(text.find(std::to_string(1000 + slow.back()) + "  ") != std::string::npos);

  nlohmann::json p = PageWindow(w);
  CHECK(p["steps_total"] == n);
  CHECK(p["steps_first"] == kStepRowsFirst);
  REQUIRE(p["steps"].size() == listed.size());
  for (size_t i = 0; i < listed.size(); ++i) CHECK(p["steps"][i]["step"] == s.steps[listed[i]].step);
}

TEST_CASE("the timeline draws at most kTimelineSteps step spans, runs of steps past that", "[report]") {
  Window few = ManySteps(50, {});
  nlohmann::json steps = PageWindow(few)["timeline"]["steps"];
  REQUIRE(steps.size() == 50);
  CHECK(steps[3].size() == 3);
  CHECK(steps[3][0] == 1003);

  const size_t n = 2 * kTimelineSteps + 10;
  Window many = ManySteps(n, {});
  steps = PageWindow(many)["timeline"]["steps"];
  REQUIRE(steps.size() <= kTimelineSteps);
  // Runs of 3 steps: [first step, start, duration, last step], covering every step once.
  CHECK(steps[0] == nlohmann::json::array({1000, 0, 300 * us, 1002}));
  uint64_t covered = 0;
  for (const auto& st : steps) covered += st[3].get<uint64_t>() - st[0].get<uint64_t>() + 1;
  CHECK(covered == n);
}

}  // namespace
}  // namespace prof
