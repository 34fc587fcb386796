#include "tools/prof/merge/merge_inputs.h"

#include <climits>
#include <memory>

#include "tools/prof/json/trace_stream.h"

namespace prof::tool {
namespace {

int64_t IntOr(const JsonValue& v, int64_t fallback) {
  int64_t i;
  return v.ToInt64(&i) ? i : fallback;
}

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

}  // namespace

bool ReadMergeInputs(const std::vector<MergeSource>& sources, std::vector<InputMeta>* metas,
                     std::vector<RankFacts>* job_facts, JobKeys* keys, std::string* error) {
  metas->assign(sources.size(), InputMeta{});
  job_facts->assign(sources.size(), RankFacts{});
  std::string problems;
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    std::string e;
    std::unique_ptr<ByteSource> source = sources[slot].open(&e);
    if (source) {
      InputMeta& meta = (*metas)[slot];
      RankEvents events;
      MetaHandler handler(&meta, &events);
      TraceStreamResult read = StreamTrace(source.get(), &handler);
      RankFacts& f = (*job_facts)[slot];
      f = SummarizeRank(events);
      ShiftRankFacts(&f, meta.base_ns);
      f.path = sources[slot].path;
      f.ranked = meta.ranked();
      f.rank = f.ranked ? meta.rank : static_cast<int>(slot);
      f.label = meta.Label(f.path);
      keys->Adopt(&f);
      if (!read.ok) {
        e = read.error.rfind("syntax error", 0) == 0 ? "rule strict-json: " + sources[slot].path + ": " + read.error
                                                      : read.error;
      } else if (!(*metas)[slot].has_events) {
        e = sources[slot].path + ": no traceEvents array";
      } else if ((*metas)[slot].is_merge) {
        e = sources[slot].path + ": already a merge of several traces; merge the ranks' own traces";
      }
    }
    if (!e.empty()) problems += (problems.empty() ? "" : "\n") + e;
  }
  if (!problems.empty()) {
    *error = problems;
    return false;
  }
  return true;
}

}  // namespace prof::tool
