#include "tools/prof/job/rank_events.h"

#include <cstdlib>
#include <string>

#include "tools/prof/json/trace_stream.h"
#include "tools/prof/trace/merged_trace.h"

namespace prof::tool {
namespace {

// What the job analysis reads, from one rank's trace or from a merged
// trace, whose events are split back into their ranks by pid block (times
// there are already on one clock).
class JobInput : public TraceStreamHandler {
 public:
  explicit JobInput(std::vector<RankEvents>* ranks) : ranks_(ranks) {}

  void Member(std::string_view key, const JsonValue& v) override {
    if (key == "baseTimeNanoseconds") {
      v.ToInt64(&base_ns_);
    } else if (key == "distributedInfo" && v.is_object()) {
      int64_t rank = 0;
      if (v.Get("rank").ToInt64(&rank) && rank >= 0 && rank <= INT32_MAX) rank_ = static_cast<int>(rank);
    } else if (key == "libprof" && v.is_object()) {
      ReadProcess(v, &process_);
    } else if (key == "libprof_merge" && v.is_object()) {
      JsonValue inputs = v.Get("inputs");
      for (JsonValue in = inputs.first(); in.valid(); in = inputs.next(in)) {
        int64_t rank = 0, offset = 0;
        // The merge gives an input without a rank none (merge.cpp's MakeRewrites).
        bool ranked = in.Get("rank").ToInt64(&rank);
        in.Get("clock_offset_ns").ToInt64(&offset);
        Process p;
        if (in.Get("libprof").is_object()) ReadProcess(in.Get("libprof"), &p);
        merged_.push_back({ranked ? static_cast<int>(rank) : static_cast<int>(merged_.size()), ranked,
                           ranked ? "rank " + std::to_string(rank) : ProcessLabel(p.name, p.pid, std::string(in.StringOr("file", ""))),
                           offset});
      }
      is_merge_ = true;
    }
  }
  void EventsBegin(bool) override {
    if (is_merge_) {
      first_ = ranks_->size();
      for (const MergedInput& in : merged_) {
        ranks_->emplace_back();
        ranks_->back().rank = in.rank;
        ranks_->back().ranked = in.ranked;
        ranks_->back().label = in.label;
      }
    } else {
      first_ = ranks_->size();
      ranks_->emplace_back();
    }
  }
  void Event(uint64_t, const JsonValue& e) override {
    size_t slot = 0;
    if (is_merge_) {
      // The merge numbers input k's pids (k + 1) * kMergePidBlock + pid,
      // and a pid that was a string "rank R: <pid>".
      JsonValue pid = e.Get("pid");
      int64_t n = 0;
      if (pid.ToInt64(&n) && n >= kMergePidBlock) {
        slot = static_cast<size_t>(n / kMergePidBlock - 1);
      } else if (pid.is_string() && pid.str().rfind("rank ", 0) == 0) {
        int rank = std::atoi(std::string(pid.str().substr(5)).c_str());
        slot = merged_.size();
        for (size_t k = 0; k < merged_.size(); ++k) {
          if (merged_[k].ranked && merged_[k].rank == rank) slot = k;
        }
      } else {
        return;
      }
      if (slot >= merged_.size()) return;
    }
    ReadJobEvent(e, &(*ranks_)[first_ + slot]);
  }
  void EventsEnd(uint64_t) override {
    if (is_merge_) {
      // The merge took each rank's clock offset out of its times: put it
      // back, so the analysis finds (and reports) the same offsets.
      for (size_t k = 0; k < merged_.size() && first_ + k < ranks_->size(); ++k) {
        ShiftRankEvents(&(*ranks_)[first_ + k], merged_[k].offset_ns);
      }
      return;
    }
    if (first_ >= ranks_->size()) return;
    RankEvents& r = (*ranks_)[first_];
    // A libprof trace of a process without a rank still says rank 0 in its
    // distributedInfo (for the tools that need one) and rank_known false.
    r.ranked = rank_ >= 0 && !process_.rank_unknown;
    r.rank = r.ranked ? rank_ : static_cast<int>(first_);
    // (Its file names it otherwise: AnalyzeJob, once the caller set r.path.)
    if (!r.ranked && !process_.name.empty()) r.label = ProcessLabel(process_.name, process_.pid, "");
    ShiftRankEvents(&r, base_ns_);
  }

 private:
  // A libprof block's process: its program and pid, and whether it had a rank.
  struct Process {
    std::string name;
    int64_t pid = -1;
    bool rank_unknown = false;
  };
  static void ReadProcess(const JsonValue& libprof, Process* p) {
    JsonValue known = libprof.Get("rank_known");
    p->rank_unknown = known.is_bool() && !known.boolean();
    JsonValue name = libprof.Get("process");
    if (!name.is_string()) name = libprof.Get("name");
    if (name.is_string()) p->name.assign(name.str());
    if (!libprof.Get("pid").ToInt64(&p->pid)) p->pid = -1;
  }
  struct MergedInput {
    int rank;
    bool ranked;
    std::string label;
    int64_t offset_ns;
  };

  std::vector<RankEvents>* ranks_;
  size_t first_ = 0;
  int64_t base_ns_ = 0;
  int rank_ = -1;
  Process process_;
  bool is_merge_ = false;
  std::vector<MergedInput> merged_;
};

}  // namespace

void ReadJobRanks(ByteSource* source, std::vector<RankEvents>* ranks) {
  JobInput handler(ranks);
  StreamTrace(source, &handler);
}

}  // namespace prof::tool
