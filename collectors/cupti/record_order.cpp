#include "collectors/cupti/record_order.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>

namespace prof::cupti {
namespace {

// Moves records into place: order[k] is the index of the record that
// belongs at position k. Cycle by cycle, each record is copied once (plus
// one held aside per cycle); order[k] == k marks "placed".
template <typename Index>
void ApplyOrder(std::vector<DeviceRecord>* records, std::vector<Index>* order_in) {
  std::vector<DeviceRecord>& r = *records;
  std::vector<Index>& order = *order_in;
  for (Index start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    DeviceRecord held = r[start];
    Index k = start;
    while (order[k] != start) {
      Index from = order[k];
      r[k] = r[from];
      order[k] = k;
      k = from;
    }
    r[k] = held;
    order[k] = k;
  }
}

}  // namespace

void SortByStart(std::vector<DeviceRecord>* records) {
  std::vector<DeviceRecord>& r = *records;
  if (r.size() < 2) return;
  // One pass over the (large, strided) records: sorted already? span?
  bool sorted = true;
  uint64_t first_ns = r[0].start_ns;
  uint64_t last_ns = r[0].start_ns;
  for (size_t i = 1; i < r.size(); ++i) {
    uint64_t t = r[i].start_ns;
    sorted &= r[i - 1].start_ns <= t;
    first_ns = std::min(first_ns, t);
    last_ns = std::max(last_ns, t);
  }
  if (sorted) return;

  // Usual case: the window's span (ns) and the index fit one 64-bit key,
  // (start - first start) << index bits | index. Plain integers sort fast
  // and contiguously, and the index breaks ties in arrival order.
  int index_bits = std::bit_width(r.size() - 1);
  int span_bits = std::bit_width(last_ns - first_ns);
  if (span_bits + index_bits <= 64 && r.size() <= UINT32_MAX) {
    std::vector<uint64_t> keys(r.size());
    for (size_t i = 0; i < r.size(); ++i) keys[i] = (r[i].start_ns - first_ns) << index_bits | i;
    std::sort(keys.begin(), keys.end());
    uint64_t index_mask = index_bits == 64 ? ~0ull : (uint64_t{1} << index_bits) - 1;
    for (uint64_t& key : keys) key &= index_mask;  // now the order itself
    ApplyOrder(records, &keys);
    return;
  }
  // A span too long for one key (hours of records): indices compared
  // through the records.
  std::vector<uint32_t> order(r.size());
  std::iota(order.begin(), order.end(), uint32_t{0});
  std::sort(order.begin(), order.end(), [&r](uint32_t a, uint32_t b) {
    return r[a].start_ns != r[b].start_ns ? r[a].start_ns < r[b].start_ns : a < b;
  });
  ApplyOrder(records, &order);
}

}  // namespace prof::cupti
