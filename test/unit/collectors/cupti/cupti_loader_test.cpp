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

TEST_CASE("the search goes beside libcudart, then pip's cuda_cupti, then the loader, then CUDA_HOME", "[loader]") {
  CuptiSearch s;
  s.cudart_path = "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.13";
  s.cuda_home = "/usr/local/cuda";
  CHECK(CandidatePaths(s) == Paths{
                                 "/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcupti.so.13",
                                 "/venv/lib/python3.11/site-packages/nvidia/cuda_cupti/lib/libcupti.so.13",
                                 "libcupti.so.13",
                                 "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                 "/usr/local/cuda/lib64/libcupti.so.13",
                             });
}

TEST_CASE("a CUDA 12 runtime from a pip wheel gets the wheel's libcupti.so.12, never the toolkit's 13", "[loader]") {
  CuptiSearch s;
  s.cudart_path = "/venv/lib/python3.10/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12";
  s.cuda_home = "/usr/local/cuda-13.0";
  std::vector<CuptiCandidate> c = Candidates(s);
  REQUIRE(c.size() == 5);
  CHECK(c[0].path == "/venv/lib/python3.10/site-packages/nvidia/cuda_runtime/lib/libcupti.so.12");
  CHECK(c[0].step == "beside libcudart.so.12");
  CHECK(c[1].path == "/venv/lib/python3.10/site-packages/nvidia/cuda_cupti/lib/libcupti.so.12");
  CHECK(c[1].step == "pip wheel layout beside libcudart.so.12");
  CHECK(c[2].path == "libcupti.so.12");
  CHECK(c[3].path == "/usr/local/cuda-13.0/extras/CUPTI/lib64/libcupti.so.12");
  CHECK(c[4].path == "/usr/local/cuda-13.0/lib64/libcupti.so.12");
}

TEST_CASE("CUDA 13 wheels keep every library in nvidia/cu13/lib: the runtime's own folder is tried first", "[loader]") {
  // NVIDIA's cuda-python pathfinder: CUDA 13 wheels group libcudart.so.13,
  // libcupti.so.13, ... in site-packages/nvidia/cu13/lib.
  CuptiSearch s;
  s.cudart_path = "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13";
  std::vector<CuptiCandidate> c = Candidates(s);
  REQUIRE_FALSE(c.empty());
  CHECK(c[0].path == "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13");
  CHECK(c[0].step == "beside libcudart.so.13");
}

TEST_CASE("the major comes from libcudart's full version name too (libcudart.so.12.4.127)", "[loader]") {
  CuptiSearch s;
  s.cudart_path = "/opt/cuda-12.4/lib64/libcudart.so.12.4.127";
  CHECK(SearchMajor(s) == 12);
  CHECK(CandidatePaths(s).front() == "/opt/cuda-12.4/lib64/libcupti.so.12");
}

TEST_CASE("a toolkit's lib64 is not mistaken for a pip wheel", "[loader]") {
  CuptiSearch s;
  s.cudart_path = "/usr/local/cuda/lib64/libcudart.so.13";
  CHECK(CandidatePaths(s) == Paths{"/usr/local/cuda/lib64/libcupti.so.13", "libcupti.so.13"});
}

TEST_CASE("a driver-only program gets the CUPTI of the driver's major", "[loader]") {
  CuptiSearch s;
  s.driver_major = 12;  // cuDriverGetVersion 12080, no libcudart loaded
  s.cuda_home = "/usr/local/cuda";
  CHECK(CandidatePaths(s) == Paths{"libcupti.so.12", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12",
                                   "/usr/local/cuda/lib64/libcupti.so.12"});
}

TEST_CASE("with nothing known, the loader's own search is tried for 13, then 12", "[loader]") {
  CHECK(CandidatePaths(CuptiSearch{}) == Paths{"libcupti.so.13", "libcupti.so.12"});
}

TEST_CASE("a failed load names every path it tried", "[loader]") {
  CuptiSearch s;
  s.configured = "/nonexistent/libcupti.so.13";
  CuptiApi api;
  std::string error;
  REQUIRE_FALSE(LoadCupti(s, &api, &error));
  CHECK(error.find("/nonexistent/libcupti.so.13: /nonexistent/libcupti.so.13: cannot open shared object file") !=
        std::string::npos);
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
