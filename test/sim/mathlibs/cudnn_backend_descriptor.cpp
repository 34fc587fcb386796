#include "cudnn_backend_descriptor.h"

#include <unistd.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "launch.h"

namespace simdnn {
namespace {

// Live descriptors. A leaked set (never destroyed) so descriptors a
// program destroys from its own static destructors still find it.
struct Registry {
  std::mutex mutex;  // guards live
  std::unordered_set<Descriptor*> live;
};
Registry& TheRegistry() {
  static Registry* r = new Registry();
  return *r;
}

template <typename T>
std::vector<T> Elements(const Value& v) {
  std::vector<T> out(static_cast<size_t>(v.count));
  if (!out.empty() && v.bytes.size() >= out.size() * sizeof(T))
    memcpy(out.data(), v.bytes.data(), out.size() * sizeof(T));
  return out;
}

const Value* Find(const State& s, int attr) {
  auto it = s.attrs.find(attr);
  return it == s.attrs.end() || it->second.count == 0 ? nullptr : &it->second;
}

}  // namespace

Descriptor* Live(cudnnBackendDescriptor_t d) {
  if (!d) return nullptr;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  Descriptor* p = static_cast<Descriptor*>(d);
  return r.live.count(p) ? p : nullptr;
}

Descriptor* Register(Descriptor* d) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.insert(d);
  return d;
}

void Unregister(Descriptor* d) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live.erase(d);
}

int64_t GetInt(const State& s, int attr, int64_t fallback) {
  const Value* v = Find(s, attr);
  if (!v) return fallback;
  if (v->type == CUDNN_TYPE_INT32) return Elements<int32_t>(*v)[0];
  if (v->type == CUDNN_TYPE_INT64) return Elements<int64_t>(*v)[0];
  return fallback;
}

std::vector<int64_t> GetInts(const State& s, int attr) {
  const Value* v = Find(s, attr);
  return v && v->type == CUDNN_TYPE_INT64 ? Elements<int64_t>(*v) : std::vector<int64_t>{};
}

int GetEnum(const State& s, int attr, int fallback) {
  const Value* v = Find(s, attr);
  return v && v->bytes.size() >= sizeof(int) ? Elements<int>(*v)[0] : fallback;
}

bool GetBool(const State& s, int attr, bool fallback) {
  const Value* v = Find(s, attr);
  return v && v->type == CUDNN_TYPE_BOOLEAN && !v->bytes.empty() ? v->bytes[0] != 0 : fallback;
}

Snapshot GetDesc(const State& s, int attr) {
  const Value* v = Find(s, attr);
  return v && !v->descs.empty() ? v->descs[0] : nullptr;
}

const std::vector<Snapshot>* GetDescs(const State& s, int attr) {
  const Value* v = Find(s, attr);
  return v ? &v->descs : nullptr;
}

void PutInts(State& s, int attr, const std::vector<int64_t>& values) {
  Value v{CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), {}, {}};
  v.bytes.resize(values.size() * sizeof(int64_t));
  if (!values.empty()) memcpy(v.bytes.data(), values.data(), v.bytes.size());
  s.attrs[attr] = std::move(v);
}

void PutInt32(State& s, int attr, int32_t value) {
  Value v{CUDNN_TYPE_INT32, 1, std::vector<unsigned char>(sizeof(value)), {}};
  memcpy(v.bytes.data(), &value, sizeof(value));
  s.attrs[attr] = std::move(v);
}

void PutEnums(State& s, int attr, cudnnBackendAttributeType_t type, const std::vector<int>& values) {
  Value v{type, static_cast<int64_t>(values.size()), {}, {}};
  v.bytes.resize(values.size() * sizeof(int));
  if (!values.empty()) memcpy(v.bytes.data(), values.data(), v.bytes.size());
  s.attrs[attr] = std::move(v);
}

void PutDescs(State& s, int attr, std::vector<Snapshot> descs) {
  Value v{CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(descs.size()), {}, std::move(descs)};
  s.attrs[attr] = std::move(v);
}

void PutChars(State& s, int attr, const std::string& text) {
  Value v{CUDNN_TYPE_CHAR, static_cast<int64_t>(text.size() + 1), {}, {}};
  v.bytes.assign(text.c_str(), text.c_str() + text.size() + 1);  // with its NUL, as a C string
  s.attrs[attr] = std::move(v);
}

std::shared_ptr<State> NewState(int type) {
  auto s = std::make_shared<State>();
  s->type = type;
  s->finalized = true;
  return s;
}

cudnnStatus_t Refuse(const char* api, cudnnStatus_t status, const std::string& why) {
  std::string members = "\"lib\":\"cudnn\",\"api\":" + simmath::Quoted(api) +
                        ",\"status\":" + std::to_string(static_cast<int>(status)) + ",\"why\":" + simmath::Quoted(why);
  simmath::TruthLine(members);
  return status;
}

}  // namespace simdnn
