#include "tools/prof/trace/window_reader.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

namespace prof::tool {

template <typename W>
void WindowReader<W>::RebuildPythonStacks() {
  if (py_slices_.empty() && capture_stacks_.empty()) return;
  w_.python.frames.assign(1, PyFrame{});
  w_.python.stacks.assign(2, {});
  w_.python.via.clear();
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> frame_ids;  // slice name id -> (frame id, via thread)
  std::map<std::pair<std::vector<uint32_t>, uint32_t>, uint32_t> stack_ids;
  std::map<std::string, uint32_t> by_text;  // frame text -> frame id (one frame, own or via)
  auto frame_of = [&](uint32_t name_id) -> std::pair<uint32_t, uint32_t> {
    auto [it, inserted] = frame_ids.try_emplace(name_id, std::pair<uint32_t, uint32_t>{0, 0});
    if (inserted) {
      std::string name = slice_names_[name_id];
      // " (via thread <tid>)": a frame of a waiting Python thread's stack.
      uint32_t via = 0;
      size_t mark = name.rfind(" (via thread ");
      if (mark != std::string::npos && name.back() == ')') {
        via = static_cast<uint32_t>(std::strtoul(name.c_str() + mark + 13, nullptr, 10));
        name.resize(mark);
      }
      auto [known, fresh] = by_text.try_emplace(name, static_cast<uint32_t>(w_.python.frames.size()));
      it->second = {known->second, via};
      if (!fresh) return it->second;
      PyFrame f{};
      size_t close = name.rfind("): ");
      size_t open = close == std::string::npos ? std::string::npos : name.rfind('(', close);
      if (open == std::string::npos) {
        f.file_id = Intern(name), f.line = -1;
      } else {
        f.file_id = Intern(name.substr(0, open));
        f.line = std::atoi(name.c_str() + open + 1);
        f.function_id = Intern(name.substr(close + 3));
      }
      w_.python.frames.push_back(f);
    }
    return it->second;
  };
  auto stack_of = [&](const std::vector<uint32_t>& frames, uint32_t via) -> uint32_t {
    auto [sid, inserted] = stack_ids.try_emplace({frames, via}, static_cast<uint32_t>(w_.python.stacks.size()));
    if (inserted) {
      w_.python.stacks.push_back(frames);
      if (via != 0) w_.python.via.resize(w_.python.stacks.size(), 0), w_.python.via.back() = via;
    }
    return sid->second;
  };
  std::stable_sort(py_slices_.begin(), py_slices_.end(), [](const PySliceIn& a, const PySliceIn& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::unordered_map<uint32_t, std::vector<size_t>> by_tid;  // slice indexes per thread, in start order
  for (size_t i = 0; i < py_slices_.size(); ++i) by_tid[py_slices_[i].tid].push_back(i);
  std::unordered_map<uint32_t, std::pair<size_t, std::vector<size_t>>> sweep;  // tid -> (next slice, open slices)
  for (auto& e : w_.host_events) {  // in start order (sorted above)
    auto it = by_tid.find(e.tid);
    if (it == by_tid.end()) continue;
    auto& [next, open] = sweep[e.tid];
    const std::vector<size_t>& slices = it->second;
    while (next < slices.size() && py_slices_[slices[next]].start_ns <= e.start_ns) {
      size_t s = slices[next++];
      while (!open.empty() && py_slices_[open.back()].end_ns < py_slices_[s].end_ns) open.pop_back();
      open.push_back(s);
    }
    while (!open.empty() && py_slices_[open.back()].end_ns < e.end_ns) open.pop_back();
    std::vector<uint32_t> frames;
    uint32_t via = 0;
    for (auto s = open.rbegin(); s != open.rend(); ++s) {
      if (py_slices_[*s].end_ns >= e.end_ns) {
        auto [frame, frame_via] = frame_of(py_slices_[*s].name_id);
        frames.push_back(frame);
        via = frame_via;
      }
    }
    if (frames.empty()) continue;
    e.stack_id = stack_of(frames, via) & 0xFFFFFF;
  }
  // The stacks that captured replayed graph nodes (the writer's
  // graph_capture_stacks), then each op's index into them replaced.
  std::vector<uint32_t> capture_ids(capture_stacks_.size() + 1, 0);
  for (size_t i = 0; i < capture_stacks_.size(); ++i) {
    std::vector<uint32_t> frames;
    uint32_t via = 0;
    for (uint32_t name_id : capture_stacks_[i]) {
      auto [frame, frame_via] = frame_of(name_id);
      frames.push_back(frame);
      via = frame_via;
    }
    if (!frames.empty()) capture_ids[i + 1] = stack_of(frames, via);
  }
  for (auto& r : w_.device_records) {
    if (r.capture_stack_id != 0) r.capture_stack_id = r.capture_stack_id < capture_ids.size() ? capture_ids[r.capture_stack_id] : 0;
  }
}

template void WindowReader<Window>::RebuildPythonStacks();
template void WindowReader<CompactWindow>::RebuildPythonStacks();

}  // namespace prof::tool
