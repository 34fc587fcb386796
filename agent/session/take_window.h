// Taking one window's entries out of a buffer that may hold later windows'
// too (a writer behind the application): one pass, in place.
#pragma once

#include <cstdint>
#include <vector>

namespace prof {

// Returns the entries whose time_of(entry) lies in [begin_ns, end_ns), in
// order; those at or after end_ns move down over the taken ones, in order,
// with nothing allocated for them; earlier ones are dropped.
template <typename T, typename TimeOf>
std::vector<T> TakeWindowEntries(std::vector<T>& entries, uint64_t begin_ns, uint64_t end_ns, TimeOf time_of) {
  size_t taken = 0;
  for (const T& e : entries) taken += time_of(e) < end_ns && time_of(e) >= begin_ns;
  std::vector<T> out;
  out.reserve(taken);
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const T& e = entries[i];
    if (time_of(e) >= end_ns) {
      if (kept != i) entries[kept] = e;
      ++kept;
    } else if (time_of(e) >= begin_ns) {
      out.push_back(e);
    }
  }
  entries.resize(kept);
  return out;
}

}  // namespace prof
