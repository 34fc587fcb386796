// Declarations shared by the simulated libcupti's files. Everything here is
// internal (namespace simcupti, hidden visibility); only the cupti* C
// functions declared by NVIDIA's headers are exported (libcupti.map).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cupti_13_2.h"
#include "hub.h"

namespace simcupti {

// ---- result.cpp: per-thread last error (cuptiGetLastError) ----

// Records `result` as the calling thread's last error unless it is
// CUPTI_SUCCESS, and returns it, so entry points can `return Status(...)`.
CUptiResult Status(CUptiResult result);

// ---- faults.cpp: SIM_* switches (see README.md) ----

struct Faults {
  std::string other_subscriber;  // SIM_CUPTI_SUBSCRIBER: another tool holds CUPTI
  bool multi_subscribers = false;  // SIM_CUPTI_SUBSCRIBERS=multi: the multi-subscriber release (13 only)
  bool init_fail = false;        // SIM_CUPTI_INIT_FAIL=1
  bool null_buffers = false;     // SIM_CUPTI_NULL_BUFFERS=1
  uint64_t late_ns = 0;          // SIM_CUPTI_LATE_MS, in ns
  bool no_driver = false;        // SIM_NO_DRIVER=1 (the driver's fault)
  bool check_zeroed = false;     // SIM_CUPTI_CHECK_ZEROED=1: count promised-zero buffers that are not
};
// Read through the hub on every call (the hub caches the environment), so
// a test hub can change them between cases.
Faults CurrentFaults();

// ---- release.cpp: which CUPTI release the library impersonates ----

// The multi-subscriber release (SIM_CUPTI_SUBSCRIBERS=multi, the CUDA 13
// personality only): CUPTI 13.2's subscriber rules and per-subscriber
// activity API (cupti_13_2.h). Otherwise the personality's classic CUPTI.
bool MultiSubscriberRelease();
// What cuptiGetVersion reports: SIM_CUPTI_API_VERSION if set, else 130202
// in the multi-subscriber release, else the personality's version.
uint32_t ReportedVersion();
// Whether kernel records are CUPTI 13.1/13.2's CUpti_ActivityKernel11
// (record_layouts.h) rather than the personality's struct: decided by the
// reported version when CUPTI initialises (ChooseLayouts), so a buffer is
// decoded with the sizes it was written with.
bool KernelRecordIs11();
void ChooseLayouts();

// ---- activity clients ----

// Who receives activity records. Client 0 is the process-wide activity API
// (cuptiActivityEnable, cuptiActivityRegisterCallbacks, ...), the only one
// classic CUPTI has. In the multi-subscriber release, while several
// subscribers are allowed, subscriber slot s (1..kMaxSubscribers) is client
// s too, addressed by the *_v2 functions with its handle.
constexpr int kMaxSubscribers = 8;
constexpr int kMaxClients = kMaxSubscribers + 1;
constexpr int kProcessClient = 0;
using ClientMask = uint32_t;  // bit c: client c
static_assert(kMaxClients <= 32, "ClientMask");

// CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE values (CUPTI 13.2).
constexpr uint8_t kMultiStateSingle = 0;
constexpr uint8_t kMultiStateMultiple = 1;
constexpr uint8_t kMultiStateUnset = 2;

// ---- client_clocks.cpp: per-subscriber clocks (multi-subscriber release) ----

// CUPTI_ACTIVITY_ATTR_TIMESTAMP_CALLBACK of a subscriber's client (NULL:
// CUPTI's default timer again). Not for the process-wide client, whose
// clock is the hub's (cuptiActivityRegisterTimestampCallback).
void SetClientClock(int client, CUpti_TimestampCallbackFunc source);
CUpti_TimestampCallbackFunc ClientClockSource(int client);
// A sim-clock time as client `client` reports it (0 stays 0): the hub's
// reported clock for the process-wide client; a subscriber's own clock if
// it set one, else the sim clock (CUPTI's default timer).
uint64_t ReportedFor(int client, uint64_t sim_ns);
// At API entry: new knots for the clocks that are due one.
void SampleClientClocks();
void ResetClientClocks(int client);

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

// ---- callbacks.cpp: the subscribers ----

// Whether any subscriber has this callback enabled.
bool CallbackEnabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
// Calls the function of every subscriber that has this callback enabled,
// each with its own userdata. For API callbacks `data` is a
// CUpti_CallbackData whose correlationData is pointed, for subscriber slot
// s, at correlation_data[s] (kMaxClients entries); NULL for other domains.
// Never holds a lock while a client runs (it may call back into CUPTI, even
// finalize).
void Dispatch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, void* data, uint64_t* correlation_data = nullptr);
bool Subscribed();
int SubscriberCount();
uint8_t MultiSubscriberState();     // kMultiState*
std::vector<int> EnabledDomains();  // domains with at least one enabled callback, any subscriber
void ResetSubscriber();             // cuptiFinalize: every subscriber
// The activity client a *_v2 call with this handle addresses: the
// subscriber's own while several are allowed, the process-wide one while
// it holds CUPTI alone. -1 with *error: NOT_SUPPORTED outside the
// multi-subscriber release (CUPTI 13.0 has no such functions),
// INVALID_PARAMETER for a handle that is no live subscriber's.
int ActivityClientOf(CUpti_SubscriberHandle handle, CUptiResult* error);

// ---- activity_api.cpp: which kinds are on, and their options ----

// Whether client `client` writes records of `kind` for work in the context
// with this uid (0: none): its cuptiActivityEnableContext/DisableContext
// setting if any, else its global one.
bool KindEnabled(int client, CUpti_ActivityKind kind, uint32_t context_uid = 0);
// The clients that write records of `kind` for that context.
ClientMask ClientsRecording(CUpti_ActivityKind kind, uint32_t context_uid);
// The clients that give an API call an API record: each one's
// cuptiActivityEnable*Api choice if any, else its RUNTIME or DRIVER kind.
ClientMask ApiRecordClients(int domain, uint32_t cbid, uint32_t context_uid);
std::vector<int> EnabledKinds();  // of any client
std::vector<int> EnabledKinds(int client);
void ResetActivityConfig();                 // cuptiFinalize: every client
void ForgetSubscriberClient(int client);    // its subscriber left: kinds off, buffers lost
bool ThreadIdIsSystem(int client);          // cuptiSetThreadIdType(SYSTEM)
bool LatencyTimestamps(int client);         // cuptiActivityEnableLatencyTimestamps(1)
bool PerThreadBuffers(int client);          // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (default 1)
bool ClientZeroesBuffers(int client);       // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER
// cuptiActivityEnable/Disable[_v2] for one client (truth line with the kind
// and the client).
CUptiResult SetKindEnabled(int client, const char* call, CUpti_ActivityKind kind, bool enable);
// cuptiActivityGet/SetAttribute[_v2] for one client.
CUptiResult ActivityAttribute(int client, bool write, CUpti_ActivityAttribute attr, size_t* value_size, void* value);
// cuptiActivityRegisterCallbacks (request/complete) or its _v2 (request_v2/
// complete_v2) for one client; INVALID_PARAMETER if the pair is incomplete.
CUptiResult SetActivityCallbacks(int client, const char* call, CUpti_BuffersCallbackRequestFunc request,
                                 CUpti_BuffersCallbackCompleteFunc complete,
                                 CUpti_BuffersCallbackRequestFunc_v2 request_v2,
                                 CUpti_BuffersCallbackCompleteFunc_v2 complete_v2);
// External-correlation records, for each client in `clients` that has
// EXTERNAL_CORRELATION on, of the ids this thread has pushed; called just
// before the API records.
void RecordExternalCorrelations(const SimApiSite& site, ClientMask clients);

// ---- records.cpp: hub events -> activity records ----

// Called by the hooks for an op launched while its kind was enabled.
void RecordOp(const SimOp& op);
// Called at API exit for a call that began while RUNTIME/DRIVER was enabled
// for the clients in `clients`: one record to each.
void RecordApi(const SimApiSite& site, ClientMask clients);
// API records written so far (since load, to any client), per callback id with any:
// [cbid, count] pairs as JSON, for the cupti_state truth line; and one id's.
std::string ApiRecordCounts(int domain);
uint64_t ApiRecordsWritten(int domain, uint32_t cbid);
// Precedes an API record while EXTERNAL_CORRELATION is enabled and the
// thread has pushed an external id of `kind`.
void RecordExternalCorrelation(int client, CUpti_ExternalCorrelationKind kind, uint64_t external_id,
                               const SimApiSite& site);
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
