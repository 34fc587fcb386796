// A cuDNN backend descriptor as the sim keeps it: its type, whether it is
// finalized, and the attribute values set on it (or computed at finalize).
// A descriptor stored as another's attribute is copied (a snapshot shared
// read-only), so a caller may destroy or reuse its own after setting it,
// and what a plan executes cannot change under it.
#pragma once

#include <cudnn.h>
#include <stdint.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace simdnn {

struct State;
using Snapshot = std::shared_ptr<const State>;

struct Value {
  cudnnBackendAttributeType_t type;
  int64_t count = 0;
  std::vector<unsigned char> bytes;  // count elements of type (not for descriptors)
  std::vector<Snapshot> descs;       // CUDNN_TYPE_BACKEND_DESCRIPTOR elements
};

// What one execution of a finalized plan launches (cudnn_backend_model.h).
struct KernelPlan;

struct State {
  int type = 0;  // cudnnBackendDescriptorType_t
  bool finalized = false;
  std::map<int, Value> attrs;                // by cudnnBackendAttributeName_t
  std::shared_ptr<const KernelPlan> kernel;  // execution plans (and engine configs) only
};

// The object a cudnnBackendDescriptor_t points to.
struct Descriptor {
  uint64_t magic;
  State state;
};

// The descriptor behind a handle, or NULL for NULL, a destroyed one or
// something that never was one (a registry of live descriptors, so a
// stale pointer is answered, not followed).
Descriptor* Live(cudnnBackendDescriptor_t d);
Descriptor* Register(Descriptor* d);
void Unregister(Descriptor* d);

// Typed reads of attribute values; `fallback` when the attribute is unset.
int64_t GetInt(const State& s, int attr, int64_t fallback);
std::vector<int64_t> GetInts(const State& s, int attr);
int GetEnum(const State& s, int attr, int fallback);
bool GetBool(const State& s, int attr, bool fallback);
Snapshot GetDesc(const State& s, int attr);  // first element, or NULL
const std::vector<Snapshot>* GetDescs(const State& s, int attr);

// Stores a value computed by cuDNN (a get-only attribute).
void PutInts(State& s, int attr, const std::vector<int64_t>& values);
void PutInt32(State& s, int attr, int32_t value);
void PutEnums(State& s, int attr, cudnnBackendAttributeType_t type, const std::vector<int>& values);
void PutDescs(State& s, int attr, std::vector<Snapshot> descs);
void PutChars(State& s, int attr, const std::string& text);

// A new finalized state of `type` (engine configs, knob infos, ... that
// cuDNN builds and hands out through GetAttribute).
std::shared_ptr<State> NewState(int type);

// Answers `status` and writes {"type":"math","lib":"cudnn","api":...,
// "status":...,"why":...} to the sim's truth log, so a test (or a person)
// sees why a call did not succeed.
cudnnStatus_t Refuse(const char* api, cudnnStatus_t status, const std::string& why);

}  // namespace simdnn
