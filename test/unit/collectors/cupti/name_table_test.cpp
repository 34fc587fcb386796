// Interning names and mapping them into a window's string table.
#include "collectors/cupti/name_table.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace prof::cupti {
namespace {

TEST_CASE("a name is interned once and id 0 is the empty name", "[names]") {
  NameTable names;
  uint32_t a = names.Intern("_Z1av");
  CHECK(a != 0);
  CHECK(names.Intern("_Z1av") == a);
  CHECK(names.Intern("") == 0);
  CHECK(names.Get(a) == "_Z1av");
  CHECK(names.Get(12345).empty());
}

TEST_CASE("a long name is found by its exact view, not by a longer or shorter one", "[names]") {
  // Past the small-string size, looked up through views into a larger
  // buffer: the lookup hashes and compares exactly the view's characters.
  const std::string buffer = "_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE_suffix";
  std::string_view kernel(buffer.data(), buffer.size() - 7);
  NameTable names;
  uint32_t id = names.Intern(kernel);
  CHECK(names.Intern(std::string(kernel)) == id);
  CHECK(names.Intern(buffer) != id);
  CHECK(names.Intern(kernel.substr(0, kernel.size() - 1)) != id);
  CHECK(names.Get(id) == kernel);
  CHECK(names.size() == 4);  // "", the kernel, the longer and the shorter name
}

TEST_CASE("mapped ids resolve to the same names in the window, which keeps what it had", "[names]") {
  NameTable names;
  uint32_t a = names.Intern("_Z1av");
  uint32_t b = names.Intern("cudaMalloc");
  std::vector<std::string> strings;
  WindowStrings window(&strings);
  uint32_t wa = window.Map(names, a);
  uint32_t wb = window.Map(names, b);
  REQUIRE(wa < strings.size());
  REQUIRE(wb < strings.size());
  CHECK(strings[wa] == "_Z1av");
  CHECK(strings[wb] == "cudaMalloc");
  CHECK(strings[0].empty());
  CHECK(window.Map(names, a) == wa);
  CHECK(window.Map(names, 0) == 0);
}

TEST_CASE("a static name gets the id its text has, whichever address holds the text", "[names]") {
  static const char kLaunch[] = "cudaLaunchKernel";
  static const char kLaunchAgain[] = "cudaLaunchKernel";
  static const char kSync[] = "cudaStreamSynchronize";
  NameTable names;
  uint32_t sync = names.Intern("cudaStreamSynchronize");
  uint32_t launch = names.InternStatic(kLaunch);
  CHECK(names.Get(launch) == "cudaLaunchKernel");
  CHECK(names.InternStatic(kLaunch) == launch);
  CHECK(names.InternStatic(kLaunchAgain) == launch);
  CHECK(names.Intern("cudaLaunchKernel") == launch);
  CHECK(names.InternStatic(kSync) == sync);
  // Many names through the 64 remembered addresses: every id still right.
  static char texts[300][8];
  for (int i = 0; i < 300; ++i) std::snprintf(texts[i], sizeof(texts[i]), "n%d", i);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 300; ++i) ids.push_back(names.InternStatic(texts[i]));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 300; ++i) {
      CHECK(names.InternStatic(texts[i]) == ids[static_cast<size_t>(i)]);
      CHECK(names.Get(ids[static_cast<size_t>(i)]) == texts[i]);
    }
  }
}

}  // namespace
}  // namespace prof::cupti
