#include "tools/prof/merge.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "tools/prof/event_fields.h"
#include "tools/prof/job.h"

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

// --- the streaming merge -----------------------------------------------------

int64_t IntOr(const JsonValue& v, int64_t fallback) {
  int64_t i;
  return v.ToInt64(&i) ? i : fallback;
}

// What the first pass learns about an input.
struct InputMeta {
  bool has_events = false;
  uint64_t events = 0;
  int64_t base_ns = 0;
  bool has_rank = false;
  int rank = 0;
  int world_size = 0;
  bool libprof = false;
  std::string libprof_raw;
  // From the libprof block: an unranked process is labelled by what it ran.
  bool rank_unknown = false;  // libprof.rank_known is false
  std::string process;        // libprof.process, or libprof.name
  int64_t pid = -1;
  std::string device_properties_raw;  // empty when absent
  bool is_merge = false;              // has a libprof_merge block: already merged
};

// The first pass: the top-level members, and what the job analysis reads
// from the events (tools/prof/job.h).
class MetaHandler : public TraceStreamHandler {
 public:
  MetaHandler(InputMeta* m, RankEvents* events) : m_(m), events_(events) {}
  void Member(std::string_view key, const JsonValue& v) override {
    if (key == "baseTimeNanoseconds") {
      int64_t base = 0;
      m_->base_ns = v.is_number() && v.ToInt64(&base) ? base : 0;
    } else if (key == "distributedInfo") {
      m_->has_rank = false;
      m_->world_size = 0;
      if (!v.is_object()) return;
      JsonValue rank = v.Get("rank");
      int64_t r;
      if (rank.is_number() && rank.ToInt64(&r) && r >= INT32_MIN && r <= INT32_MAX) {
        m_->has_rank = true;
        m_->rank = static_cast<int>(r);
      }
      int64_t w = IntOr(v.Get("world_size"), 0);
      m_->world_size = w >= 0 && w <= INT32_MAX ? static_cast<int>(w) : 0;
    } else if (key == "libprof") {
      m_->libprof = true;
      m_->libprof_raw.assign(v.raw());
      if (v.is_object()) {
        JsonValue known = v.Get("rank_known");
        m_->rank_unknown = known.is_bool() && !known.boolean();
        JsonValue process = v.Get("process");
        if (!process.is_string()) process = v.Get("name");
        if (process.is_string()) m_->process.assign(process.str());
        m_->pid = IntOr(v.Get("pid"), -1);
      }
    } else if (key == "libprof_merge") {
      m_->is_merge = true;
    } else if (key == "deviceProperties") {
      m_->device_properties_raw.assign(v.raw());
    }
  }
  void EventsBegin(bool is_array) override { m_->has_events = is_array; }
  void Event(uint64_t, const JsonValue& e) override { ReadJobEvent(e, events_); }
  void EventsEnd(uint64_t count) override { m_->events = count; }

 private:
  InputMeta* m_;
  RankEvents* events_;
};

// How one input's events are rewritten.
struct Rewrite {
  size_t slot;
  int64_t shift_ns;
  int64_t pid_base;
  int rank;            // -1: the input has none
  std::string prefix;  // "rank R", or "<program> pid <pid>" without a rank
};

// Writes `e` rewritten onto the merged timeline into `out`, and the new pid
// (when it has one) into `pid`.
void RewriteEvent(const JsonValue& e, const Rewrite& r, std::string* out, json* pid) {
  if (!e.is_object()) {
    out->append(e.raw());
    return;
  }
  bool metadata = e.StringOr("ph", "") == "M";
  std::string_view name = e.StringOr("name", "");
  out->push_back('{');
  bool first = true;
  for (JsonValue m = e.first(); m.valid(); m = e.next(m)) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, m.key());
    out->push_back(':');
    std::string_view key = m.key();
    if (key == "pid") {
      int64_t p;
      // An integer pid moves into the input's block; anything else (a
      // string, a fraction, a number too large for a block) becomes a name.
      if (m.is_number() && m.ToInt64(&p) && p >= 0 && p < kMergePidBlock) {
        *pid = r.pid_base + p;
        *out += std::to_string(r.pid_base + p);
      } else {
        *pid = r.prefix + ": " + m.Dump();
        AppendJsonString(out, pid->get_ref<const std::string&>());
      }
    } else if (key == "ts" && r.shift_ns != 0 && m.is_number()) {
      AppendJsonDouble(out, std::round(m.number() * 1000.0 + static_cast<double>(r.shift_ns)) / 1000.0);
    } else if (key == "id" && m.is_number()) {
      // Flow ids (correlation ids) repeat across processes: keep them apart.
      int64_t id;
      if (m.ToInt64(&id) && id >= 0 && id < (int64_t{1} << kMergeFlowIdBits)) {
        *out += std::to_string(static_cast<int64_t>(r.slot) << kMergeFlowIdBits | id);
      } else {
        AppendJsonString(out, std::to_string(r.slot) + ":" + m.Dump());
      }
    } else if (key == "args" && metadata && m.is_object() &&
               (name == "process_name" || name == "process_sort_index")) {
      // Group each rank's processes: its name prefixed, sorted by rank.
      out->push_back('{');
      bool first_arg = true;
      for (JsonValue a = m.first(); a.valid(); a = m.next(a)) {
        if (!first_arg) out->push_back(',');
        first_arg = false;
        AppendJsonString(out, a.key());
        out->push_back(':');
        int64_t index;
        if (name == "process_name" && a.key() == "name" && a.is_string()) {
          AppendJsonString(out, r.prefix + ": " + std::string(a.str()));
        } else if (name == "process_sort_index" && a.key() == "sort_index" && a.is_number() && a.ToInt64(&index)) {
          *out += std::to_string(r.pid_base + index % kMergePidBlock);
        } else {
          out->append(a.raw());
        }
      }
      out->push_back('}');
    } else {
      out->append(m.raw());
    }
  }
  out->push_back('}');
}

// Streams every merged event, in output order, as JSON text.
class MergedEvents {
 public:
  MergedEvents(const std::vector<MergeSource>& sources, const std::vector<Rewrite>& rewrites)
      : sources_(sources), rewrites_(rewrites) {}

  using Sink = std::function<void(uint64_t index, std::string_view text)>;

  // `skipped`: where events whose pid, tid, ts or dur has the wrong type
  // are counted (they are never passed to `sink`); null: not counted.
  bool ForEach(const Sink& sink, std::string* error, SkippedEvents* skipped = nullptr) {
    uint64_t index = 0;
    for (size_t slot = 0; slot < sources_.size(); ++slot) {
      std::unique_ptr<ByteSource> source = sources_[slot].open(error);
      if (!source) return false;
      std::set<json> pids;
      Handler handler(rewrites_[slot], sink, &index, &pids, sources_[slot].path, skipped);
      TraceStreamResult read = StreamTrace(source.get(), &handler);
      if (!read.ok) {
        *error = sources_[slot].path + ": " + read.error;
        return false;
      }
      // A label per process so Perfetto shows which rank it belongs to.
      for (const json& pid : pids) {
        json label = {{"ph", "M"}, {"name", "process_labels"}, {"pid", pid}, {"tid", 0}, {"ts", 0},
                      {"args", {{"labels", rewrites_[slot].prefix}}}};
        sink(index++, label.dump(-1, ' ', false, json::error_handler_t::replace));
      }
    }
    return true;
  }

 private:
  class Handler : public TraceStreamHandler {
   public:
    Handler(const Rewrite& r, const Sink& sink, uint64_t* index, std::set<json>* pids, const std::string& path,
            SkippedEvents* skipped)
        : r_(r), sink_(sink), index_(index), pids_(pids), path_(path), skipped_(skipped) {}
    void Member(std::string_view, const JsonValue&) override {}
    void EventsBegin(bool) override {}
    void Event(uint64_t input_index, const JsonValue& e) override {
      // Not placeable on the merged timeline: left out, counted.
      if (const char* field = WrongTypedField(e)) {
        if (skipped_ && skipped_->count++ == 0) skipped_->first = path_ + ": " + WrongTypeMessage(e, input_index, field);
        return;
      }
      text_.clear();
      json pid;
      RewriteEvent(e, r_, &text_, &pid);
      if (!pid.is_null()) pids_->insert(std::move(pid));
      sink_((*index_)++, text_);
    }
    void EventsEnd(uint64_t) override {}

   private:
    const Rewrite& r_;
    const Sink& sink_;
    uint64_t* index_;
    std::set<json>* pids_;
    const std::string& path_;
    SkippedEvents* skipped_;
    std::string text_;
  };

  const std::vector<MergeSource>& sources_;
  const std::vector<Rewrite>& rewrites_;
};

// Buffers small appends into large writes.
class BufferedSink {
 public:
  explicit BufferedSink(ByteSink& out) : out_(out) { buffer_.reserve(1 << 20); }
  void Append(std::string_view s) {
    buffer_.append(s);
    if (buffer_.size() >= (1 << 20)) Flush();
  }
  bool Flush() {
    ok_ = ok_ && out_.Append(buffer_.data(), buffer_.size());
    buffer_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }

 private:
  ByteSink& out_;
  std::string buffer_;
  bool ok_ = true;
};

}  // namespace

bool StreamMerge(const std::vector<MergeSource>& sources, ByteSink& out, MergeReport* report, std::string* error,
                 const std::function<bool(const MergeReport&)>& validated) {
  // First pass: every input's top-level members. Every input that cannot
  // be read is named.
  std::vector<InputMeta> metas(sources.size());
  std::vector<RankEvents> job_events(sources.size());
  std::string problems;
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    std::string e;
    std::unique_ptr<ByteSource> source = sources[slot].open(&e);
    if (source) {
      MetaHandler handler(&metas[slot], &job_events[slot]);
      TraceStreamResult read = StreamTrace(source.get(), &handler);
      if (!read.ok) {
        e = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + sources[slot].path + ": " + read.error
                                                      : read.error;
      } else if (!metas[slot].has_events) {
        e = sources[slot].path + ": no traceEvents array";
      } else if (metas[slot].is_merge) {
        e = sources[slot].path + ": already a merge of several traces; merge the ranks' own traces";
      }
    }
    if (!e.empty()) problems += (problems.empty() ? "" : "\n") + e;
  }
  if (!problems.empty()) {
    *error = problems;
    return false;
  }
  int64_t base = INT64_MAX;
  for (const InputMeta& m : metas) base = std::min(base, m.base_ns);
  if (sources.empty()) base = 0;

  // The ranks' clocks, aligned on their collectives, and the job summary.
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    job_events[slot].path = sources[slot].path;
    bool ranked = metas[slot].has_rank && !metas[slot].rank_unknown;
    job_events[slot].rank = ranked ? metas[slot].rank : static_cast<int>(slot);
    ShiftRankEvents(&job_events[slot], metas[slot].base_ns);
  }
  ClockAlignment clocks = AlignClocks(job_events);
  report->job = AnalyzeJob(job_events, clocks);
  job_events.clear();
  // The merged base: the earliest input base once aligned, so that no
  // shifted time (metadata events sit at ts 0) falls below it.
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    int64_t aligned_base;
    if (!__builtin_sub_overflow(metas[slot].base_ns, clocks.offset_ns[slot], &aligned_base)) {
      base = std::min(base, aligned_base);
    }
  }

  std::vector<Rewrite> rewrites;
  std::set<int> ranks;
  int world = 0;
  bool all_libprof = !sources.empty();
  report->input_events = 0;
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    const InputMeta& m = metas[slot];
    Rewrite r;
    r.slot = slot;
    if (__builtin_sub_overflow(m.base_ns, base, &r.shift_ns) ||
        __builtin_sub_overflow(r.shift_ns, clocks.offset_ns[slot], &r.shift_ns)) {
      *error = sources[slot].path + ": baseTimeNanoseconds " + std::to_string(m.base_ns) +
               " is too far from the other inputs' (" + std::to_string(base) + ")";
      return false;
    }
    r.pid_base = static_cast<int64_t>(slot + 1) * kMergePidBlock;
    if (m.has_rank && !m.rank_unknown) {
      ranks.insert(m.rank);
      r.rank = m.rank;
      r.prefix = "rank " + std::to_string(m.rank);
    } else {
      // No rank is invented: the process is named by its program and pid
      // (libprof traces), else by its file.
      r.rank = -1;
      if (!m.process.empty()) {
        r.prefix = m.process + (m.pid >= 0 ? " pid " + std::to_string(m.pid) : "");
      } else {
        size_t slash = sources[slot].path.find_last_of('/');
        r.prefix = slash == std::string::npos ? sources[slot].path : sources[slot].path.substr(slash + 1);
      }
    }
    rewrites.push_back(std::move(r));
    world = std::max(world, m.world_size);
    all_libprof = all_libprof && m.libprof;
    report->input_events += m.events;
  }

  // Second pass: each merged event is validated and written (to the
  // caller's sink: `prof merge` writes a temporary that becomes the output
  // only once validated and complete). Keys in the order a document writer
  // sorts them.
  BufferedSink w(out);
  std::string head = "{\"baseTimeNanoseconds\":" + std::to_string(base) + ",\"deviceProperties\":";
  head += sources.empty() || metas[0].device_properties_raw.empty() ? "[]" : metas[0].device_properties_raw;
  json dist = {{"rank", ranks.empty() ? 0 : *ranks.begin()},
               {"world_size", std::max<int>(world, static_cast<int>(ranks.size()))},
               {"ranks", json(std::vector<int>(ranks.begin(), ranks.end()))}};
  head += ",\"displayTimeUnit\":\"ms\",\"distributedInfo\":" + dist.dump();
  // Marks the merge as libprof's own, so `prof validate` applies every rule.
  if (all_libprof) head += ",\"libprof\":{\"merged_inputs\":" + std::to_string(sources.size()) + "}";
  head += ",\"libprof_merge\":{\"clock_alignment\":";
  head += json{{"collectives", clocks.collectives},
               {"reference_rank", sources.empty() || rewrites[clocks.reference].rank < 0
                                      ? static_cast<int>(clocks.reference)
                                      : rewrites[clocks.reference].rank},
               {"residual_max_ns", clocks.residual_max_ns},
               {"residual_median_ns", clocks.residual_median_ns}}
              .dump();
  head += ",\"inputs\":[";
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    const InputMeta& m = metas[slot];
    const Rewrite& r = rewrites[slot];
    if (slot) head += ',';
    head += "{\"baseTimeNanoseconds\":" + std::to_string(m.base_ns) +
            ",\"clock_offset_ns\":" + std::to_string(clocks.offset_ns[slot]) + ",\"file\":";
    AppendJsonString(&head, sources[slot].path);
    head += ",\"flow_id_base\":" + std::to_string(static_cast<int64_t>(slot) << kMergeFlowIdBits);
    if (m.libprof) head += ",\"libprof\":" + m.libprof_raw;
    head += ",\"pid_base\":" + std::to_string(r.pid_base);
    if (r.rank >= 0) head += ",\"rank\":" + std::to_string(r.rank);
    head += "}";
  }
  head += "]},\"schemaVersion\":1,\"traceEvents\":[";
  w.Append(head);

  MergedEvents events(sources, rewrites);
  TraceValidator validator;
  validator.SetTopLevel(/*has_event_array=*/true, /*has_rank=*/true, /*strict=*/all_libprof);
  JsonDoc doc;
  std::string parse_error;
  report->events_written = 0;
  auto validate_and_write = [&](uint64_t index, std::string_view text) {
    if (ParseJson(text, &doc, &parse_error)) validator.Event(index, JsonValue(&doc, 0));
    if (index) w.Append(",");
    w.Append(text);
    ++report->events_written;
  };
  report->skipped = SkippedEvents();
  if (!events.ForEach(validate_and_write, error, &report->skipped)) return false;
  w.Append("],\"traceName\":\"merged\"}\n");
  report->validation = validator.Finish([&](const EventSink& sink) {
    std::string ignored;
    JsonDoc again;
    return events.ForEach(
        [&](uint64_t index, std::string_view text) {
          if (ParseJson(text, &again, &ignored)) sink(index, JsonValue(&again, 0));
        },
        &ignored);
  });
  if (!w.Flush()) {
    *error = "writing the merged trace failed";
    return false;
  }
  return !validated || validated(*report);
}

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
