// The merge's second pass (merge/ only): each input's events rewritten onto
// the merged timeline, as JSON text in output order.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tools/prof/json/json_value.h"
#include "tools/prof/merge/merge.h"
#include "tools/prof/trace/event_fields.h"

namespace prof::tool {

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
void RewriteEvent(const JsonValue& e, const Rewrite& r, std::string* out, nlohmann::json* pid);

// Streams every merged event, in output order, as JSON text.
class MergedEvents {
 public:
  MergedEvents(const std::vector<MergeSource>& sources, const std::vector<Rewrite>& rewrites)
      : sources_(sources), rewrites_(rewrites) {}

  using Sink = std::function<void(uint64_t index, std::string_view text)>;

  // `skipped`: where events whose pid, tid, ts or dur has the wrong type
  // are counted (they are never passed to `sink`); null: not counted.
  bool ForEach(const Sink& sink, std::string* error, SkippedEvents* skipped = nullptr) const;

 private:
  class Handler;

  const std::vector<MergeSource>& sources_;
  const std::vector<Rewrite>& rewrites_;
};

}  // namespace prof::tool
