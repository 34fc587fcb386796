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
    } else if (key == "libprof_merge" && v.is_object()) {
      JsonValue inputs = v.Get("inputs");
      for (JsonValue in = inputs.first(); in.valid(); in = inputs.next(in)) {
        int64_t rank = 0, offset = 0;
        in.Get("rank").ToInt64(&rank);
        in.Get("clock_offset_ns").ToInt64(&offset);
        merged_ranks_.push_back(static_cast<int>(rank));
        merged_offsets_.push_back(offset);
      }
      merged_ = true;
    }
  }
  void EventsBegin(bool) override {
    if (merged_) {
      first_ = ranks_->size();
      for (int rank : merged_ranks_) {
        ranks_->emplace_back();
        ranks_->back().rank = rank;
      }
    } else {
      first_ = ranks_->size();
      ranks_->emplace_back();
    }
  }
  void Event(uint64_t, const JsonValue& e) override {
    size_t slot = 0;
    if (merged_) {
      // The merge numbers input k's pids (k + 1) * kMergePidBlock + pid,
      // and a pid that was a string "rank R: <pid>".
      JsonValue pid = e.Get("pid");
      int64_t n = 0;
      if (pid.ToInt64(&n) && n >= kMergePidBlock) {
        slot = static_cast<size_t>(n / kMergePidBlock - 1);
      } else if (pid.is_string() && pid.str().rfind("rank ", 0) == 0) {
        int rank = std::atoi(std::string(pid.str().substr(5)).c_str());
        slot = merged_ranks_.size();
        for (size_t k = 0; k < merged_ranks_.size(); ++k) {
          if (merged_ranks_[k] == rank) slot = k;
        }
      } else {
        return;
      }
      if (slot >= merged_ranks_.size()) return;
    }
    ReadJobEvent(e, &(*ranks_)[first_ + slot]);
  }
  void EventsEnd(uint64_t) override {
    if (merged_) {
      // The merge took each rank's clock offset out of its times: put it
      // back, so the analysis finds (and reports) the same offsets.
      for (size_t k = 0; k < merged_offsets_.size() && first_ + k < ranks_->size(); ++k) {
        ShiftRankEvents(&(*ranks_)[first_ + k], merged_offsets_[k]);
      }
      return;
    }
    if (first_ >= ranks_->size()) return;
    RankEvents& r = (*ranks_)[first_];
    r.rank = rank_ >= 0 ? rank_ : static_cast<int>(first_);
    ShiftRankEvents(&r, base_ns_);
  }

 private:
  std::vector<RankEvents>* ranks_;
  size_t first_ = 0;
  int64_t base_ns_ = 0;
  int rank_ = -1;
  bool merged_ = false;
  std::vector<int> merged_ranks_;
  std::vector<int64_t> merged_offsets_;
};

}  // namespace

void ReadJobRanks(ByteSource* source, std::vector<RankEvents>* ranks) {
  JobInput handler(ranks);
  StreamTrace(source, &handler);
}

}  // namespace prof::tool
