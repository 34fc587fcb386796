#include "exporters/common/format.h"

#include <cstdarg>
#include <cstdio>

namespace prof {

std::string Printf(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof(buffer)) return std::string(buffer, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(args, format);
  std::vsnprintf(out.data(), out.size(), format, args);
  va_end(args);
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string FormatDuration(double ns) {
  if (ns < 1e3) return Printf("%.0f ns", ns);
  if (ns < 1e6) return Printf("%.1f µs", ns / 1e3);
  if (ns < 1e9) return Printf("%.2f ms", ns / 1e6);
  return Printf("%.2f s", ns / 1e9);
}

std::string FormatBytes(double bytes) {
  if (bytes < 1024) return Printf("%.0f B", bytes);
  if (bytes < 1024.0 * 1024) return Printf("%.1f KiB", bytes / 1024);
  if (bytes < 1024.0 * 1024 * 1024) return Printf("%.1f MiB", bytes / (1024.0 * 1024));
  return Printf("%.2f GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace prof
