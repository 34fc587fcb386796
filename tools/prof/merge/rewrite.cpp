#include "tools/prof/merge/rewrite.h"

#include <cmath>
#include <memory>
#include <set>

#include "tools/prof/json/json_dump.h"
#include "tools/prof/json/trace_stream.h"

namespace prof::tool {

using nlohmann::json;

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
      // The member copy above, for args: each one rewritten its own way.
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

// Rewrites one input's events and hands them on; collects its new pids.
class MergedEvents::Handler : public TraceStreamHandler {
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

bool MergedEvents::ForEach(const Sink& sink, std::string* error, SkippedEvents* skipped) const {
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

}  // namespace prof::tool
