// Human-readable numbers for the summary text.
#pragma once

#include <cstdint>
#include <string>

namespace prof {

// 950 ns, 12.3 µs, 4.56 ms, 1.23 s.
std::string FormatDuration(double ns);
// 512 B, 1.5 KiB, 3.0 MiB, 2.00 GiB.
std::string FormatBytes(double bytes);
// printf into a std::string.
std::string Printf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace prof
