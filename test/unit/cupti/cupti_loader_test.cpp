// Where libcupti is looked for, in DESIGN.md's order, and how a failed
// search is reported.
#include "collectors/cupti/cupti_loader.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace prof::cupti {
namespace {

using Paths = std::vector<std::string>;

TEST_CASE("a libcupti already in the process wins over everything, PROF_CUPTI_LIB included", "[loader]") {
  CuptiSearch s;
  s.already_loaded = "/opt/nsight/libcupti.so.13";
  s.configured = "/elsewhere/libcupti.so.13";
  s.cudart_path = "/usr/local/cuda/lib64/libcudart.so.13";
  CHECK(CandidatePaths(s) == Paths{"/opt/nsight/libcupti.so.13"});
}

TEST_CASE("PROF_CUPTI_LIB is the only candidate when set", "[loader]") {
  CuptiSearch s;
  s.configured = "/my/libcupti.so.13";
  s.cuda_home = "/usr/local/cuda";
  CHECK(CandidatePaths(s) == Paths{"/my/libcupti.so.13"});
}

TEST_CASE("the search goes beside libcudart (and pip's cuda_cupti), then CUDA_HOME, then the loader", "[loader]") {
  CuptiSearch s;
  s.cudart_path = "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13";
  s.cuda_home = "/usr/local/cuda";
  CHECK(CandidatePaths(s) == Paths{
                                 "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcupti.so.13",
                                 "/venv/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13",
                                 "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                 "/usr/local/cuda/lib64/libcupti.so.13",
                                 "libcupti.so.13",
                             });
}

TEST_CASE("with nothing known, only the loader's own search is tried", "[loader]") {
  CHECK(CandidatePaths(CuptiSearch{}) == Paths{"libcupti.so.13"});
}

TEST_CASE("a failed load names every path it tried", "[loader]") {
  CuptiSearch s;
  s.configured = "/nonexistent/libcupti.so.13";
  CuptiApi api;
  std::string error;
  REQUIRE_FALSE(LoadCupti(s, &api, &error));
  CHECK(error.find("/nonexistent/libcupti.so.13") != std::string::npos);
  CHECK(api.GetVersion == nullptr);
}

TEST_CASE("a library lacking CUPTI's entry points is rejected, naming the missing one", "[loader]") {
  CuptiSearch s;
  s.configured = "libz.so.1";  // loads fine, is not CUPTI
  CuptiApi api;
  std::string error;
  REQUIRE_FALSE(LoadCupti(s, &api, &error));
  CHECK(error.find("lacks cuptiGetVersion") != std::string::npos);
}

TEST_CASE("the toolkit's real libcupti resolves every entry point libprof uses", "[loader]") {
  if (access(LIBPROF_TOOLKIT_CUPTI, R_OK) != 0) {
    WARN("no toolkit libcupti at " LIBPROF_TOOLKIT_CUPTI);
    return;
  }
  CuptiSearch s;
  s.configured = LIBPROF_TOOLKIT_CUPTI;
  CuptiApi api;
  std::string error;
  REQUIRE(LoadCupti(s, &api, &error));
  CHECK(api.FirstMissing() == nullptr);
  CHECK(api.SubscribeV2 != nullptr);
  CHECK(api.ActivityRegisterTimestampCallback != nullptr);
  CHECK(api.Finalize != nullptr);
  uint32_t version = 0;
  REQUIRE(api.GetVersion(&version) == CUPTI_SUCCESS);
  CHECK(version / 10000 == CUPTI_API_VERSION / 10000);
}

}  // namespace
}  // namespace prof::cupti
