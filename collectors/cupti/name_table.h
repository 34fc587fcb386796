// Interned names (kernel names, API names) of decoded device records. Local
// to the collector: CollectWindow re-interns the ones a window uses into
// Window::strings, so ids never depend on who else interns.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace prof::cupti {

// Not thread-safe: used only by the thread that decodes (the writer thread,
// under the collector's decode lock).
class NameTable {
 public:
  NameTable() { names_.emplace_back(); }  // id 0 is ""

  uint32_t Intern(std::string_view name);
  // The same for a name that lives as long as the process at a fixed
  // address (an entry of the generated callback-name tables): remembered by
  // its address, so the API record of every call is not hashed again.
  uint32_t InternStatic(const char* name);
  const std::string& Get(uint32_t id) const { return id < names_.size() ? names_[id] : names_[0]; }
  size_t size() const { return names_.size(); }

 private:
  // Transparent: a lookup hashes the caller's view, no std::string built
  // (and allocated, for names past the small-string size) per record.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  static constexpr size_t kStaticSlots = 64;  // direct-mapped by address
  const char* static_names_[kStaticSlots] = {};
  uint32_t static_ids_[kStaticSlots] = {};
};

// Maps the collector's name ids into a window's string table. With the
// agent's process-wide table (base/strings.h) a name gets that table's id,
// so a snapshot the writer takes before or after CollectWindow agrees; the
// window's table is extended to cover the ids used. Without it, names the
// window lacks are appended (id 0 stays "").
class WindowStrings {
 public:
  explicit WindowStrings(std::vector<std::string>* strings);
  uint32_t Map(const NameTable& names, uint32_t id);

 private:
  std::vector<std::string>* strings_;
  std::unordered_map<std::string, uint32_t> existing_;
  std::vector<uint32_t> mapped_;  // collector id -> window id (0: not mapped yet; only id 0 is "")
};

}  // namespace prof::cupti
