// A stand-in for the simulated driver's hub (test/sim/hub.h) for the unit
// tests: a clock the test moves by hand, API calls and ops the test
// injects, faults it sets, truth lines it reads back. This isolates
// CUPTI's semantics from the real hub's timing model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub.h"

namespace fakehub {

void Reset();  // clock back to its start, no faults, no truth lines
uint64_t Now();
void Advance(uint64_t ns);
void SetFault(const std::string& name, const char* value);  // name without "SIM_"; nullptr clears

// A complete API call as the runtime makes it: enter, `during` (may
// enqueue ops or make nested calls), exit with `result`. Returns the
// correlation id.
struct Call {
  int domain = 2;  // runtime
  uint32_t cbid = 0;
  const char* name = "";
  const char* symbol = nullptr;
  const void* params = nullptr;
  int result = 0;
  uint64_t duration_ns = 1000;
};
template <typename During>
uint32_t MakeCall(const Call& call, During during);
uint32_t MakeCall(const Call& call);

// Enqueues an op launched by the API call `correlation_id` on `stream`
// that runs [start_ns, end_ns) on the sim clock.
SimOp Kernel(uint32_t correlation_id, uint32_t stream, uint64_t start_ns, uint64_t end_ns, const char* name = "k");
SimOp Op(int kind, uint32_t correlation_id, uint32_t stream, uint64_t start_ns, uint64_t end_ns);
void Enqueue(const SimOp& op);

void ContextEvent(bool destroy, void* context, uint32_t uid);
// A graph node or executable graph created (the hub's graph hook).
void GraphEvent(const SimGraphEvent& event);

void* Context();  // the fake's single context
std::vector<std::string> TruthLines();

// ---- template definition ----
void BeginCall(SimApiSite* site, const Call& call, int* result);
void EndCall(SimApiSite* site, const Call& call);

template <typename During>
uint32_t MakeCall(const Call& call, During during) {
  SimApiSite site{};
  int result = 0;
  BeginCall(&site, call, &result);
  during(site.correlation_id);
  result = call.result;
  EndCall(&site, call);
  return site.correlation_id;
}

}  // namespace fakehub
