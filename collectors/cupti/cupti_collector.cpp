#include "collectors/cupti/cupti_collector.h"

namespace prof {
namespace {

// Placeholder until the CUPTI-backed collector lands: interception-only.
class InterceptionOnlyCollector final : public DeviceCollector {
 public:
  void Attach(const Config&) override {}
  void BeginRecord(uint64_t) override {}
  void Pause() override {}
  void Finish() override {}
  void CollectWindow(uint64_t, uint64_t, uint64_t, Window* out) override {
    out->meta.cupti_mode = Mode();
    out->meta.has_gpu_timings = false;
  }
  void OnExit() override {}
  std::string Mode() const override { return "interception-only (CUPTI collector not built yet)"; }
};

}  // namespace

std::unique_ptr<DeviceCollector> MakeCuptiCollector() { return std::make_unique<InterceptionOnlyCollector>(); }

}  // namespace prof
