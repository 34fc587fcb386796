// What the parts of the CUPTI collector share, and nothing else: private to
// collectors/cupti. The class itself is in activity_collector.h; its member
// functions are defined in
//   cupti_collector.cpp       loading, subscription, which callback ids are on, the interface
//   collector_callbacks.cpp   the API callbacks (application threads: the hot path, one unit)
//   collector_activities.cpp  activity kinds, and the RUNTIME records CUPTI leaves out
//   collector_buffers.cpp     the buffer callbacks, flushes and CUPTI's drop count
//   collector_decode.cpp      decoding handed-over buffers into held records (writer thread)
//   collector_window.cpp      a window's collection, driving WindowCollection, and its sealing (writer thread)
//   collector_states.cpp      windows' begin/pause/finish, detaching while waiting, exit
//   collector_sharing.cpp     beside another client of CUPTI's activity API (several subscribers, or one)
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>

#include "collectors/cupti/activity_collector.h"

namespace prof::cupti {

// CUPTI's buffer callbacks carry no user data: they reach the one collector
// that registered them through this pointer (one collector per process).
// Set by SubscribeAndRegister, cleared by the destructor (cupti_collector.cpp).
extern std::atomic<CuptiCollector*> g_buffer_owner;

// The C callbacks CUPTI calls, forwarding to the collector.
// The API and resource callbacks (collector_callbacks.cpp).
void CUPTIAPI CallbackTrampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
// The activity buffer callbacks (collector_buffers.cpp).
void CUPTIAPI BufferRequestedTrampoline(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI BufferCompletedTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid_size);
// The same pair for a subscriber's own activity client (CUPTI 13.2's _v2).
void CUPTIAPI BufferRequestedV2Trampoline(uint8_t** buffer, size_t* size, size_t* max_records,
                                         v13_2::BufferRequestInfo* info);
void CUPTIAPI BufferCompletedV2Trampoline(uint8_t* buffer, size_t size, size_t valid_size,
                                         v13_2::BufferCompleteInfo* info);

// The timestamp callback libprof registers: CUPTI stamps records with the
// agent clock (prof::NowNs), so no mapping is needed (cupti_collector.cpp).
uint64_t CUPTIAPI AgentTimestamp();

// How many objects the process has loaded so far, dlopen included
// (collector_states.cpp): a new one may carry a static cudart.
uint64_t LoadedObjects();

}  // namespace prof::cupti
