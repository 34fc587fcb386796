// The program's own client of CUPTI's process-wide activity API (the
// torch.profiler of its own code: PyTorch's Kineto calls
// cuptiActivityRegisterCallbacks, Enable/Disable, FlushAll and, with
// TEARDOWN_CUPTI=1, cuptiFinalize, and never subscribes), as libprof sees
// it under LD_PRELOAD: libprof.so exports those functions
// (cupti_interpose.cpp), so the program's calls reach these first and are
// forwarded, unchanged, to the libcupti the process loaded.
//
// What is kept is what the program asked for, so that libprof can hand the
// activity API back exactly as the program left it (the collector's
// YieldLocked, collector_sharing.cpp): its buffer callbacks, timestamp
// callback, kinds, thread-id type and attributes. The collector is told
// when the program claims the activity API (cuptiActivityRegisterCallbacks
// or cuptiActivityEnable: it is about to record) and when it releases it (a
// forced flush with none of its kinds enabled), and decides what to do
// (activity_collector.h). The program's other calls (its clock, thread-id
// type, attributes; a disable or flush of nothing of its own) change state
// libprof is using while libprof holds the activity API: then they are kept
// and applied when the program claims it, and answered CUPTI_SUCCESS;
// otherwise they are forwarded at once.
//
// Under CUDA_INJECTION64_PATH libprof.so is loaded by the driver after the
// program bound its CUPTI calls: none of this sees them (the collector then
// senses another client instead, collector_sharing.cpp).
//
// Threads: any (the program's). Lock order: the client's mutex is a leaf,
// never held while CUPTI or the collector is called.
#pragma once

#include <cupti.h>

#include <bitset>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace prof::cupti {

class CuptiCollector;

// The program's client as it last set it.
struct UserClient {
  CUpti_BuffersCallbackRequestFunc request = nullptr;  // its cuptiActivityRegisterCallbacks pair
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;     // cuptiActivityRegisterTimestampCallback
  std::bitset<256> kinds;                              // enabled by it and not disabled since
  std::map<int, std::vector<uint8_t>> attributes;      // cuptiActivitySetAttribute: attribute -> its value's bytes
  bool thread_id_set = false;                          // cuptiSetThreadIdType
  CUpti_ActivityThreadIdType thread_id = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  bool claimed = false;  // it has set any of the above since CUPTI was last finalized
  std::string who;       // the library its first claim came from ("libtorch_cpu.so")
};

// A copy of the program's client now.
UserClient SnapshotUserClient();

// The collector the program's calls are reported to (nullptr: none, the
// calls are only forwarded). MakeCuptiCollector sets it; tests set their own.
void SetSharingCollector(CuptiCollector* collector);
// Unsets it if it is `collector` (its destructor).
void ForgetSharingCollector(CuptiCollector* collector);

// What the interposed functions do (cupti_interpose.cpp calls these with
// the caller's return address, to name the library that made the call).
// Each forwards to the process's libcupti and returns its answer;
// CUPTI_ERROR_NOT_INITIALIZED when no libcupti is loaded.
CUptiResult UserRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request, CUpti_BuffersCallbackCompleteFunc complete,
                                  const void* caller);
CUptiResult UserRegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp, const void* caller);
CUptiResult UserEnable(CUpti_ActivityKind kind, const void* caller);
CUptiResult UserDisable(CUpti_ActivityKind kind, const void* caller);
CUptiResult UserSetAttribute(CUpti_ActivityAttribute attr, size_t* size, void* value, const void* caller);
CUptiResult UserSetThreadIdType(CUpti_ActivityThreadIdType type, const void* caller);
CUptiResult UserFlushAll(uint32_t flag);
CUptiResult UserFinalize();

// The functions forwarded to, from the libcupti the process loaded. Tests
// hand their own (nullptr: look the loaded library up again).
struct ForwardedCupti {
  decltype(&::cuptiActivityRegisterCallbacks) RegisterCallbacks = nullptr;
  decltype(&::cuptiActivityRegisterTimestampCallback) RegisterTimestampCallback = nullptr;
  decltype(&::cuptiActivityEnable) Enable = nullptr;
  decltype(&::cuptiActivityDisable) Disable = nullptr;
  decltype(&::cuptiActivitySetAttribute) SetAttribute = nullptr;
  decltype(&::cuptiSetThreadIdType) SetThreadIdType = nullptr;
  decltype(&::cuptiActivityFlushAll) FlushAll = nullptr;
  decltype(&::cuptiFinalize) Finalize = nullptr;
};
void SetForwardedCuptiForTest(const ForwardedCupti* table);
// Forgets the program's client (tests; and what cuptiFinalize does).
void ResetUserClient();

// "libtorch_cpu.so (PyTorch's torch.profiler)": the object holding addr.
std::string DescribeCaller(const void* addr);

}  // namespace prof::cupti
