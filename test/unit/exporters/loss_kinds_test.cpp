// Device records a window lost, by kind: in the trace's loss counters, the
// summary's Data loss line and its data-loss finding, so a window that
// undercounts says which tables (kernels, copies, memsets) it undercounts.
#include "exporters/summary/loss_kinds.h"

#include <catch2/catch.hpp>
#include <string>

#include "exporters/summary/summary.h"
#include "test/unit/exporters/window_builder.h"

namespace prof {
namespace {

using testing::WindowBuilder;

WindowBuilder WithLosses() {
  WindowBuilder b;
  b.Step(1, 1'000'000, 2'000'000);
  b.Launch("_Z6kernelv", 1'100'000, 5'000, 1'110'000, 1'200'000, /*correlation=*/1);
  LossCounts& l = b.window().meta.losses;
  l.device_records_missing = 3;
  l.missing_kinds.kernels = 2;
  l.missing_kinds.copies = 1;
  l.device_records_untimed = 1;
  l.untimed_kinds.memsets = 1;
  return b;
}

std::string DataLossEvidence(const Window& w) {
  for (const Finding& f : ComputeSummary(w).findings) {
    if (f.id == "data-loss") return f.evidence;
  }
  return "";
}

TEST_CASE("kinds are said with their counts, in order, and only those with any", "[loss_kinds]") {
  CHECK(LossKindsText(DeviceLossKinds{}).empty());
  CHECK(LossKindsText(DeviceLossKinds{2, 1, 0}) == "2 kernels, 1 copy");
  CHECK(LossKindsText(DeviceLossKinds{0, 3, 1}) == "3 copies, 1 memset");
  DeviceLossKinds k;
  k.Add(DeviceKind::kMemset, 2);
  k.Add(DeviceKind::kSync);  // not a kind counted by kind
  CHECK(k.total() == 2);
  CHECK(LossKindsText(k) == "2 memsets");
}

TEST_CASE("the data-loss finding names the kinds of device records that never came", "[loss_kinds]") {
  std::string evidence = DataLossEvidence(WithLosses().Build());
  CHECK(evidence.find("3 device records never delivered (2 kernels, 1 copy)") != std::string::npos);
  CHECK(evidence.find("(1 memset)") != std::string::npos);  // the untimed one
}

TEST_CASE("the summary's Data loss line counts the missing records by kind", "[loss_kinds]") {
  std::string text = RenderSummary(WithLosses().Build());
  CHECK(text.find("missing by kind: 2 kernels, 1 copy") != std::string::npos);
  CHECK(text.find("without timestamps by kind: 1 memset") != std::string::npos);
  // A window that lost nothing says nothing by kind.
  WindowBuilder quiet;
  quiet.Step(1, 1'000'000, 2'000'000);
  CHECK(RenderSummary(quiet.Build()).find("by kind") == std::string::npos);
}

TEST_CASE("the trace carries each device-record counter by kind, only when it holds any", "[loss_kinds]") {
  nlohmann::json losses = testing::TraceJson(WithLosses().Build())["libprof"]["losses"];
  CHECK(losses["device_records_missing"] == 3);
  CHECK(losses["device_records_missing_by_kind"] == nlohmann::json{{"kernel", 2}, {"memcpy", 1}, {"memset", 0}});
  CHECK(losses["device_records_untimed_by_kind"] == nlohmann::json{{"kernel", 0}, {"memcpy", 0}, {"memset", 1}});
  CHECK_FALSE(losses.contains("device_records_dropped_by_kind"));
}

}  // namespace
}  // namespace prof
