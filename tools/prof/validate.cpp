#include "tools/prof/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace prof::tool {
namespace {

using nlohmann::json;

// Real traces write absolute microseconds (~1.7e15), where one double ulp is
// 0.25 µs: comparisons allow two ulps plus half a nanosecond.
double Slack(double t) { return 0.0005 + 2 * (std::nextafter(std::fabs(t), INFINITY) - std::fabs(t)); }

std::string Describe(const json& events, size_t i) {
  const json& e = events[i];
  std::string out = "event #" + std::to_string(i) + " (";
  auto field = [&](const char* key, bool first = false) {
    if (!e.is_object() || !e.contains(key)) return;
    std::string value = e[key].dump(-1, ' ', false, json::error_handler_t::replace);
    if (value.size() > 80) value = value.substr(0, 77) + "...";
    out += (first ? "" : " ") + std::string(key) + "=" + value;
  };
  field("ph", true);
  field("cat");
  field("name");
  field("pid");
  field("tid");
  field("ts");
  field("id");
  return out + ")";
}

class Validator {
 public:
  Validator(ValidateResult* result, size_t max_per_rule) : result_(result), max_(max_per_rule) {}

  void Run(const json& trace) {
    result_->strict = trace.is_object() && trace.contains("libprof");
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
      Fail("top-level", "the trace is not an object with a \"traceEvents\" array");
      return;
    }
    if (!trace.contains("distributedInfo") || !trace["distributedInfo"].is_object() ||
        !trace["distributedInfo"].contains("rank")) {
      Fail("distributed-rank", "top-level distributedInfo.rank is missing");
    }
    const json& events = trace["traceEvents"];
    for (size_t i = 0; i < events.size(); ++i) CheckEvent(events, i);
    CheckNesting(events);
    CheckFlows(events);
    for (const auto& [rule, n] : counts_) {
      if (n > max_) result_->errors.push_back("rule " + rule + ": " + std::to_string(n - max_) + " more violations");
    }
    for (const auto& [rule, n] : warning_counts_) {
      if (n > max_) result_->warnings.push_back("rule " + rule + ": " + std::to_string(n - max_) + " more");
    }
  }

 private:
  void Fail(const std::string& rule, const std::string& message) {
    if (++counts_[rule] <= max_) result_->errors.push_back("rule " + rule + ": " + message);
  }
  // A failure for libprof's traces, a warning for other producers'.
  void FailOrWarn(const std::string& rule, const std::string& message) {
    if (result_->strict) return Fail(rule, message);
    if (++warning_counts_[rule] <= max_) {
      result_->warnings.push_back("rule " + rule + " (tolerated: not a libprof trace): " + message);
    }
  }

  static std::string TrackKey(const json& e) { return e["pid"].dump() + "/" + e["tid"].dump(); }

  void CheckEvent(const json& events, size_t i) {
    const json& e = events[i];
    if (!e.is_object()) {
      Fail("top-level", Describe(events, i) + " is not an object");
      return;
    }
    for (const char* key : {"ph", "ts", "pid", "tid"}) {
      if (!e.contains(key)) Fail("event-fields", Describe(events, i) + " has no \"" + key + "\"");
    }
    if (!e.contains("ph") || !e["ph"].is_string()) return;
    const std::string ph = e["ph"];
    if (ph == "X") {
      for (const char* key : {"dur", "cat"}) {
        if (!e.contains(key)) Fail("event-fields", Describe(events, i) + " is an X event without \"" + key + "\"");
      }
    }
    for (const char* key : {"ts", "dur"}) {
      if (!e.contains(key)) continue;
      if (!e[key].is_number() || e[key].get<double>() < 0) {
        Fail("ts-nonnegative", Describe(events, i) + " has " + key + "=" + e[key].dump() + ", not a number >= 0");
      }
    }
    if (ph == "X" && e.value("cat", "") == "kernel") {
      const json* args = e.contains("args") && e["args"].is_object() ? &e["args"] : nullptr;
      for (const char* key : {"stream", "correlation"}) {
        if (!args || !args->contains(key)) {
          Fail("kernel-args", Describe(events, i) + " is a kernel without args." + key);
        }
      }
    }
  }

  // A usable X event: has numeric ts/dur and pid/tid (other rules report the rest).
  static bool IsSlice(const json& e) {
    return e.is_object() && e.contains("ph") && e["ph"] == "X" && e.contains("ts") && e["ts"].is_number() &&
           e.contains("dur") && e["dur"].is_number() && e.contains("pid") && e.contains("tid");
  }

  struct Slice {
    double start;
    double end;
    size_t index;
  };

  void CheckNesting(const json& events) {
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      if (!IsSlice(e)) continue;
      double ts = e["ts"].get<double>();
      tracks_[TrackKey(e)].push_back({ts, ts + e["dur"].get<double>(), i});
    }
    for (auto& [key, slices] : tracks_) {
      std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      std::vector<double>& reach = max_end_[key];
      for (const Slice& s : slices) reach.push_back(reach.empty() ? s.end : std::max(reach.back(), s.end));
      std::vector<const Slice*> open;
      for (const Slice& s : slices) {
        while (!open.empty() && open.back()->end <= s.start + Slack(s.start)) open.pop_back();
        if (!open.empty() && s.end > open.back()->end + Slack(s.end)) {
          bool sync = events[s.index].value("cat", "") == "cuda_sync" ||
                      events[open.back()->index].value("cat", "") == "cuda_sync";
          std::string message = Describe(events, s.index) + " starts inside " + Describe(events, open.back()->index) +
                                " but ends after it";
          if (sync) {
            FailOrWarn("x-nesting", message);
          } else {
            Fail("x-nesting", message);
          }
          continue;  // keep the enclosing slice as the reference
        }
        open.push_back(&s);
      }
    }
  }

  // Does an X slice on the track contain t?
  bool InsideSlice(const std::string& key, double t) const {
    auto it = tracks_.find(key);
    if (it == tracks_.end()) return false;
    const std::vector<Slice>& slices = it->second;
    // Sorted by start: some slice holds t iff the latest end among those
    // starting at or before t reaches t.
    auto end = std::upper_bound(slices.begin(), slices.end(), t + Slack(t),
                                [](double v, const Slice& s) { return v < s.start; });
    if (end == slices.begin()) return false;
    double reach = max_end_.at(key)[static_cast<size_t>(end - slices.begin()) - 1];
    return reach + Slack(reach) >= t;
  }

  void CheckFlows(const json& events) {
    std::set<std::pair<std::string, std::string>> finishes;  // (cat, id)
    for (const json& e : events) {
      if (!e.is_object() || !e.contains("ph") || !e.contains("id")) continue;
      if (e["ph"] == "f" || e["ph"] == "t") finishes.insert({e.value("cat", ""), e["id"].dump()});
    }
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      if (!e.is_object() || !e.contains("ph") || e["ph"] != "s") continue;
      if (!e.contains("id")) {
        Fail("flow-matched", Describe(events, i) + " is a flow start without \"id\"");
        continue;
      }
      if (!finishes.count({e.value("cat", ""), e["id"].dump()})) {
        FailOrWarn("flow-matched", Describe(events, i) + " has no flow finish (\"f\") with its cat and id");
      }
      if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("pid") || !e.contains("tid")) continue;
      if (!InsideSlice(TrackKey(e), e["ts"].get<double>())) {
        Fail("flow-binding", Describe(events, i) + " does not lie inside an X slice on its pid/tid");
      }
    }
  }

  ValidateResult* result_;
  size_t max_;
  std::map<std::string, size_t> counts_;
  std::map<std::string, size_t> warning_counts_;
  std::map<std::string, std::vector<Slice>> tracks_;
  std::map<std::string, std::vector<double>> max_end_;  // per track: running max of slice ends
};

}  // namespace

ValidateResult ValidateTrace(const json& trace, size_t max_per_rule) {
  ValidateResult result;
  Validator(&result, max_per_rule).Run(trace);
  return result;
}

}  // namespace prof::tool
