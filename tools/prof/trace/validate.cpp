#include "tools/prof/trace/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "exporters/common/chunked_vector.h"
#include "tools/prof/trace/event_fields.h"

namespace prof::tool {
namespace {

// Real traces write absolute microseconds (~1.7e15), where one double ulp is
// 0.25 µs: comparisons allow two ulps plus half a nanosecond.
double Slack(double t) { return 0.0005 + 2 * (std::nextafter(std::fabs(t), INFINITY) - std::fabs(t)); }

std::string Describe(const JsonValue& e, uint64_t i) { return DescribeEvent(e, i); }

constexpr uint64_t kSyncBit = uint64_t{1} << 63;  // in Slice::index: the slice is a "cuda_sync"

struct Slice {
  double start;
  double end;
  uint64_t index;  // event index, | kSyncBit
};

// The order x-nesting checks a track's slices in: by start, the longer first.
bool Before(const Slice& a, const Slice& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; }

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
  bool inside;    // bindable and inside a slice (decided as its track streams)
};

// A track's slices checked as they arrive, which needs them in x-nesting's
// order (libprof writes every track so): what is held is the slices that
// enclose the latest one, the latest end so far, and the flow starts whose
// time the track has not passed yet. A track whose slices (or flow starts)
// come out of that order is checked from a second read of the file, with
// only its own slices held, as every track was before.
struct TrackStream {
  bool reread = false;  // out of order: checked from a second read
  bool any = false;     // a slice has arrived
  Slice last{};         // the latest slice
  double reach = 0;     // latest end among the slices so far (when any)
  std::vector<Slice> open;  // the enclosing slices, innermost last
  // Flow starts (their time + slack, index into flows_) waiting for a slice
  // that starts after that time: until then more slices may hold them.
  std::priority_queue<std::pair<double, uint32_t>, std::vector<std::pair<double, uint32_t>>, std::greater<>> waiting;
  // x-nesting violations in the order found: the first `max` of each kind
  // (with a cuda_sync slice or not) and how many of each there were.
  struct Violation {
    uint64_t a, b;
    bool sync;
  };
  std::vector<Violation> violations;
  size_t plain = 0, sync = 0, kept_plain = 0, kept_sync = 0;
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
  Impl(size_t max, bool stream_tracks) : max_(max), stream_tracks_(stream_tracks) {}

  void SetTopLevel(bool has_event_array, bool has_rank, bool strict) {
    has_event_array_ = has_event_array;
    has_rank_ = has_rank;
    strict_ = strict;
  }

  void ResetEvents() {
    Impl fresh(max_, stream_tracks_);
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
      Arrive(TrackId(pid, tid), {ts.number(), ts.number() + dur.number(), index});
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
        Wait(f);
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
    if (!ReadTracksAgain(replay)) {
      result.errors.push_back("rule x-nesting: the trace could not be read a second time to check its tracks whose "
                              "slices are out of order");
    }
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
    if (const char* field = WrongTypedField(e)) FailText("field-types", WrongTypeMessage(e, i, field));
    for (const char* key : {"ts", "dur"}) {
      JsonValue v = e.Get(key);
      if (v.is_number() && v.number() < 0) {
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
      streams_.emplace_back();
    }
    if (by_raw_.size() < 100000) by_raw_.emplace(raw_key_, named->second);
    return named->second;
  }

  // A slice of track t, in the order it is read.
  void Arrive(uint32_t t, const Slice& s) {
    TrackStream& k = streams_[t];
    if (k.reread) return;
    if (!stream_tracks_ || (k.any && !Before(k.last, s))) return Reread(t);
    // The flow starts this slice's start has passed: no later slice can hold them.
    while (!k.waiting.empty() && k.waiting.top().first < s.start) {
      Settle(k, k.waiting.top().second);
      k.waiting.pop();
    }
    k.reach = k.any ? std::max(k.reach, s.end) : s.end;
    k.any = true;
    k.last = s;
    // x-nesting, as CheckNesting does it on a sorted track.
    while (!k.open.empty() && k.open.back().end <= s.start + Slack(s.start)) k.open.pop_back();
    if (!k.open.empty() && s.end > k.open.back().end + Slack(s.end)) {
      bool sync = (s.index & kSyncBit) || (k.open.back().index & kSyncBit);
      size_t& kept = sync ? k.kept_sync : k.kept_plain;
      if (kept < max_) {
        ++kept;
        k.violations.push_back({s.index & ~kSyncBit, k.open.back().index & ~kSyncBit, sync});
      }
      ++(sync ? k.sync : k.plain);
      return;  // keep the enclosing slice as the reference
    }
    k.open.push_back(s);
  }

  // A bindable flow start (flows_.size() is its index once stored).
  void Wait(const FlowStart& f) {
    TrackStream& k = streams_[f.track];
    if (k.reread) return;
    double until = f.ts + Slack(f.ts);
    if (k.any && k.last.start > until) return Reread(f.track);  // slices it may lie in are gone
    k.waiting.emplace(until, static_cast<uint32_t>(flows_.size()));
  }

  // Some slice so far holds the flow start iff the latest end among them reaches it.
  void Settle(const TrackStream& k, uint32_t flow) {
    double ts = flows_[flow].ts;
    flows_[flow].inside = k.any && k.reach + Slack(k.reach) >= ts;
  }

  void Reread(uint32_t t) {
    streams_[t] = TrackStream{};
    streams_[t].reread = true;
  }

  // The slices of the tracks that came out of order, from a second read (of
  // the last traceEvents array, as the first read kept).
  bool ReadTracksAgain(const EventReplay& replay) {
    bool any = false;
    for (uint32_t t = 0; t < streams_.size(); ++t) {
      TrackStream& k = streams_[t];
      if (k.reread) {
        any = true;
        continue;
      }
      for (; !k.waiting.empty(); k.waiting.pop()) Settle(k, k.waiting.top().second);
    }
    if (!any) return true;
    return replay && replay([&](uint64_t i, const JsonValue& e) {
      if (i == 0) {
        for (std::vector<Slice>& slices : slices_) slices.clear();
      }
      if (!e.is_object() || !e.Get("ph").IsString("X")) return;
      JsonValue ts = e.Get("ts"), dur = e.Get("dur"), pid = e.Get("pid"), tid = e.Get("tid");
      if (!ts.is_number() || !dur.is_number() || !pid.valid() || !tid.valid()) return;
      std::string name = pid.Dump() + "/" + tid.Dump();
      auto track = by_name_.find(name);
      if (track == by_name_.end() || !streams_[track->second].reread) return;
      uint64_t index = i;
      if (e.Get("cat").IsString("cuda_sync")) index |= kSyncBit;
      slices_[track->second].push_back({ts.number(), ts.number() + dur.number(), index});
    });
  }

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
      const TrackStream& k = streams_[t];
      if (!k.reread) {
        // Found as the track streamed: the same violations in the same order.
        for (const TrackStream::Violation& v : k.violations) {
          Pending p{Pending::kNesting, "", false, "", v.a, v.b};
          if (v.sync) {
            FailOrWarn("x-nesting", std::move(p));
          } else {
            Fail("x-nesting", std::move(p));
          }
        }
        counts_["x-nesting"] += k.plain - k.kept_plain;
        if (k.sync > k.kept_sync) (strict_ ? counts_ : warning_counts_)["x-nesting"] += k.sync - k.kept_sync;
        continue;
      }
      std::vector<Slice>& slices = slices_[t];
      std::sort(slices.begin(), slices.end(), Before);
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
    // Tracks that streamed decided their flow starts as they went.
    std::vector<std::vector<uint32_t>> by_track(slices_.size());
    std::vector<bool> inside(flows_.size(), false);
    for (uint32_t k = 0; k < flows_.size(); ++k) {
      if (!flows_[k].bindable) continue;
      if (streams_[flows_[k].track].reread) {
        by_track[flows_[k].track].push_back(k);
      } else {
        inside[k] = flows_[k].inside;
      }
    }
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
  bool stream_tracks_;  // false: every track is read again and sorted (the reference for tests)
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
  std::vector<TrackStream> streams_;
  std::vector<std::vector<Slice>> slices_;  // tracks read again (TrackStream::reread) only
  std::unordered_map<std::string, uint32_t> cats_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<FlowKey> finishes_;
  ChunkedVector<FlowStart> flows_;  // chunked: growing never holds two copies
};

TraceValidator::TraceValidator(size_t max_per_rule, bool stream_tracks)
    : impl_(std::make_unique<Impl>(max_per_rule, stream_tracks)) {}
TraceValidator::~TraceValidator() = default;
void TraceValidator::SetTopLevel(bool has_event_array, bool has_rank, bool strict) {
  impl_->SetTopLevel(has_event_array, has_rank, strict);
}
void TraceValidator::Event(uint64_t index, const JsonValue& event) { impl_->Event(index, event); }
void TraceValidator::ResetEvents() { impl_->ResetEvents(); }
ValidateResult TraceValidator::Finish(const EventReplay& replay) { return impl_->Finish(replay); }

}  // namespace prof::tool
