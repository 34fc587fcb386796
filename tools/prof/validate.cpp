#include "tools/prof/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

namespace prof::tool {
namespace {

// Real traces write absolute microseconds (~1.7e15), where one double ulp is
// 0.25 µs: comparisons allow two ulps plus half a nanosecond.
double Slack(double t) { return 0.0005 + 2 * (std::nextafter(std::fabs(t), INFINITY) - std::fabs(t)); }

std::string Describe(const JsonValue& e, uint64_t i) {
  std::string out = "event #" + std::to_string(i) + " (";
  auto field = [&](const char* key, bool first = false) {
    if (!e.is_object()) return;
    JsonValue v = e.Get(key);
    if (!v.valid()) return;
    std::string value = v.Dump();
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

constexpr uint64_t kSyncBit = uint64_t{1} << 63;  // in Slice::index: the slice is a "cuda_sync"

struct Slice {
  double start;
  double end;
  uint64_t index;  // event index, | kSyncBit
};

// A flow's (cat, id), compared as their dumps are: integers by value,
// anything else by its dump, interned.
struct FlowKey {
  uint32_t cat;
  uint32_t tag;  // 0: v is an int64, 1: v is a uint64 above INT64_MAX, 2: v is an interned dump
  uint64_t v;
  bool operator<(const FlowKey& o) const {
    return cat != o.cat ? cat < o.cat : tag != o.tag ? tag < o.tag : v < o.v;
  }
  bool operator==(const FlowKey& o) const { return cat == o.cat && tag == o.tag && v == o.v; }
};

struct FlowStart {
  FlowKey key;
  double ts;
  uint64_t index;
  uint32_t track;
  bool has_id;
  bool bindable;  // numeric ts, pid and tid: the flow-binding rule applies
};

// A message whose words may need events described after the stream.
struct Pending {
  enum Form { kText, kNesting, kNoId, kNoFinish, kUnbound } form;
  std::string rule;
  bool warning;
  std::string text;  // kText
  uint64_t a, b;     // event indices
};

}  // namespace

class TraceValidator::Impl {
 public:
  explicit Impl(size_t max) : max_(max) {}

  void SetTopLevel(bool has_event_array, bool has_rank, bool strict) {
    has_event_array_ = has_event_array;
    has_rank_ = has_rank;
    strict_ = strict;
  }

  void ResetEvents() {
    Impl fresh(max_);
    fresh.has_event_array_ = has_event_array_;
    fresh.has_rank_ = has_rank_;
    fresh.strict_ = strict_;
    *this = std::move(fresh);
  }

  void Event(uint64_t i, const JsonValue& e) {
    CheckEvent(e, i);
    if (!e.is_object()) return;
    JsonValue ph = e.Get("ph");
    if (!ph.is_string()) return;
    std::string_view p = ph.str();
    if (p == "X") {
      JsonValue ts = e.Get("ts"), dur = e.Get("dur"), pid = e.Get("pid"), tid = e.Get("tid");
      if (!ts.is_number() || !dur.is_number() || !pid.valid() || !tid.valid()) return;
      uint64_t index = i;
      if (e.Get("cat").IsString("cuda_sync")) index |= kSyncBit;
      Track(pid, tid).push_back({ts.number(), ts.number() + dur.number(), index});
    } else if ((p == "f" || p == "t") && e.Has("id")) {
      finishes_.push_back(KeyOf(e));
    } else if (p == "s") {
      FlowStart f{};
      f.index = i;
      f.has_id = e.Has("id");
      if (f.has_id) f.key = KeyOf(e);
      JsonValue ts = e.Get("ts"), pid = e.Get("pid"), tid = e.Get("tid");
      f.bindable = f.has_id && ts.is_number() && pid.valid() && tid.valid();
      if (f.bindable) {
        f.ts = ts.number();
        f.track = TrackId(pid, tid);
      }
      flows_.push_back(f);
    }
  }

  ValidateResult Finish(const EventReplay& replay) {
    ValidateResult result;
    result.strict = strict_;
    if (!has_event_array_) {
      result.errors.push_back("rule top-level: the trace is not an object with a \"traceEvents\" array");
      return result;
    }
    std::vector<Pending> all;
    if (!has_rank_) all.push_back({Pending::kText, "distributed-rank", false, "top-level distributedInfo.rank is missing", 0, 0});
    for (Pending& p : pending_) all.push_back(std::move(p));
    pending_.clear();
    CheckNesting();
    CheckFlows();
    for (Pending& p : pending_) all.push_back(std::move(p));
    // Words for the messages that name events seen earlier.
    std::map<uint64_t, std::string> described;
    for (const Pending& p : all) {
      if (p.form == Pending::kText) continue;
      described[p.a];
      if (p.form == Pending::kNesting) described[p.b];
    }
    if (!described.empty()) {
      bool replayed = replay && replay([&](uint64_t i, const JsonValue& e) {
        auto it = described.find(i);
        if (it != described.end()) it->second = Describe(e, i);
      });
      for (auto& [i, words] : described) {
        if (!replayed || words.empty()) words = "event #" + std::to_string(i);
      }
    }
    for (const Pending& p : all) {
      std::string message;
      switch (p.form) {
        case Pending::kText: message = p.text; break;
        case Pending::kNesting:
          message = described[p.a] + " starts inside " + described[p.b] + " but ends after it";
          break;
        case Pending::kNoId: message = described[p.a] + " is a flow start without \"id\""; break;
        case Pending::kNoFinish: message = described[p.a] + " has no flow finish (\"f\") with its cat and id"; break;
        case Pending::kUnbound: message = described[p.a] + " does not lie inside an X slice on its pid/tid"; break;
      }
      if (p.warning) {
        result.warnings.push_back("rule " + p.rule + " (tolerated: not a libprof trace): " + message);
      } else {
        result.errors.push_back("rule " + p.rule + ": " + message);
      }
    }
    for (const auto& [rule, n] : counts_) {
      if (n > max_) result.errors.push_back("rule " + rule + ": " + std::to_string(n - max_) + " more violations");
    }
    for (const auto& [rule, n] : warning_counts_) {
      if (n > max_) result.warnings.push_back("rule " + rule + ": " + std::to_string(n - max_) + " more");
    }
    return result;
  }

 private:
  // Counts the violation; true when its message is to be kept.
  bool Count(const std::string& rule) { return ++counts_[rule] <= max_; }
  void Fail(const std::string& rule, Pending p) {
    if (!Count(rule)) return;
    p.rule = rule;
    p.warning = false;
    pending_.push_back(std::move(p));
  }
  void FailText(const std::string& rule, std::string text) { Fail(rule, {Pending::kText, "", false, std::move(text), 0, 0}); }
  // A failure for libprof's traces, a warning for other producers'.
  void FailOrWarn(const std::string& rule, Pending p) {
    if (strict_) return Fail(rule, std::move(p));
    if (++warning_counts_[rule] > max_) return;
    p.rule = rule;
    p.warning = true;
    pending_.push_back(std::move(p));
  }

  void CheckEvent(const JsonValue& e, uint64_t i) {
    if (!e.is_object()) {
      FailText("top-level", Describe(e, i) + " is not an object");
      return;
    }
    for (const char* key : {"ph", "ts", "pid", "tid"}) {
      if (!e.Has(key)) FailText("event-fields", Describe(e, i) + " has no \"" + key + "\"");
    }
    JsonValue ph = e.Get("ph");
    if (!ph.is_string()) return;
    bool x = ph.str() == "X";
    if (x) {
      for (const char* key : {"dur", "cat"}) {
        if (!e.Has(key)) FailText("event-fields", Describe(e, i) + " is an X event without \"" + key + "\"");
      }
    }
    for (const char* key : {"ts", "dur"}) {
      JsonValue v = e.Get(key);
      if (!v.valid()) continue;
      if (!v.is_number() || v.number() < 0) {
        FailText("ts-nonnegative", Describe(e, i) + " has " + key + "=" + v.Dump() + ", not a number >= 0");
      }
    }
    if (x && e.Get("cat").IsString("kernel")) {
      JsonValue args = e.Get("args");
      for (const char* key : {"stream", "correlation"}) {
        if (!args.is_object() || !args.Has(key)) {
          FailText("kernel-args", Describe(e, i) + " is a kernel without args." + key);
        }
      }
    }
  }

  // Tracks are named as "<pid dump>/<tid dump>"; the same source text
  // maps to its track without dumping again.
  uint32_t TrackId(const JsonValue& pid, const JsonValue& tid) {
    raw_key_.assign(pid.raw());
    raw_key_ += '\0';
    raw_key_ += tid.raw();
    auto it = by_raw_.find(raw_key_);
    if (it != by_raw_.end()) return it->second;
    std::string name = pid.Dump() + "/" + tid.Dump();
    auto [named, inserted] = by_name_.try_emplace(name, static_cast<uint32_t>(track_names_.size()));
    if (inserted) {
      track_names_.push_back(name);
      slices_.emplace_back();
    }
    if (by_raw_.size() < 100000) by_raw_.emplace(raw_key_, named->second);
    return named->second;
  }
  std::vector<Slice>& Track(const JsonValue& pid, const JsonValue& tid) { return slices_[TrackId(pid, tid)]; }

  uint32_t Intern(std::unordered_map<std::string, uint32_t>* table, std::string s) {
    auto [it, inserted] = table->try_emplace(std::move(s), static_cast<uint32_t>(table->size()));
    return it->second;
  }

  FlowKey KeyOf(const JsonValue& e) {
    FlowKey k{};
    JsonValue cat = e.Get("cat");
    // A cat that is not a string is keyed by its dump, apart from strings.
    k.cat = Intern(&cats_, cat.is_string() ? std::string(cat.str()) : cat.valid() ? "\x01" + cat.Dump() : "");
    JsonValue id = e.Get("id");
    int64_t i;
    uint64_t u;
    if (id.is_integer() && id.ToInt64(&i)) {
      k.tag = 0;
      k.v = static_cast<uint64_t>(i);
    } else if (id.is_integer() && id.ToUint64(&u)) {
      k.tag = 1;
      k.v = u;
    } else {
      k.tag = 2;
      k.v = Intern(&ids_, id.Dump());
    }
    return k;
  }

  void CheckNesting() {
    std::vector<uint32_t> order(track_names_.size());
    for (uint32_t t = 0; t < order.size(); ++t) order[t] = t;
    std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) { return track_names_[a] < track_names_[b]; });
    for (uint32_t t : order) {
      std::vector<Slice>& slices = slices_[t];
      std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
      });
      std::vector<const Slice*> open;
      for (const Slice& s : slices) {
        while (!open.empty() && open.back()->end <= s.start + Slack(s.start)) open.pop_back();
        if (!open.empty() && s.end > open.back()->end + Slack(s.end)) {
          bool sync = (s.index & kSyncBit) || (open.back()->index & kSyncBit);
          Pending p{Pending::kNesting, "", false, "", s.index & ~kSyncBit, open.back()->index & ~kSyncBit};
          if (sync) {
            FailOrWarn("x-nesting", std::move(p));
          } else {
            Fail("x-nesting", std::move(p));
          }
          continue;  // keep the enclosing slice as the reference
        }
        open.push_back(&s);
      }
    }
  }

  void CheckFlows() {
    std::sort(finishes_.begin(), finishes_.end());
    finishes_.erase(std::unique(finishes_.begin(), finishes_.end()), finishes_.end());
    // Which flow starts lie inside a slice: one track at a time (slices are
    // sorted by start): some slice holds t iff the latest end among those
    // starting at or before t reaches t.
    std::vector<std::vector<uint32_t>> by_track(slices_.size());
    for (uint32_t k = 0; k < flows_.size(); ++k) {
      if (flows_[k].bindable) by_track[flows_[k].track].push_back(k);
    }
    std::vector<bool> inside(flows_.size(), false);
    std::vector<double> reach;
    for (size_t t = 0; t < by_track.size(); ++t) {
      if (by_track[t].empty()) continue;
      const std::vector<Slice>& slices = slices_[t];
      reach.clear();
      for (const Slice& s : slices) reach.push_back(reach.empty() ? s.end : std::max(reach.back(), s.end));
      for (uint32_t k : by_track[t]) {
        double ts = flows_[k].ts;
        auto end = std::upper_bound(slices.begin(), slices.end(), ts + Slack(ts),
                                    [](double v, const Slice& s) { return v < s.start; });
        if (end == slices.begin()) continue;
        double r = reach[static_cast<size_t>(end - slices.begin()) - 1];
        inside[k] = r + Slack(r) >= ts;
      }
    }
    for (uint32_t k = 0; k < flows_.size(); ++k) {
      const FlowStart& f = flows_[k];
      if (!f.has_id) {
        Fail("flow-matched", {Pending::kNoId, "", false, "", f.index, 0});
        continue;
      }
      if (!std::binary_search(finishes_.begin(), finishes_.end(), f.key)) {
        FailOrWarn("flow-matched", {Pending::kNoFinish, "", false, "", f.index, 0});
      }
      if (f.bindable && !inside[k]) Fail("flow-binding", {Pending::kUnbound, "", false, "", f.index, 0});
    }
  }

  size_t max_;
  bool has_event_array_ = false;
  bool has_rank_ = false;
  bool strict_ = false;
  std::map<std::string, size_t> counts_;
  std::map<std::string, size_t> warning_counts_;
  std::vector<Pending> pending_;  // kept messages, in the order they were found
  // Tracks: by source text of pid and tid (a cache), by name, and their slices.
  std::string raw_key_;
  std::unordered_map<std::string, uint32_t> by_raw_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::string> track_names_;
  std::vector<std::vector<Slice>> slices_;
  std::unordered_map<std::string, uint32_t> cats_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<FlowKey> finishes_;
  std::vector<FlowStart> flows_;
};

TraceValidator::TraceValidator(size_t max_per_rule) : impl_(std::make_unique<Impl>(max_per_rule)) {}
TraceValidator::~TraceValidator() = default;
void TraceValidator::SetTopLevel(bool has_event_array, bool has_rank, bool strict) {
  impl_->SetTopLevel(has_event_array, has_rank, strict);
}
void TraceValidator::Event(uint64_t index, const JsonValue& event) { impl_->Event(index, event); }
void TraceValidator::ResetEvents() { impl_->ResetEvents(); }
ValidateResult TraceValidator::Finish(const EventReplay& replay) { return impl_->Finish(replay); }

namespace {

// Streams a whole trace into a TraceValidator, noting the top-level facts.
class ValidatingHandler : public TraceStreamHandler {
 public:
  explicit ValidatingHandler(TraceValidator* v) : v_(v) {}
  void Member(std::string_view key, const JsonValue& value) override {
    if (key == "libprof") strict_ = true;
    if (key == "distributedInfo") has_rank_ = value.is_object() && value.Has("rank");
  }
  void EventsBegin(bool is_array) override {
    if (seen_events_) v_->ResetEvents();
    seen_events_ = true;
    is_array_ = is_array;
  }
  void Event(uint64_t index, const JsonValue& event) override { v_->Event(index, event); }
  void EventsEnd(uint64_t count) override { events_ = count; }

  TraceValidator* v_;
  bool strict_ = false, has_rank_ = false, is_array_ = false, seen_events_ = false;
  uint64_t events_ = 0;
};

// Replays the events of a source reopened by `open`.
class ReplayHandler : public TraceStreamHandler {
 public:
  explicit ReplayHandler(const EventSink& sink) : sink_(sink) {}
  void Member(std::string_view, const JsonValue&) override {}
  void EventsBegin(bool) override {}
  void Event(uint64_t index, const JsonValue& event) override { sink_(index, event); }
  void EventsEnd(uint64_t) override {}
  const EventSink& sink_;
};

bool ValidateSource(const std::function<std::unique_ptr<ByteSource>(std::string*)>& open, const std::string& label,
                    ValidateResult* result, uint64_t* events, std::string* error, size_t max_per_rule) {
  std::unique_ptr<ByteSource> source = open(error);
  if (!source) return false;
  TraceValidator validator(max_per_rule);
  ValidatingHandler handler(&validator);
  TraceStreamResult read = StreamTrace(source.get(), &handler);
  source.reset();
  if (!read.ok) {
    // A read error names the file already; a syntax error is strict-json's.
    *error = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + label + ": " + read.error : read.error;
    return false;
  }
  validator.SetTopLevel(read.root_is_object && handler.is_array_, read.root_is_object && handler.has_rank_,
                        read.root_is_object && handler.strict_);
  *events = handler.is_array_ ? handler.events_ : 0;
  *result = validator.Finish([&](const EventSink& sink) {
    std::string ignored;
    std::unique_ptr<ByteSource> again = open(&ignored);
    if (!again) return false;
    ReplayHandler replay(sink);
    return StreamTrace(again.get(), &replay).ok;
  });
  return true;
}

}  // namespace

bool ValidateFile(const std::string& path, uint64_t max_unpacked_bytes, ValidateResult* result, uint64_t* events,
                  std::string* error, size_t max_per_rule) {
  return ValidateSource([&](std::string* e) { return OpenFileSource(path, max_unpacked_bytes, e); }, path, result,
                        events, error, max_per_rule);
}

bool ValidateBytes(std::string_view bytes, ValidateResult* result, uint64_t* events, std::string* error,
                   size_t max_per_rule) {
  return ValidateSource([&](std::string*) { return MemorySource(bytes); }, "trace", result, events, error,
                        max_per_rule);
}

ValidateResult ValidateTrace(const nlohmann::json& trace, size_t max_per_rule) {
  std::string text = trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ValidateResult result;
  uint64_t events = 0;
  std::string error;
  if (!ValidateSource([&](std::string*) { return MemorySource(text); }, "trace", &result, &events, &error,
                      max_per_rule)) {
    result.errors.push_back(error);
  }
  return result;
}

}  // namespace prof::tool
