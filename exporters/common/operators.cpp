#include "exporters/common/operators.h"

#include <algorithm>

namespace prof {

OperatorIndex::OperatorIndex(const std::vector<NvtxRange>& ranges) : parent_range_(ranges.size(), -1) {
  std::unordered_map<int32_t, uint64_t> first_ns;  // the forward: the earliest operator with the number
  for (size_t i = 0; i < ranges.size(); ++i) {
    const NvtxRange& r = ranges[i];
    if (r.op_id == 0) continue;
    ops_[r.tid].push_back({r.start_ns, r.end_ns, static_cast<int64_t>(i), -1});
    if (r.seq < 0) continue;
    auto [it, inserted] = first_ns.try_emplace(r.seq, r.start_ns);
    if (inserted || r.start_ns < it->second) {
      it->second = r.start_ns;
      forward_tid_[r.seq] = r.tid;
    }
  }
  for (auto& [tid, ops] : ops_) {
    std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;  // outer first
    });
    std::vector<int64_t> open;
    for (size_t i = 0; i < ops.size(); ++i) {
      while (!open.empty() && ops[static_cast<size_t>(open.back())].end_ns <= ops[i].start_ns) open.pop_back();
      ops[i].parent = open.empty() ? -1 : open.back();
      if (!open.empty()) parent_range_[static_cast<size_t>(ops[i].range)] = ops[static_cast<size_t>(open.back())].range;
      open.push_back(static_cast<int64_t>(i));
    }
  }
}

int64_t OperatorIndex::Enclosing(uint32_t tid, uint64_t t_ns) const {
  auto it = ops_.find(tid);
  if (it == ops_.end()) return -1;
  const std::vector<Op>& ops = it->second;
  auto after = std::upper_bound(ops.begin(), ops.end(), t_ns, [](uint64_t t, const Op& op) { return t < op.start_ns; });
  int64_t i = static_cast<int64_t>(after - ops.begin()) - 1;
  // The last operator to start before the call encloses it, or one of its
  // enclosing operators does.
  while (i >= 0 && ops[static_cast<size_t>(i)].end_ns <= t_ns) i = ops[static_cast<size_t>(i)].parent;
  return i < 0 ? -1 : ops[static_cast<size_t>(i)].range;
}

uint32_t OperatorIndex::ForwardThread(int32_t seq) const {
  auto it = forward_tid_.find(seq);
  return it == forward_tid_.end() ? 0 : it->second;
}

const char* OperatorCategory(std::string_view name, int32_t seq) {
  if (seq >= 0 || name.find("::") != std::string_view::npos) return "cpu_op";
  size_t end = name.size();
  while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9') --end;
  constexpr std::string_view kBackward = "Backward";
  if (end >= kBackward.size() && name.substr(end - kBackward.size(), kBackward.size()) == kBackward) return "cpu_op";
  return "user_annotation";
}

std::string_view OperatorInPython(std::string_view name) {
  if (name == "aten::_local_scalar_dense" || name == "aten::item") return ".item()";
  if (name == "aten::nonzero" || name == "aten::nonzero_static") return "nonzero(), boolean-mask indexing";
  if (name == "aten::to" || name == "aten::_to_copy") return ".to()/.cpu()";
  if (name == "aten::copy_") return ".copy_(), .to()";
  if (name == "aten::unique" || name == "aten::_unique2") return "unique()";
  if (name == "aten::masked_select") return "masked_select()";
  return "";
}

bool IsShapeList(std::string_view shapes) {
  // [ [ int, ... ], ... ] with optional spaces; ints may be negative.
  int depth = 0;
  bool value_ok = false;  // a value may end here (after a number or a ']')
  for (size_t i = 0; i < shapes.size(); ++i) {
    char c = shapes[i];
    if (c == ' ') continue;
    if (c == '[') {
      if (++depth > 2 || value_ok) return false;
    } else if (c == ']') {
      // Closes a list that is empty or ends in a value, not one ending in ','.
      if (depth-- == 0 || (!value_ok && shapes[shapes.find_last_not_of(' ', i - 1)] != '[')) return false;
      value_ok = true;
      if (depth == 0 && i + 1 != shapes.size()) return false;
    } else if (c == ',') {
      if (!value_ok || depth == 0) return false;
      value_ok = false;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      if (depth != 2 || value_ok) return false;
      size_t j = i + (c == '-' ? 1 : 0);
      if (j >= shapes.size() || shapes[j] < '0' || shapes[j] > '9') return false;
      while (j + 1 < shapes.size() && shapes[j + 1] >= '0' && shapes[j + 1] <= '9') ++j;
      i = j;
      value_ok = true;
    } else {
      return false;
    }
  }
  return depth == 0 && value_ok && !shapes.empty() && shapes.front() == '[';
}

}  // namespace prof
