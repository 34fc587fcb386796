// Kernel names arrive mangled from CUPTI ("_Z6kernelPf"); traces and
// summaries show them demangled, as Kineto and nsys do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/window.h"

namespace prof {

// The demangled name, or `name` unchanged when it is not a mangled C++ name.
std::string Demangle(std::string_view name);

// Demangles each interned string at most once per window, so exporters pay
// for __cxa_demangle (which allocates) per distinct name, not per event.
class DisplayNames {
 public:
  explicit DisplayNames(const Window& window) : window_(window), cache_(window.strings.size()) {}
  const std::string& operator()(uint32_t name_id);

 private:
  const Window& window_;
  std::vector<std::string> cache_;
  std::vector<bool> done_ = std::vector<bool>(cache_.size());
};

}  // namespace prof
