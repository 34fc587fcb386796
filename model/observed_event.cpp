#include "model/observed_event.h"

namespace prof {

std::string_view BaseApiName(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

std::string QualifiedNvtxName(const char* domain, const char* name) {
  std::string out;
  if (domain != nullptr && *domain != 0) {
    out = domain;
    out += '@';
  }
  out += name != nullptr ? name : "";
  return out;
}

}  // namespace prof
