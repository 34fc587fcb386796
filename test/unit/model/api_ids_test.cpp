#include <catch2/catch.hpp>

#include "model/api_ids.h"

namespace prof {

TEST_CASE("every intercepted API name maps back to its own id") {
  for (std::size_t i = 0; i < kApiCount; ++i) {
    auto id = static_cast<ApiId>(i);
    ApiId back{};
    REQUIRE(ApiFromName(ApiName(id), &back));
    CHECK(back == id);
  }
}

TEST_CASE("API kinds classify launches, copies and allocator calls") {
  CHECK(ApiKindOf(ApiId::__cudaLaunchKernel) == ApiKind::kLaunch);
  CHECK(ApiKindOf(ApiId::cudaMemcpyAsync) == ApiKind::kMemcpy);
  CHECK(ApiKindOf(ApiId::cudaMallocManaged) == ApiKind::kAlloc);
  CHECK(ApiKindOf(ApiId::cuMemFree_v2) == ApiKind::kFree);
  CHECK(ApiName(ApiId::kCount) == "unknown");
  ApiId unused{};
  CHECK_FALSE(ApiFromName("cudaNotAFunction", &unused));
}

}  // namespace prof
