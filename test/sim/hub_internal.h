// Hub internals shared by the simulated driver's own files (not exported).
#pragma once

#include <stdint.h>

#include <string>

#include "hub.h"

namespace sim {

// Correlation id of the outermost API call in progress on this thread (the
// runtime call when the driver is reached through the runtime), or 0. Device
// work is attributed to it, as CUPTI attributes a kernel to its launch call.
uint32_t OuterCorrelationId();
// Name of that outermost call ("cudaLaunchKernel"), or "".
const char* OuterFunctionName();

// Context the hub reports in SimApiSite (set by the driver when the primary
// context is created or reset).
void SetCurrentContext(void* context, uint32_t context_uid);
// A context current on the calling thread only (cuCtxCreate/PushCurrent);
// API sites report it instead of the primary. nullptr: the primary again.
void SetThreadApiContext(void* context, uint32_t context_uid);
void FireResourceHook(int is_destroy, void* context, uint32_t context_uid, uint32_t device_id);

// Reports a graph event: graph hook plus its truth-log line.
void FireGraphHook(const SimGraphEvent& event);

// Reports one op: op hook plus its truth-log line.
void EmitOp(const SimOp& op);
// The same for an op placed after its launching call returned (a kernel
// queued behind a collective): `api` names that call.
void EmitOpAs(const SimOp& op, const char* api);

uint32_t ThreadId();

// JSON string literal with quotes, escaping what JSON requires.
std::string JsonString(const char* text);

}  // namespace sim
