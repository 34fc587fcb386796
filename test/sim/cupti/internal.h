// Declarations shared by the simulated libcupti's files. Everything here is
// internal (namespace simcupti, hidden visibility); only the cupti* C
// functions declared by NVIDIA's headers are exported (libcupti.map).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hub.h"

namespace simcupti {

// ---- result.cpp: per-thread last error (cuptiGetLastError) ----

// Records `result` as the calling thread's last error unless it is
// CUPTI_SUCCESS, and returns it, so entry points can `return Status(...)`.
CUptiResult Status(CUptiResult result);

// ---- faults.cpp: SIM_* switches (see README.md) ----

struct Faults {
  std::string other_subscriber;  // SIM_CUPTI_SUBSCRIBER: another tool holds CUPTI
  bool init_fail = false;        // SIM_CUPTI_INIT_FAIL=1
  bool null_buffers = false;     // SIM_CUPTI_NULL_BUFFERS=1
  uint64_t late_ns = 0;          // SIM_CUPTI_LATE_MS, in ns
  bool no_driver = false;        // SIM_NO_DRIVER=1 (the driver's fault)
  bool check_zeroed = false;     // SIM_CUPTI_CHECK_ZEROED=1: count promised-zero buffers that are not
};
// Read through the hub on every call (the hub caches the environment), so
// a test hub can change them between cases.
Faults CurrentFaults();

// ---- lifecycle.cpp: lazy initialisation, finalize, truth lines ----

// What every call that needs the driver does first, as the real library
// does on its first call: installs the hub hooks. Returns CUPTI_SUCCESS,
// CUPTI_ERROR_UNKNOWN without a driver (what NVIDIA's libcupti answers on
// a machine without one) or CUPTI_ERROR_NOT_INITIALIZED (SIM_CUPTI_INIT_FAIL).
CUptiResult EnsureInitialized();

// Increments on every cuptiFinalize: an API call or op that began in an
// older epoch is never recorded or called back after the detach.
uint64_t Epoch();

// One truth line for a CUPTI call: {"type":"cupti_call","op":"cupti_call","call":...,"result":...,
// "sim_ns":...,"reported_ns":...,<extra>} where extra is a JSON fragment
// (",\"kind\":10") or empty.
void TruthCall(const char* call, CUptiResult result, const std::string& extra = "");

// `text` as a JSON string literal, quotes included.
std::string JsonString(const std::string& text);

// ---- callbacks.cpp: the subscriber ----

bool CallbackEnabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
// Calls the subscriber's function if that callback is enabled. Never holds
// a lock while the client runs (it may call back into CUPTI, even finalize).
void Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
bool Subscribed();
std::vector<int> EnabledDomains();  // domains with at least one enabled callback
void ResetSubscriber();             // cuptiFinalize

// ---- activity_api.cpp: which kinds are on, and their options ----

// Whether records of `kind` are written for work in the context with this
// uid (0: none): its cuptiActivityEnableContext/DisableContext setting if
// any, else the global one.
bool KindEnabled(CUpti_ActivityKind kind, uint32_t context_uid = 0);
// Whether an API call gets an API record: its cuptiActivityEnable*Api
// choice if any, else KindEnabled(RUNTIME or DRIVER, context_uid).
bool ApiRecordEnabled(int domain, uint32_t cbid, uint32_t context_uid);
std::vector<int> EnabledKinds();
void ResetActivityConfig();  // cuptiFinalize
bool ThreadIdIsSystem();     // cuptiSetThreadIdType(SYSTEM)
bool LatencyTimestamps();    // cuptiActivityEnableLatencyTimestamps(1)
bool PerThreadBuffers();     // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (default 1)
bool ClientZeroesBuffers();  // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER
// External-correlation records for the ids this thread has pushed, if
// EXTERNAL_CORRELATION is on; called just before an API record.
void RecordExternalCorrelations(const SimApiSite& site);

// ---- records.cpp: hub events -> activity records ----

// Called by the hooks for an op launched while its kind was enabled.
void RecordOp(const SimOp& op);
// Called at API exit for a call that began while RUNTIME/DRIVER was enabled.
void RecordApi(const SimApiSite& site);
// API records written so far (since load), per callback id with any:
// [cbid, count] pairs as JSON, for the cupti_state truth line; and one id's.
std::string ApiRecordCounts(int domain);
uint64_t ApiRecordsWritten(int domain, uint32_t cbid);
// Precedes an API record while EXTERNAL_CORRELATION is enabled and the
// thread has pushed an external id of `kind`.
void RecordExternalCorrelation(CUpti_ExternalCorrelationKind kind, uint64_t external_id, const SimApiSite& site);
// Size of a record of `kind` as this library writes it; 0 for kinds it
// never writes (cuptiActivityGetNextRecord then answers INVALID_KIND).
size_t RecordSize(uint32_t kind);
// A forced flush hands over a record whose device work is unfinished: its
// times that lie in the future are 0 (start too if it had not started).
void ClearUnfinishedTimes(CUpti_Activity* record, bool started);

// ---- hooks.cpp ----

void InstallHooks();
void RemoveHooks();

// The calling thread's id (gettid), cached.
uint32_t ThreadId();
// Correlation id of the innermost runtime API call on this thread, 0 if none
// (CUpti_ActivityMemcpy6::runtimeCorrelationId).
uint32_t CurrentRuntimeCorrelationId();
// Contexts seen through resource callbacks and API calls.
bool LookupContext(CUcontext context, uint32_t* context_uid, uint32_t* device_id);

}  // namespace simcupti
