#include "exporters/common/operators.h"

#include <algorithm>

namespace prof {

namespace {

// Each thread's ranges by start (outer first at equal starts), with the
// index of the range around each, in the thread's vector and, in
// *parent_range, in the ranges.
template <typename Op>
void NestPerThread(std::unordered_map<uint32_t, std::vector<Op>>* by_tid, std::vector<int64_t>* parent_range) {
  for (auto& [tid, ops] : *by_tid) {
    std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::vector<int64_t> open;
    for (size_t i = 0; i < ops.size(); ++i) {
      while (!open.empty() && ops[static_cast<size_t>(open.back())].end_ns <= ops[i].start_ns) open.pop_back();
      ops[i].parent = open.empty() ? -1 : open.back();
      if (!open.empty()) (*parent_range)[static_cast<size_t>(ops[i].range)] = ops[static_cast<size_t>(open.back())].range;
      open.push_back(static_cast<int64_t>(i));
    }
  }
}

// The range of `sorted` (one thread's, nested) innermost around t; -1 if none.
template <typename Op>
int64_t Innermost(const std::vector<Op>& sorted, uint64_t t) {
  auto after = std::upper_bound(sorted.begin(), sorted.end(), t, [](uint64_t v, const Op& op) { return v < op.start_ns; });
  int64_t i = static_cast<int64_t>(after - sorted.begin()) - 1;
  while (i >= 0 && sorted[static_cast<size_t>(i)].end_ns <= t) i = sorted[static_cast<size_t>(i)].parent;
  return i < 0 ? -1 : sorted[static_cast<size_t>(i)].range;
}

}  // namespace

OperatorIndex::OperatorIndex(const std::vector<NvtxRange>& ranges, const std::function<bool(uint32_t)>& is_module)
    : ranges_(ranges), parent_range_(ranges.size(), -1), module_of_(ranges.size(), -1), module_parent_(ranges.size(), -1) {
  std::unordered_map<uint32_t, std::vector<Op>> modules;  // tid -> its module calls
  for (size_t i = 0; i < ranges.size(); ++i) {
    const NvtxRange& r = ranges[i];
    if (r.op_id == 0) {
      if (is_module && is_module(r.name_id)) modules[r.tid].push_back({r.start_ns, r.end_ns, static_cast<int64_t>(i), -1});
      continue;
    }
    ops_[r.tid].push_back({r.start_ns, r.end_ns, static_cast<int64_t>(i), -1});
    if (r.seq < 0) continue;
    // The forward operator of a number: the earliest with it.
    auto [it, inserted] = forward_op_.try_emplace(r.seq, static_cast<int64_t>(i));
    if (!inserted && r.start_ns < ranges[static_cast<size_t>(it->second)].start_ns) it->second = static_cast<int64_t>(i);
  }
  has_modules_ = !modules.empty();
  NestPerThread(&modules, &module_parent_);
  NestPerThread(&ops_, &parent_range_);
  if (!has_modules_) return;
  auto own_module = [&](int64_t range) {
    const NvtxRange& r = ranges[static_cast<size_t>(range)];
    auto it = modules.find(r.tid);
    return it == modules.end() ? int64_t{-1} : Innermost(it->second, r.start_ns);
  };
  // Per operator without a sequence number whose child autograd ran for a
  // forward operator: that child's module (autograd's
  // "evaluate_function: <Node>" wrapper, whose own work after the node, the
  // sum that reduces a broadcast bias's gradient to its shape, belongs to
  // the node's module).
  std::unordered_map<int64_t, int64_t> node_module;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].op_id == 0) continue;
    int64_t m = own_module(static_cast<int64_t>(i));
    // An operator autograd ran for a forward one: that one's module.
    for (int64_t at = static_cast<int64_t>(i); m < 0 && at >= 0; at = parent_range_[static_cast<size_t>(at)]) {
      const NvtxRange& r = ranges[static_cast<size_t>(at)];
      if (r.seq < 0) continue;
      auto fwd = forward_op_.find(r.seq);
      if (fwd != forward_op_.end() && ranges[static_cast<size_t>(fwd->second)].tid != r.tid) {
        m = own_module(fwd->second);
        int64_t parent = parent_range_[static_cast<size_t>(at)];
        if (m >= 0 && parent >= 0 && ranges[static_cast<size_t>(parent)].seq < 0) node_module.try_emplace(parent, m);
      }
    }
    module_of_[i] = m;
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].op_id == 0 || module_of_[i] >= 0) continue;
    for (int64_t at = static_cast<int64_t>(i); at >= 0; at = parent_range_[static_cast<size_t>(at)]) {
      auto it = node_module.find(at);
      if (it != node_module.end()) {
        module_of_[i] = it->second;
        break;
      }
    }
  }
}

int64_t OperatorIndex::Enclosing(uint32_t tid, uint64_t t_ns) const {
  auto it = ops_.find(tid);
  // The last operator to start before the call encloses it, or one of its
  // enclosing operators does.
  return it == ops_.end() ? -1 : Innermost(it->second, t_ns);
}

int64_t OperatorIndex::EnclosingOnAnyThread(uint64_t t_ns) const {
  int64_t best = -1;
  for (const auto& [tid, ops] : ops_) {
    int64_t op = Innermost(ops, t_ns);
    if (op >= 0 && (best < 0 || ranges_[static_cast<size_t>(op)].start_ns > ranges_[static_cast<size_t>(best)].start_ns)) {
      best = op;
    }
  }
  return best;
}

uint32_t OperatorIndex::ForwardThread(int32_t seq) const {
  auto it = forward_op_.find(seq);
  return it == forward_op_.end() ? 0 : ranges_[static_cast<size_t>(it->second)].tid;
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
