#include "tools/prof/merge/merge.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <set>

#include "tools/prof/job/clock_alignment.h"
#include "tools/prof/job/facts_file.h"
#include "tools/prof/json/json_dump.h"
#include "tools/prof/json/parse.h"
#include "tools/prof/merge/merge_inputs.h"
#include "tools/prof/merge/rewrite.h"

namespace prof::tool {
namespace {

using nlohmann::json;

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

// The ranks' clocks, aligned on their collectives, and the job summary
// (into `report`).
ClockAlignment AnalyzeInputs(const std::vector<RankFacts>& job_facts, MergeReport* report) {
  ClockAlignment clocks = AlignClocks(job_facts);
  report->job = AnalyzeJob(job_facts, clocks);
  return clocks;
}

// The merged base: the earliest input base once aligned, so that no
// shifted time (metadata events sit at ts 0) falls below it.
int64_t MergedBase(const std::vector<InputMeta>& metas, const ClockAlignment& clocks) {
  int64_t base = INT64_MAX;
  for (const InputMeta& m : metas) base = std::min(base, m.base_ns);
  if (metas.empty()) base = 0;
  for (size_t slot = 0; slot < metas.size(); ++slot) {
    int64_t aligned_base;
    if (!__builtin_sub_overflow(metas[slot].base_ns, clocks.offset_ns[slot], &aligned_base)) {
      base = std::min(base, aligned_base);
    }
  }
  return base;
}

// How each input's events are rewritten. False with `error` when an input's
// clock lies too far from the merged base to shift.
bool MakeRewrites(const std::vector<MergeSource>& sources, const std::vector<InputMeta>& metas,
                  const ClockAlignment& clocks, int64_t base, std::vector<Rewrite>* rewrites, std::string* error) {
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
    // No rank is invented: a process without one is named by its program
    // and pid (libprof traces), else by its file.
    r.rank = m.ranked() ? m.rank : -1;
    r.prefix = m.Label(sources[slot].path);
    rewrites->push_back(std::move(r));
  }
  return true;
}

// Every input is libprof's own: the merge is too, and meets every rule.
bool AllLibprof(const std::vector<InputMeta>& metas) {
  bool all = !metas.empty();
  for (const InputMeta& m : metas) all = all && m.libprof;
  return all;
}

// The merged trace's top-level members before its events, keys in the
// order a document writer sorts them, up to "traceEvents":[.
std::string MergedHead(const std::vector<MergeSource>& sources, const std::vector<InputMeta>& metas,
                       const ClockAlignment& clocks, int reference_rank, const std::vector<Rewrite>& rewrites,
                       int64_t base) {
  std::set<int> ranks;
  int world = 0;
  for (const InputMeta& m : metas) {
    if (m.ranked()) ranks.insert(m.rank);
    world = std::max(world, m.world_size);
  }
  std::string head = "{\"baseTimeNanoseconds\":" + std::to_string(base) + ",\"deviceProperties\":";
  head += sources.empty() || metas[0].device_properties_raw.empty() ? "[]" : metas[0].device_properties_raw;
  head += ",\"displayTimeUnit\":\"ms\"";
  // Processes none of which has a rank are no distributed job: no rank is
  // claimed for them (the distributed-rank rule does not ask for one).
  if (!ranks.empty()) {
    json dist = {{"rank", *ranks.begin()},
                 {"world_size", std::max<int>(world, static_cast<int>(ranks.size()))},
                 {"ranks", json(std::vector<int>(ranks.begin(), ranks.end()))}};
    head += ",\"distributedInfo\":" + dist.dump();
  }
  // Marks the merge as libprof's own, so `prof validate` applies every rule.
  if (AllLibprof(metas)) head += ",\"libprof\":{\"merged_inputs\":" + std::to_string(sources.size()) + "}";
  head += ",\"libprof_merge\":{\"clock_alignment\":";
  head += json{{"collectives", clocks.collectives},
               {"reference_rank", reference_rank},
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
  return head;
}

// The inputs the timeline keeps (their slots): all of them when `ranks` is
// empty, else those whose rank it names. False with `error` naming a rank
// no input has.
bool SelectInputs(const std::vector<MergeSource>& sources, const std::vector<InputMeta>& metas,
                  const std::vector<int>& ranks, std::vector<size_t>* keep, std::string* error) {
  for (size_t slot = 0; slot < sources.size(); ++slot) {
    if (ranks.empty() || (metas[slot].ranked() && std::count(ranks.begin(), ranks.end(), metas[slot].rank))) {
      keep->push_back(slot);
    }
  }
  for (int r : ranks) {
    bool found = std::any_of(metas.begin(), metas.end(), [r](const InputMeta& m) { return m.ranked() && m.rank == r; });
    if (!found) {
      *error = "--ranks: no input is rank " + std::to_string(r);
      return false;
    }
  }
  return true;
}

// The second pass: each merged event is validated and written to `w`;
// then the rest of the trace. False with `error` when an input cannot be
// read again.
bool WriteEvents(const MergedEvents& events, bool strict, BufferedSink* w, MergeReport* report, std::string* error) {
  TraceValidator validator;
  validator.SetTopLevel(/*has_event_array=*/true, /*has_rank=*/true, strict);
  JsonDoc doc;
  std::string parse_error;
  report->events_written = 0;
  auto validate_and_write = [&](uint64_t index, std::string_view text) {
    if (ParseJson(text, &doc, &parse_error)) validator.Event(index, JsonValue(&doc, 0));
    if (index) w->Append(",");
    w->Append(text);
    ++report->events_written;
  };
  report->skipped = SkippedEvents();
  if (!events.ForEach(validate_and_write, error, &report->skipped)) return false;
  w->Append("],\"traceName\":\"merged\"}\n");
  report->validation = validator.Finish([&](const EventSink& sink) {
    std::string ignored;
    JsonDoc again;
    return events.ForEach(
        [&](uint64_t index, std::string_view text) {
          if (ParseJson(text, &again, &ignored)) sink(index, JsonValue(&again, 0));
        },
        &ignored);
  });
  return true;
}

}  // namespace

bool StreamMerge(const std::vector<MergeSource>& sources, ByteSink& out, MergeReport* report, std::string* error,
                 const std::function<bool(const MergeReport&)>& validated, const std::vector<int>& timeline_ranks) {
  // First pass: every input's top-level members, and what the job analysis
  // reads. Every input that cannot be read is named.
  std::vector<InputMeta> metas;
  std::vector<RankFacts> job_facts;
  JobKeys keys;
  if (!ReadMergeInputs(sources, &metas, &job_facts, &keys, error)) return false;
  ClockAlignment all_clocks = AnalyzeInputs(job_facts, report);
  job_facts = {};
  size_t ref = all_clocks.reference;
  int reference_rank = ref < metas.size() && metas[ref].ranked() ? metas[ref].rank : static_cast<int>(ref);
  // The timeline's inputs: all of them, or the ranks asked for.
  std::vector<size_t> keep;
  if (!SelectInputs(sources, metas, timeline_ranks, &keep, error)) return false;
  std::vector<MergeSource> kept_sources;
  std::vector<InputMeta> kept_metas;
  ClockAlignment clocks = all_clocks;
  clocks.offset_ns.clear(), clocks.aligned.clear(), clocks.matched.clear();
  for (size_t slot : keep) {
    kept_sources.push_back(sources[slot]);
    kept_metas.push_back(metas[slot]);
    clocks.offset_ns.push_back(all_clocks.offset_ns[slot]);
    clocks.aligned.push_back(all_clocks.aligned[slot]);
    clocks.matched.push_back(all_clocks.matched[slot]);
  }
  int64_t base = MergedBase(kept_metas, clocks);
  std::vector<Rewrite> rewrites;
  if (!MakeRewrites(kept_sources, kept_metas, clocks, base, &rewrites, error)) return false;
  report->input_events = 0;
  for (const InputMeta& m : kept_metas) report->input_events += m.events;

  // Second pass: each merged event is validated and written (to the
  // caller's sink: `prof merge` writes a temporary that becomes the output
  // only once validated and complete).
  BufferedSink w(out);
  w.Append(MergedHead(kept_sources, kept_metas, clocks, reference_rank, rewrites, base));
  MergedEvents events(kept_sources, rewrites);
  if (!WriteEvents(events, AllLibprof(kept_metas), &w, report, error)) return false;
  if (!w.Flush()) {
    *error = "writing the merged trace failed";
    return false;
  }
  return !validated || validated(*report);
}

bool SummarizeJob(const std::vector<MergeSource>& sources, JobSummary* job, std::string* error) {
  size_t n = sources.size();
  JobKeys keys;
  // A trace's facts are computed once and held (reading it again would
  // cost far more); a facts file is read again on each of the analysis's
  // passes, so a large job's facts are never all held at once.
  std::vector<std::optional<RankFacts>> held(n);
  RankFacts scratch;
  size_t scratch_slot = SIZE_MAX;
  auto read = [&](size_t slot, RankFacts* f, std::string* e) {
    if (IsFactsFileName(sources[slot].path)) {
      if (!ReadFactsFile(sources[slot].path, f, e)) return false;
      keys.Adopt(f);
    } else {
      std::vector<InputMeta> metas;
      std::vector<RankFacts> one;
      if (!ReadMergeInputs({sources[slot]}, &metas, &one, &keys, e)) return false;
      *f = std::move(one[0]);
    }
    if (!f->ranked) f->rank = static_cast<int>(slot);  // its place among the inputs
    return true;
  };
  std::string problems;
  for (size_t slot = 0; slot < n; ++slot) {
    std::string e;
    if (!read(slot, &scratch, &e)) {
      problems += (problems.empty() ? "" : "\n") + e;
    } else if (!IsFactsFileName(sources[slot].path)) {
      held[slot] = std::move(scratch);
    }
  }
  if (!problems.empty()) {
    *error = problems;
    return false;
  }
  std::string late;  // a file that could not be read again
  FactsSource facts = [&](size_t slot) -> const RankFacts& {
    if (held[slot]) return *held[slot];
    if (scratch_slot != slot) {
      scratch_slot = slot;
      scratch = RankFacts{};
      std::string e;
      if (!read(slot, &scratch, &e) && late.empty()) late = e;
    }
    return scratch;
  };
  ClockAlignment clocks = AlignClocks(n, facts);
  *job = AnalyzeJob(n, facts, clocks);
  if (!late.empty()) {
    *error = late;
    return false;
  }
  return true;
}

}  // namespace prof::tool
