#include "tools/prof/merge.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace prof::tool {
namespace {

using nlohmann::json;

int64_t BaseNs(const json& trace) {
  auto it = trace.find("baseTimeNanoseconds");
  return it != trace.end() && it->is_number() ? it->get<int64_t>() : 0;
}

int RankOf(const json& trace, int fallback) {
  auto it = trace.find("distributedInfo");
  if (it == trace.end() || !it->is_object() || !it->contains("rank") || !(*it)["rank"].is_number()) return fallback;
  return (*it)["rank"].get<int>();
}

// Shifts a µs timestamp by whole nanoseconds, keeping three decimals.
json Shift(const json& ts, int64_t shift_ns) {
  if (shift_ns == 0 || !ts.is_number()) return ts;
  double shifted = std::round((ts.get<double>() * 1000.0 + static_cast<double>(shift_ns))) / 1000.0;
  return shifted;
}

}  // namespace

bool MergeTraces(std::vector<MergeInput>* inputs, json* merged, std::string* error) {
  int64_t base = INT64_MAX;
  for (const MergeInput& in : *inputs) {
    if (!in.trace.is_object() || !in.trace.contains("traceEvents") || !in.trace["traceEvents"].is_array()) {
      *error = in.path + ": no traceEvents array";
      return false;
    }
    base = std::min(base, BaseNs(in.trace));
  }
  if (inputs->empty()) base = 0;

  json events = json::array();
  json sources = json::array();
  std::set<int> ranks;
  for (size_t slot = 0; slot < inputs->size(); ++slot) {
    MergeInput& in = (*inputs)[slot];
    int rank = RankOf(in.trace, static_cast<int>(slot));
    ranks.insert(rank);
    int64_t shift_ns = BaseNs(in.trace) - base;
    int64_t pid_base = static_cast<int64_t>(slot + 1) * kMergePidBlock;
    std::string prefix = "rank " + std::to_string(rank);
    std::set<json> pids;
    for (json& e : in.trace["traceEvents"]) {
      if (!e.is_object()) {
        events.push_back(std::move(e));
        continue;
      }
      if (e.contains("pid")) {
        json& pid = e["pid"];
        pid = pid.is_number() ? json(pid_base + pid.get<int64_t>()) : json(prefix + ": " + pid.dump());
        pids.insert(pid);
      }
      if (e.contains("ts")) e["ts"] = Shift(e["ts"], shift_ns);
      // Flow ids (correlation ids) repeat across processes: keep them apart.
      if (e.contains("id") && e["id"].is_number()) {
        e["id"] = static_cast<int64_t>(slot) << 40 | e["id"].get<int64_t>();
      }
      // Group each rank's processes: its name prefixed, sorted by rank.
      if (e.value("ph", "") == "M" && e.contains("args") && e["args"].is_object()) {
        std::string name = e.value("name", "");
        if (name == "process_name" && e["args"].contains("name") && e["args"]["name"].is_string()) {
          e["args"]["name"] = prefix + ": " + e["args"]["name"].get<std::string>();
        } else if (name == "process_sort_index" && e["args"].contains("sort_index") &&
                   e["args"]["sort_index"].is_number()) {
          e["args"]["sort_index"] = pid_base + e["args"]["sort_index"].get<int64_t>() % kMergePidBlock;
        }
      }
      events.push_back(std::move(e));
    }
    // A label per process so Perfetto shows which rank it belongs to.
    for (const json& pid : pids) {
      events.push_back({{"ph", "M"}, {"name", "process_labels"}, {"pid", pid}, {"tid", 0}, {"ts", 0},
                        {"args", {{"labels", prefix}}}});
    }
    json source = {{"file", in.path}, {"rank", rank}, {"pid_base", pid_base}, {"flow_id_base", int64_t(slot) << 40},
                   {"baseTimeNanoseconds", BaseNs(in.trace)}};
    if (in.trace.contains("libprof")) source["libprof"] = in.trace["libprof"];
    sources.push_back(std::move(source));
  }

  json out = json::object();
  out["schemaVersion"] = 1;
  const json* first = inputs->empty() ? nullptr : &(*inputs)[0].trace;
  out["deviceProperties"] = first && first->contains("deviceProperties") ? (*first)["deviceProperties"] : json::array();
  int world = 0;
  for (const MergeInput& in : *inputs) {
    if (in.trace.contains("distributedInfo") && in.trace["distributedInfo"].is_object()) {
      world = std::max(world, in.trace["distributedInfo"].value("world_size", 0));
    }
  }
  out["distributedInfo"] = {{"rank", ranks.empty() ? 0 : *ranks.begin()},
                            {"world_size", std::max<int>(world, static_cast<int>(ranks.size()))},
                            {"ranks", json(std::vector<int>(ranks.begin(), ranks.end()))}};
  bool all_libprof = !inputs->empty() && std::all_of(inputs->begin(), inputs->end(), [](const MergeInput& in) {
    return in.trace.contains("libprof");
  });
  // Marks the merge as libprof's own, so `prof validate` applies every rule.
  if (all_libprof) out["libprof"] = {{"merged_inputs", inputs->size()}};
  out["libprof_merge"] = {{"inputs", std::move(sources)}};
  out["traceEvents"] = std::move(events);
  out["traceName"] = "merged";
  out["displayTimeUnit"] = "ms";
  out["baseTimeNanoseconds"] = base;
  *merged = std::move(out);
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
    t["distributedInfo"] = {{"rank", source.value("rank", 0)},
                            {"world_size", merged["distributedInfo"].value("world_size", 1)}};
    if (merged.contains("deviceProperties")) t["deviceProperties"] = merged["deviceProperties"];
    if (source.contains("libprof")) t["libprof"] = source["libprof"];
    t["baseTimeNanoseconds"] = source.value("baseTimeNanoseconds", int64_t{0});
    t["traceEvents"] = json::array();
    traces->push_back(std::move(t));
  }
  for (const json& e0 : merged["traceEvents"]) {
    if (!e0.is_object() || !e0.contains("pid")) continue;
    size_t slot;
    json e = e0;
    const json& pid = e["pid"];
    if (pid.is_number()) {
      int64_t p = pid.get<int64_t>();
      if (p < kMergePidBlock) continue;
      slot = static_cast<size_t>(p / kMergePidBlock - 1);
      e["pid"] = p % kMergePidBlock;
    } else {
      continue;  // string pids ("Spans") hold nothing the summary reads
    }
    if (slot >= traces->size()) continue;
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_labels") continue;
    int64_t shift_ns = sources[slot].value("baseTimeNanoseconds", int64_t{0}) - base;
    if (e.contains("ts")) e["ts"] = Shift(e["ts"], -shift_ns);
    if (e.contains("id") && e["id"].is_number()) e["id"] = e["id"].get<int64_t>() & ((int64_t{1} << 40) - 1);
    (*traces)[slot]["traceEvents"].push_back(std::move(e));
  }
  return true;
}

}  // namespace prof::tool
