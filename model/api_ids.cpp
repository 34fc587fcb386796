#include "model/api_ids.h"

#include <array>

namespace prof {
namespace {

struct ApiInfo {
  std::string_view name;
  ApiKind kind;
};

constexpr std::array<ApiInfo, kApiCount> kApis = {{
#define API_INFO_ENTRY(name, kind) {#name, ApiKind::kind},
    FOR_EACH_CUDA_API(API_INFO_ENTRY)
#undef API_INFO_ENTRY
}};

}  // namespace

std::string_view ApiName(ApiId id) {
  auto i = static_cast<std::size_t>(id);
  return i < kApiCount ? kApis[i].name : std::string_view("unknown");
}

ApiKind ApiKindOf(ApiId id) {
  auto i = static_cast<std::size_t>(id);
  return i < kApiCount ? kApis[i].kind : ApiKind::kOther;
}

bool ApiFromName(std::string_view name, ApiId* out) {
  for (std::size_t i = 0; i < kApiCount; ++i) {
    if (kApis[i].name == name) {
      *out = static_cast<ApiId>(i);
      return true;
    }
  }
  return false;
}

}  // namespace prof
