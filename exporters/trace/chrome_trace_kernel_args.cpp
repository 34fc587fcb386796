// The launch-shape part of kernel events' args, formatted once per shape.
#include <charconv>
#include <cmath>

#include "exporters/trace/chrome_trace_parts.h"
#include "exporters/trace/occupancy.h"

namespace prof::chrome {
namespace {

// As JsonWriter::Int and JsonWriter::Double write them, so the cached text is
// byte for byte what writing each value per event gave.
void AppendInt(int64_t value, std::string* out) {
  char buffer[24];
  out->append(buffer, static_cast<size_t>(std::to_chars(buffer, buffer + sizeof(buffer), value).ptr - buffer));
}
void AppendDouble(double value, std::string* out) {
  if (!std::isfinite(value)) value = 0;
  char buffer[32];
  out->append(buffer, static_cast<size_t>(std::to_chars(buffer, buffer + sizeof(buffer), value).ptr - buffer));
}

}  // namespace

size_t KernelArgs::ShapeHash::operator()(const Shape& s) const {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0xBF58476D1CE4E5B9ull; h ^= h >> 31; };
  mix(s.device);
  for (int i = 0; i < 3; ++i) mix(uint64_t(uint32_t(s.grid[i])) << 32 | uint32_t(s.block[i]));
  mix(s.registers);
  mix(s.shared_bytes);
  return static_cast<size_t>(h);
}

KernelArgs::Shape KernelArgs::ShapeOf(const DeviceRecord& r) {
  Shape s;
  s.device = r.device_id;
  for (int i = 0; i < 3; ++i) s.grid[i] = r.grid[i], s.block[i] = r.block[i];
  s.registers = r.registers_per_thread;
  s.shared_bytes = uint64_t{r.static_shared_bytes} + r.dynamic_shared_bytes;
  return s;
}

std::string KernelArgs::Format(const DeviceRecord& r) const {
  std::string out = ",\"registers per thread\":";
  AppendInt(r.registers_per_thread, &out);
  out += ",\"shared memory\":";
  AppendInt(static_cast<int64_t>(uint64_t{r.static_shared_bytes} + r.dynamic_shared_bytes), &out);
  const DeviceProps* props = nullptr;
  for (const DeviceProps& d : w_.devices) {
    if (static_cast<uint32_t>(d.id) == r.device_id) {
      props = &d;
      break;
    }
  }
  Occupancy occ;
  if (props && ComputeOccupancy(r, *props, &occ)) {
    out += ",\"blocks per SM\":";
    AppendDouble(occ.blocks_per_sm, &out);
    out += ",\"warps per SM\":";
    AppendDouble(occ.warps_per_sm, &out);
  }
  out += ",\"grid\":[";
  for (int i = 0; i < 3; ++i) {
    if (i) out += ',';
    AppendInt(r.grid[i], &out);
  }
  out += "],\"block\":[";
  for (int i = 0; i < 3; ++i) {
    if (i) out += ',';
    AppendInt(r.block[i], &out);
  }
  out += ']';
  if (props && occ.has_achieved) {
    out += ",\"est. achieved occupancy %\":";
    AppendInt(static_cast<int64_t>(occ.achieved_percent + 0.5), &out);
  }
  return out;
}

const std::string& KernelArgs::operator()(const DeviceRecord& r) {
  Shape shape = ShapeOf(r);
  if (last_ != nullptr && shape == last_shape_) return *last_;
  auto [it, inserted] = cache_.try_emplace(shape);
  if (inserted) it->second = Format(r);
  last_shape_ = shape;
  last_ = &it->second;
  return *last_;
}

}  // namespace prof::chrome
