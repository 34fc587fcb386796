// libFuzzer target: the PROF_* parser (base/config.cpp) on arbitrary bytes.
// The input is split at NUL bytes: the first part is PROF_CONFIG_FILE's
// content, the next parts are environment values for the keys in order.
// Whatever the bytes, parsing must not crash, hang or read out of bounds
// (built with AddressSanitizer and UndefinedBehaviorSanitizer), every
// problem is one line, and the result is in range.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/config_loader.h"

namespace {

const char* const kKeys[] = {"PROF_ENABLE", "PROF_STEP", "PROF_SKIP_FIRST", "PROF_WAIT", "PROF_WARMUP",
                             "PROF_ACTIVE", "PROF_REPEAT", "PROF_ACTIVITIES", "PROF_FORMATS", "PROF_COMPRESS",
                             "PROF_BUFFER_MB", "PROF_TRIGGER_FILE", "PROF_NAME", "PROF_RANK", "PROF_CUPTI_LIB",
                             "PROF_FLUSH_TIMEOUT_MS", "RANK", "WORLD_SIZE"};

std::string& Dir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/libprof-fuzz-config-XXXXXX";
    return std::string(mkdtemp(tmpl));
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) parts.emplace_back();
    else parts.back() += static_cast<char>(data[i]);
  }
  std::string file = Dir() + "/prof.conf";
  if (FILE* f = std::fopen(file.c_str(), "wb")) {
    std::fwrite(parts[0].data(), 1, parts[0].size(), f);
    std::fclose(f);
  }
  std::map<std::string, std::string> env;
  env["PROF_CONFIG_FILE"] = file;
  // Fixed, so no fuzzed path is ever created as a directory.
  env["PROF_OUTPUT_DIR"] = Dir() + "/out";
  for (size_t i = 1; i < parts.size() && i - 1 < sizeof(kKeys) / sizeof(kKeys[0]); ++i) env[kKeys[i - 1]] = parts[i];
  prof::ConfigResult r = prof::ParseConfig([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  for (const std::string& line : r.problems) {
    if (line.empty()) std::abort();
  }
  if (r.config.active == 0 || r.config.buffer_bytes == 0) std::abort();
  if (r.problems.size() > 64) std::abort();  // bounded, whatever the file holds
  return 0;
}
