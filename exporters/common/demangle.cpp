#include "exporters/common/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace prof {

std::string Demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return std::string(name);
  std::string mangled(name);  // __cxa_demangle needs a terminated string
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return mangled;
  std::string out(text);
  std::free(text);
  return out;
}

const std::string& DisplayNames::operator()(uint32_t name_id) {
  if (name_id >= cache_.size()) return window_.String(name_id);
  if (!done_[name_id]) {
    cache_[name_id] = Demangle(window_.String(name_id));
    done_[name_id] = true;
  }
  return cache_[name_id];
}

}  // namespace prof
