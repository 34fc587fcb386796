// The merge on documents in memory (tests, `prof summary` on a merged
// document): MergeTraces runs the streaming merge on their text;
// SplitMerged is its inverse.
#include <cmath>
#include <nlohmann/json.hpp>

#include "exporters/files/byte_sink.h"
#include "tools/prof/merge/merge.h"

namespace prof::tool {
namespace {

using nlohmann::json;

// An integer baseTimeNanoseconds, or 0 (absent, or not an int64 integer).
int64_t BaseNs(const json& trace) {
  auto it = trace.find("baseTimeNanoseconds");
  if (it == trace.end() || !it->is_number()) return 0;
  if (it->is_number_integer()) return it->is_number_unsigned() && it->get<uint64_t>() > INT64_MAX ? 0 : it->get<int64_t>();
  double d = it->get<double>();
  return d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d) ? static_cast<int64_t>(d) : 0;
}

// Shifts a µs timestamp by whole nanoseconds, keeping three decimals.
json Shift(const json& ts, int64_t shift_ns) {
  if (shift_ns == 0 || !ts.is_number()) return ts;
  double shifted = std::round((ts.get<double>() * 1000.0 + static_cast<double>(shift_ns))) / 1000.0;
  return shifted;
}

}  // namespace

bool MergeTraces(std::vector<MergeInput>* inputs, json* merged, std::string* error) {
  std::vector<std::string> texts;
  std::vector<MergeSource> sources;
  for (const MergeInput& in : *inputs) {
    if (!in.trace.is_object() || !in.trace.contains("traceEvents") || !in.trace["traceEvents"].is_array()) {
      *error = in.path + ": no traceEvents array";
      return false;
    }
    texts.push_back(in.trace.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  for (size_t i = 0; i < inputs->size(); ++i) {
    const std::string& text = texts[i];
    sources.push_back({(*inputs)[i].path, [&text](std::string*) { return MemorySource(text); }});
  }
  std::string out;
  StringSink sink(&out);
  MergeReport report;
  if (!StreamMerge(sources, sink, &report, error)) return false;
  inputs->clear();
  *merged = json::parse(out);
  return true;
}

bool SplitMerged(const json& merged, std::vector<json>* traces) {
  if (!merged.is_object() || !merged.contains("libprof_merge") || !merged.contains("traceEvents")) return false;
  const json& sources = merged["libprof_merge"].value("inputs", json::array());
  int64_t base = BaseNs(merged);
  traces->clear();
  for (const json& source : sources) {
    json t = json::object();
    t["schemaVersion"] = 1;
    if (source.contains("rank")) {
      t["distributedInfo"] = {{"rank", source.value("rank", 0)},
                              {"world_size", merged["distributedInfo"].value("world_size", 1)}};
    }
    if (merged.contains("deviceProperties")) t["deviceProperties"] = merged["deviceProperties"];
    if (source.contains("libprof")) t["libprof"] = source["libprof"];
    t["baseTimeNanoseconds"] = BaseNs(source);
    t["traceEvents"] = json::array();
    traces->push_back(std::move(t));
  }
  for (const json& e0 : merged["traceEvents"]) {
    if (!e0.is_object() || !e0.contains("pid")) continue;
    size_t slot;
    json e = e0;
    const json& pid = e["pid"];
    if (pid.is_number_integer()) {
      int64_t p = pid.get<int64_t>();
      if (p < kMergePidBlock) continue;
      slot = static_cast<size_t>(p / kMergePidBlock - 1);
      e["pid"] = p % kMergePidBlock;
    } else {
      continue;  // string pids ("Spans") hold nothing the summary reads
    }
    if (slot >= traces->size()) continue;
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_labels") continue;
    int64_t shift_ns = 0;
    if (__builtin_sub_overflow(BaseNs(sources[slot]), base, &shift_ns) ||
        __builtin_sub_overflow(shift_ns, sources[slot].value("clock_offset_ns", int64_t{0}), &shift_ns)) {
      shift_ns = 0;
    }
    if (e.contains("ts")) e["ts"] = Shift(e["ts"], -shift_ns);
    if (e.contains("id") && e["id"].is_number_integer()) {
      e["id"] = e["id"].get<int64_t>() & ((int64_t{1} << kMergeFlowIdBits) - 1);
    }
    (*traces)[slot]["traceEvents"].push_back(std::move(e));
  }
  return true;
}

}  // namespace prof::tool
