// Test doubles for the session's seams: a DeviceCollector that logs its
// phase calls, and a WindowWriter that keeps the jobs it is handed.
#pragma once

#include <string>
#include <vector>

#include "base/device_collector.h"
#include "agent/session/window_job.h"

namespace prof::testing {

class FakeCollector : public DeviceCollector {
 public:
  void Attach(const Config&) override { calls.push_back("Attach"); }
  void BeginRecord(uint64_t) override { calls.push_back("BeginRecord"); }
  void Pause() override { calls.push_back("Pause"); }
  void Finish() override { calls.push_back("Finish"); }
  void CollectWindow(uint64_t start_ns, uint64_t end_ns, uint64_t, Window* out) override {
    calls.push_back("CollectWindow");
    for (const DeviceRecord& r : records) {
      if (r.start_ns >= start_ns && r.start_ns < end_ns) out->device_records.push_back(r);
    }
    out->meta.cupti_mode = Mode();
  }
  void OnWaitingStep() override { ++waiting_steps; }
  bool WantsWaitingSteps() const override { return wants_waiting_steps; }
  void OnExit() override { calls.push_back("OnExit"); }
  std::string Mode() const override { return "fake"; }

  std::vector<std::string> calls;
  std::vector<DeviceRecord> records;
  int waiting_steps = 0;             // OnWaitingStep calls
  bool wants_waiting_steps = false;  // what WantsWaitingSteps answers
};

class FakeWriter : public WindowWriter {
 public:
  void SubmitWindow(WindowJob job) override { windows.push_back(std::move(job)); }
  void SubmitDiscard(uint64_t before_ns) override { discards.push_back(before_ns); }
  void ReleaseHeld(bool write, const std::string& step_description, const std::string& note) override {
    releases.push_back({write, step_description, note});
  }
  struct Release {
    bool write;
    std::string step_description;
    std::string note;
  };
  std::vector<Release> releases;

  std::vector<WindowJob> windows;
  std::vector<uint64_t> discards;
};

}  // namespace prof::testing
