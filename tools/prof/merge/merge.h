// `prof merge`: several ranks' traces on one timeline. Each input keeps every
// event; its processes are renumbered into a block of its own (pid =
// (slot + 1) * 100000000 + original pid, string pids prefixed "rank R: ")
// and labelled "rank R", flow ids are made unique per input, and times are
// shifted so all inputs share the earliest baseTimeNanoseconds and each
// rank's clock is aligned to the others' on the collectives they share
// (job/clock_alignment.h; the offset subtracted is the input's
// clock_offset_ns). merge.cpp runs the two passes (merge_inputs.cpp reads,
// rewrite.cpp rewrites); merge_documents.cpp does the same on documents in
// memory, and undoes it.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "exporters/files/byte_sink.h"
#include "tools/prof/job/job_analysis.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/trace/event_fields.h"
#include "tools/prof/trace/merged_trace.h"
#include "tools/prof/trace/validate.h"

namespace prof::tool {

struct MergeInput {
  std::string path;
  nlohmann::json trace;
};

// False with `error` when an input has no traceEvents. Inputs are consumed.
bool MergeTraces(std::vector<MergeInput>* inputs, nlohmann::json* merged, std::string* error);

// The inverse, for `prof summary` on a merged trace: one trace per input,
// with its own pids, times, flow ids and libprof block. False when `merged`
// was not written by MergeTraces.
bool SplitMerged(const nlohmann::json& merged, std::vector<nlohmann::json>* traces);

// One input of a streaming merge: a name for messages and the `libprof_merge`
// block, and how to (re)open its bytes (it is read twice, and once more
// when a validation message must describe events).
struct MergeSource {
  std::string path;
  std::function<std::unique_ptr<ByteSource>(std::string* error)> open;
};

struct MergeReport {
  uint64_t input_events = 0;
  uint64_t events_written = 0;
  // Input events left out because their pid, tid, ts or dur has the wrong
  // type (event_fields.h); `first` names the input and the event.
  SkippedEvents skipped;
  ValidateResult validation;
  JobSummary job;  // the ranks' clocks and the job summary (job/job_analysis.h)
};

// The streaming merge: reads each input's top-level members and what the
// job analysis needs from its events (first pass: its steps, kernels, host
// calls and Python frames, a few dozen bytes each), aligns the clocks and
// computes the job summary (report->job), then writes every merged event to
// `out` while validating it (second pass). `validated` is called at the end
// with the result; returning false fails the merge, so a caller writing to
// a temporary file commits only a validated, complete output. Memory: the
// validator's (see TraceValidator), each input's top-level members and the
// job analysis's records; never the events' JSON. False with `error` when
// an input cannot be read (every unreadable input is named in `error`, one
// per line). With `timeline_ranks`, the timeline holds only the inputs of
// those ranks (the job summary still covers every input).
bool StreamMerge(const std::vector<MergeSource>& sources, ByteSink& out, MergeReport* report, std::string* error,
                 const std::function<bool(const MergeReport&)>& validated = nullptr,
                 const std::vector<int>& timeline_ranks = {});

// The job summary alone (`prof merge --summary-only`), from each input's
// facts: a facts file's (<stem>.job.json, job/facts_file.h), or a trace's,
// read as the merge's first pass reads it. Inputs are read one at a time
// and only their facts are held. False with `error` naming every input that
// cannot be read, one per line.
bool SummarizeJob(const std::vector<MergeSource>& sources, JobSummary* job, std::string* error);

}  // namespace prof::tool
