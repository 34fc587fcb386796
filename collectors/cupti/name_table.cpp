#include "collectors/cupti/name_table.h"

#include <algorithm>
#include <cstdint>

// The agent's string table, when this tree has it (it lands with the agent
// session); otherwise the window's own table is extended.
#if __has_include("base/strings.h")
#include "base/strings.h"
#define LIBPROFCUPTI_GLOBAL_STRINGS 1
#endif

namespace prof::cupti {

uint32_t NameTable::Intern(std::string_view name) {
  if (name.empty()) return 0;
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  return id;
}

uint32_t NameTable::InternStatic(const char* name) {
  size_t slot = (reinterpret_cast<uintptr_t>(name) >> 3) % kStaticSlots;
  if (static_names_[slot] == name) return static_ids_[slot];
  uint32_t id = Intern(name);
  static_names_[slot] = name;
  static_ids_[slot] = id;
  return id;
}

WindowStrings::WindowStrings(std::vector<std::string>* strings) : strings_(strings) {
  if (strings_->empty()) strings_->emplace_back();
  for (size_t i = 0; i < strings_->size(); ++i) existing_.emplace((*strings_)[i], static_cast<uint32_t>(i));
}

uint32_t WindowStrings::Map(const NameTable& names, uint32_t id) {
  if (id == 0) return 0;
  if (id >= mapped_.size()) mapped_.resize(std::max<size_t>(names.size(), id + 1), 0);
  if (mapped_[id] != 0) return mapped_[id];
  const std::string& text = names.Get(id);
  uint32_t window_id;
#ifdef LIBPROFCUPTI_GLOBAL_STRINGS
  window_id = Strings().Intern(text);
  // Fill the window's table up to that id from the same table, so it holds
  // exactly what a later snapshot would.
  while (strings_->size() <= window_id) strings_->push_back(Strings().Get(static_cast<uint32_t>(strings_->size())));
  mapped_[id] = window_id;
  return window_id;
#endif
  auto it = existing_.find(text);
  if (it != existing_.end()) {
    window_id = it->second;
  } else {
    window_id = static_cast<uint32_t>(strings_->size());
    strings_->push_back(text);
    existing_.emplace(text, window_id);
  }
  mapped_[id] = window_id;
  return window_id;
}

}  // namespace prof::cupti
