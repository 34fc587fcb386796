#include "tools/prof/trace/window_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "model/collectives.h"
#include "tools/prof/trace/field_values.h"

namespace prof::tool {

template <typename W>
void WindowReader<W>::ReadCollective(const JsonValue& e, const std::string& name, uint64_t start, uint64_t end) {
  JsonValue seq = ArgOf(e, "Seq");
  constexpr uint8_t kUnknown = 0xFF;
  const uint8_t func = Lookup(name.substr(4), CollFuncName, static_cast<int>(CollFunc::kCount), kUnknown);
  if (!seq.is_number() || func == kUnknown) return;
  CollectiveCall c{};
  c.start_ns = start;
  c.end_ns = end;
  c.comm_id = CommIdOf(StrArg(e, "Process Group Name", ""));
  const uint64_t in = Arg<uint64_t>(e, "In msg nelems", 0), out = Arg<uint64_t>(e, "Out msg nelems", 0);
  const int group = Arg<int>(e, "Group size", 0);
  switch (static_cast<CollFunc>(func)) {
    case CollFunc::kReduceScatter:
    case CollFunc::kScatter: c.count = out; break;
    case CollFunc::kAlltoAll: c.count = group > 0 ? in / static_cast<uint64_t>(group) : in; break;
    default: c.count = in; break;  // AllGather and Gather: in is the count too
  }
  c.seq = NumOf<uint64_t>(seq, 0);
  c.stream = Arg<uint64_t>(e, "stream handle", Arg<uint64_t>(e, "stream", 0));  // "stream" in older traces
  c.tid = static_cast<uint32_t>(IntMember(e, "tid", 0));
  c.correlation_id = Arg<uint32_t>(e, "correlation", 0);
  c.root_or_peer = static_cast<CollFunc>(func) == CollFunc::kSend   ? Arg<int32_t>(e, "Dst Rank", -1)
                   : static_cast<CollFunc>(func) == CollFunc::kRecv ? Arg<int32_t>(e, "Src Rank", -1)
                                                                    : -1;
  c.result = Arg<int32_t>(e, "result", 0);
  c.func = func;
  c.datatype = static_cast<int8_t>(Lookup(StrArg(e, "dtype", ""), CollDtypeName, 12, kUnknown));
  c.source = static_cast<uint8_t>(StrArg(e, "source", "") == "nccl profiler plugin" ? CollSource::kProfilerPlugin
                                                                                     : CollSource::kWrapper);
  w_.collectives.push_back(c);
  if (group > 0) comm_sizes_.emplace(c.comm_id, group);
}

template <typename W>
uint64_t WindowReader<W>::CommIdOf(const std::string& name) {
  if (name.empty()) return 0;
  const bool hex = name.size() > 2 && name[0] == '0' && (name[1] == 'x' || name[1] == 'X');
  char* end = nullptr;
  const uint64_t id = std::strtoull(name.c_str() + (hex ? 2 : 0), &end, hex ? 16 : 10);
  return end != nullptr && *end == '\0' ? id : 0;
}

template <typename W>
void WindowReader<W>::ReadCommunicators(const JsonValue& top) {
  if (w_.collectives.empty()) return;
  std::stable_sort(w_.collectives.begin(), w_.collectives.end(),
                   [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
  JsonValue d = top.valid() ? top.Get("distributedInfo") : JsonValue();
  JsonValue pgs = d.is_object() ? d.Get("pg_config") : JsonValue();
  std::map<uint64_t, CommInfo> comms;
  for (JsonValue pg = pgs.is_array() ? pgs.first() : JsonValue(); pg.valid(); pg = pgs.next(pg)) {
    if (!pg.is_object()) continue;
    CommInfo c;
    c.id = CommIdOf(StrOf(pg, "pg_name", ""));
    c.nranks = static_cast<int>(IntMember(pg, "pg_size", 0));
    c.rank = static_cast<int>(IntMember(pg, "pg_rank", w_.meta.rank));
    comms.emplace(c.id, c);
  }
  for (const auto& [id, size] : comm_sizes_) {
    CommInfo c;
    c.id = id;
    c.nranks = size;
    c.rank = w_.meta.rank;
    comms.emplace(id, c);
  }
  for (const auto& [id, c] : comms) w_.communicators.push_back(c);
  // "2.28.9" -> 22809, as NCCL_VERSION_CODE.
  const std::string version = d.is_object() ? StrOf(d, "nccl_version", "") : "";
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d", &major, &minor, &patch) == 3 && major > 0 && minor >= 0 &&
      patch >= 0 && minor < 100 && patch < 100) {
    w_.meta.nccl_version = major * 10000 + minor * 100 + patch;
  }
}

template void WindowReader<Window>::ReadCollective(const JsonValue&, const std::string&, uint64_t, uint64_t);
template void WindowReader<CompactWindow>::ReadCollective(const JsonValue&, const std::string&, uint64_t, uint64_t);
template uint64_t WindowReader<Window>::CommIdOf(const std::string&);
template uint64_t WindowReader<CompactWindow>::CommIdOf(const std::string&);
template void WindowReader<Window>::ReadCommunicators(const JsonValue&);
template void WindowReader<CompactWindow>::ReadCommunicators(const JsonValue&);

}  // namespace prof::tool
