#include "collectors/cupti/record_order.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

namespace prof::cupti {

void SortByStart(std::vector<DeviceRecord>* records) {
  std::vector<DeviceRecord>& r = *records;
  auto earlier = [](const DeviceRecord& a, const DeviceRecord& b) { return a.start_ns < b.start_ns; };
  if (std::is_sorted(r.begin(), r.end(), earlier)) return;

  // order[k]: index of the record that belongs at position k. Ties broken by
  // index, so the result is the stable order.
  std::vector<uint32_t> order(r.size());
  std::iota(order.begin(), order.end(), uint32_t{0});
  std::sort(order.begin(), order.end(), [&r](uint32_t a, uint32_t b) {
    return r[a].start_ns != r[b].start_ns ? r[a].start_ns < r[b].start_ns : a < b;
  });

  // Apply the permutation in place, cycle by cycle: each record is copied
  // once (plus one held aside per cycle); order[k] == k marks "placed".
  for (uint32_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    DeviceRecord held = r[start];
    uint32_t k = start;
    while (order[k] != start) {
      uint32_t from = order[k];
      r[k] = r[from];
      order[k] = k;
      k = from;
    }
    r[k] = held;
    order[k] = k;
  }
}

}  // namespace prof::cupti
