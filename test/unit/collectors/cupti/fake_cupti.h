// A fake libcupti for unit tests: a CuptiApi table whose functions record
// what the collector asked for, and drivers that play CUPTI's part (API
// callbacks, buffer requests, record delivery) deterministically on the
// test's thread. One fake per process: State() is reset by each test.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectors/cupti/activity_user.h"
#include "collectors/cupti/cupti_api.h"

namespace fake {

struct CuptiState {
  // Knobs the test sets before Attach.
  uint32_t version = CUPTI_API_VERSION;
  bool has_subscribe_v2 = true;
  bool has_timestamp_callback = true;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::string holder_name;            // written to oldSubscriberName when refused
  int64_t cupti_clock_offset_ns = 0;  // cuptiGetTimestamp = NowNs() + this (no timestamp callback)
  // As CUPTI does: a call whose callbacks are enabled leaves its own
  // RUNTIME/DRIVER record at exit when that kind is enabled. Off by default
  // so tests that count records count only the ones they write.
  bool api_records = false;
  // cuptiSetThreadIdType and cuptiActivityEnableRuntimeApi present, and
  // what the latter answers. Runtime ids left out of the records until the
  // RUNTIME kind is enabled or disabled again; unlike the simulated CUPTI
  // (decided at a call's enter) the fake decides at its exit, the other
  // moment a CUPTI may read the choice.
  bool has_thread_id_type = true;
  bool has_enable_runtime_api = true;
  CUptiResult enable_runtime_api_result = CUPTI_SUCCESS;
  std::set<uint32_t> runtime_left_out;
  std::vector<std::pair<uint32_t, int>> runtime_api_calls;  // (cbid, enable) as asked
  // Called by cuptiEnableCallback before it takes effect: another thread's
  // callbacks in the middle of the collector's enabling or disabling.
  std::function<void(CUpti_CallbackDomain, uint32_t cbid, uint32_t enable)> before_enable_callback;
  // Called by cuptiActivityFlushAll before it hands buffers over, on the
  // flushing thread: records that become ready late (a thread preempted
  // between a call's exit callback and CUPTI writing its record).
  std::function<void()> before_flush;
  // A plain flush keeps the buffer being filled, as CUPTI keeps one that
  // holds a record of device work still running; a forced one hands it over.
  bool plain_flush_keeps_current = false;
  // CUPTI 13.2's per-subscriber activity functions (cupti_13_2.h) present:
  // a subscriber that asks for several subscribers gets a client of its
  // own, whose kinds, callbacks and attributes the _v2 calls set (this fake
  // keeps them in the same fields as the process-wide ones, and counts
  // which API set them). other_kinds: another client's kinds, in the union
  // cuptiActivityGetEnabledKinds(NULL) answers.
  bool multi = false;
  bool one_subscriber_only = false;  // with multi: CUPTI_ACTIVITY_ATTR_MULTIPLE_SUBSCRIBER_STATE answers 0
  std::set<int> other_kinds;

  // Counters and flags the tests read: data, not logic.
  // What the collector did.
  int subscribe_calls = 0;
  size_t subscribe_struct_size = 0;  // CUpti_SubscriberParams::structSize of the last cuptiSubscribe_v2
  bool allow_multiple = false;       // and its allowMultipleSubscribers (read only past 13.0's 32 bytes)
  int process_wide_activity_calls = 0;  // cuptiActivityEnable/Disable/RegisterCallbacks/SetAttribute, timestamp, thread ids
  int v2_activity_calls = 0;            // their _v2 counterparts
  std::map<int, std::vector<uint8_t>> attributes;  // last value set per attribute (either API)
  CUpti_ActivityThreadIdType thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  std::string subscriber_name;
  bool subscribed = false;
  int unsubscribe_calls = 0;
  int finalize_calls = 0;
  int flushes = 0;
  int forced_flushes = 0;
  bool timestamp_registered_before_kinds = false;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  prof::cupti::v13_2::BufferRequestedV2 request_v2 = nullptr;  // cuptiActivityRegisterCallbacks_v2
  prof::cupti::v13_2::BufferCompletedV2 complete_v2 = nullptr;
  std::set<int> kinds;                           // enabled activity kinds
  std::set<int> domains;                         // wholly enabled callback domains
  std::set<std::pair<int, uint32_t>> callbacks;  // single enabled callbacks

  // CUPTI's side of the buffers.
  uint8_t* buffer = nullptr;  // being filled
  size_t buffer_size = 0;
  size_t buffer_used = 0;
  std::vector<std::pair<uint8_t*, size_t>> retired;  // full, not yet delivered
  size_t dropped = 0;                                // since the last GetNumDroppedRecords
  size_t dropped_total = 0;
  size_t records_written = 0;
};

CuptiState& State();
void Reset();
prof::cupti::CuptiApi Api();
// The process-wide functions another client (the program's torch.profiler)
// calls, to hand to prof::cupti::SetForwardedCuptiForTest.
const prof::cupti::ForwardedCupti* Forwarded();

// CUPTI calling the subscriber, as it does around a runtime/driver call
// (only when that callback is enabled, like CUPTI).
void Enter(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id);
void Exit(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id, int result = 0);
void Call(CUpti_CallbackDomain domain, uint32_t cbid, uint32_t correlation_id, int result = 0);

// CUPTI writing one record: asks for a buffer when the current one is full
// (or absent); counts a drop when the client answers NULL.
void Write(const void* record, size_t size);
template <typename Record>
void Write(const Record& record) {
  Write(&record, sizeof(record));
}
// CUPTI retiring the buffer it fills (it is delivered at the next flush).
void RetireCurrent();

// Hand-built records, times in CUPTI ns.
CUpti_ActivityKernel10 Kernel(uint32_t correlation_id, uint64_t start, uint64_t end, const char* name);
CUpti_ActivityAPI RuntimeApi(uint32_t correlation_id, uint32_t cbid, uint64_t start, uint64_t end);

}  // namespace fake
