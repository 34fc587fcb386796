#include "base/strings.h"

#include <cxxabi.h>

#include <cstdlib>

namespace prof {

StringTable::StringTable() {
  strings_.emplace_back();                  // id 0 is ""
  strings_.emplace_back(kDroppedNameText);  // kDroppedNameId
  ids_.emplace(strings_.back(), kDroppedNameId);
}

uint32_t StringTable::Intern(std::string_view text) {
  if (text.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(std::string(text));
  if (it != ids_.end()) return it->second;
  if (strings_.size() >= kTransientBase) return kDroppedNameId;
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

uint32_t StringTable::InternRegistered(std::string_view text) {
  if (text.empty()) return 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ids_.find(std::string(text));
    if (it != ids_.end()) return it->second;
    if (registered_bytes_ + text.size() + kEntryOverhead > name_budget_) {
      CountDrop();
      return kDroppedNameId;
    }
    registered_bytes_ += text.size() + kEntryOverhead;
  }
  return Intern(text);
}

uint32_t StringTable::InternName(std::string_view text) {
  if (text.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t gen = generation_.load(std::memory_order_relaxed);
  auto it = name_ids_.find(text);
  if (it != name_ids_.end()) {
    Stamp(&names_[it->second], gen);
    return it->second;
  }
  size_t cost = text.size() + kEntryOverhead;
  if (name_bytes_ + cost > name_budget_) {
    // Names no window holds or waits for can go: those last used before the
    // oldest window not yet sealed opened, or all when there is none.
    if (open_windows_.empty()) {
      ReleaseBefore(gen + 1);
      generation_.store(gen + 1, std::memory_order_release);  // per-thread caches re-intern
      gen = gen + 1;
    } else {
      ReleaseUnneeded();
    }
    if (name_bytes_ + cost > name_budget_) {
      CountDrop();
      return kDroppedNameId;
    }
  }
  // 2^27 ids, then around again, skipping ids still held.
  uint32_t id = next_name_;
  while (names_.count(id) != 0) id = id + 1 < (kTransientBase << 1) ? id + 1 : kTransientBase;
  next_name_ = id + 1 < (kTransientBase << 1) ? id + 1 : kTransientBase;
  if (next_name_ == kTransientBase) id_epoch_.fetch_add(1, std::memory_order_relaxed);
  Entry& e = names_[id];
  e.text.assign(text);
  e.pinned = false;
  e.last_gen = gen;
  ++per_gen_[gen];
  name_ids_.emplace(std::string_view(e.text), id);
  name_bytes_ += cost;
  return id;
}

std::string StringTable::Get(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (id < kTransientBase) return id < strings_.size() ? strings_[id] : std::string();
  auto it = names_.find(id);
  return it != names_.end() ? it->second.text : std::string();
}

std::vector<std::string> StringTable::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return strings_;
}

void StringTable::SetNameBudget(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  name_budget_ = bytes;
}

size_t StringTable::name_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return name_bytes_ + registered_bytes_;
}

void StringTable::Pin(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = names_.find(id);
  if (it == names_.end() || it->second.pinned) return;
  it->second.pinned = true;
  Unstamp(it->second.last_gen);
}

void StringTable::Stamp(Entry* e, uint32_t gen) {
  if (e->last_gen == gen || e->pinned) return;
  Unstamp(e->last_gen);
  e->last_gen = gen;
  ++per_gen_[gen];
}

void StringTable::Unstamp(uint32_t gen) {
  auto it = per_gen_.find(gen);
  if (it != per_gen_.end() && --it->second == 0) per_gen_.erase(it);
}

uint32_t StringTable::WindowEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  generation_.store(gen, std::memory_order_release);
  return gen;
}

uint32_t StringTable::BeginWindow() {
  std::lock_guard<std::mutex> lock(mu_);
  uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  generation_.store(gen, std::memory_order_release);
  open_windows_.insert(gen);
  return gen;
}

uint64_t StringTable::WindowSealed(uint32_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  auto open = open_windows_.find(gen);
  if (open != open_windows_.end()) open_windows_.erase(open);
  // Strictly before: a name stamped with this window's generation may be in
  // the hands of a thread that pushes its range in the next window.
  ReleaseBefore(gen);
  uint64_t dropped = 0;
  auto it = dropped_.find(gen);
  if (it != dropped_.end()) dropped = it->second;
  dropped_.erase(dropped_.begin(), dropped_.upper_bound(gen));
  return dropped;
}

void StringTable::TakeWindowNames(std::vector<uint32_t*> ids, std::vector<std::string>* strings) {
  std::unordered_map<uint32_t, uint32_t> local;  // transient id -> index in strings
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t* id : ids) {
    if (*id < kTransientBase) continue;
    auto done = local.find(*id);
    if (done != local.end()) {
      *id = done->second;
      continue;
    }
    auto it = names_.find(*id);
    // Released (a thread held the id across a window's opening while the
    // table overflowed): shown as dropped.
    uint32_t index = kDroppedNameId;
    if (it != names_.end()) {
      index = static_cast<uint32_t>(strings->size());
      strings->push_back(it->second.text);
    }
    local.emplace(*id, index);
    *id = index;
  }
}

template <typename Drop>
void StringTable::ReleaseIf(Drop drop) {
  for (auto it = names_.begin(); it != names_.end();) {
    if (!it->second.pinned && drop(it->second.last_gen)) {
      Unstamp(it->second.last_gen);
      name_ids_.erase(std::string_view(it->second.text));
      name_bytes_ -= it->second.text.size() + kEntryOverhead;
      it = names_.erase(it);
    } else {
      ++it;
    }
  }
}

void StringTable::ReleaseBefore(uint32_t gen) {
  // Wrap-safe "last_gen < gen".
  ReleaseIf([gen](uint32_t last) { return static_cast<int32_t>(last - gen) < 0; });
}

void StringTable::ReleaseUnneeded() {
  // Only when some generation holding names is no open window's (a cheap
  // test: few generations hold names at once).
  bool any = false;
  for (const auto& [gen, count] : per_gen_) any = any || open_windows_.count(gen) == 0;
  if (!any) return;
  ReleaseIf([this](uint32_t last) { return open_windows_.count(last) == 0; });
}

void StringTable::CountDrop() { ++dropped_[generation_.load(std::memory_order_relaxed)]; }

StringTable& Strings() {
  static StringTable* table = new StringTable;  // intentionally leaked: see header
  return *table;
}

std::string Demangle(const char* mangled) {
  if (mangled == nullptr) return "";
  int status = 0;
  char* out = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return mangled;
  std::string result(out);
  std::free(out);
  return result;
}

}  // namespace prof
