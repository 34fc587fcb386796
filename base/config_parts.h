// Internal to base/config*.cpp and base/output_dir.cpp: the pieces of
// PROF_* parsing that live in their own files (the config file, the
// launcher's rank, the output directory) and the text helpers they share.
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/config_loader.h"

namespace prof::config_parts {

inline std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

inline std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Digits only: no sign, no spaces, no hex; false on overflow past max.
inline bool ParseUnsigned(const std::string& text, uint64_t max, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (max - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

}  // namespace prof::config_parts

namespace prof {

// Keys read from the environment or the config file, in the order applied.
const std::vector<std::string>& ConfigKeys();

// PROF_CONFIG_FILE's KEY=VALUE lines into out (config_file.cpp); problems
// as one line each.
void ReadConfigFile(const std::string& path, std::map<std::string, std::string>* out, std::vector<std::string>* problems);

// The launcher's rank and world size when PROF_RANK is unset (launcher_rank.cpp).
void RankFromLauncher(const EnvLookup& env, Config* config, std::vector<std::string>* problems);
void WorldSizeFromLauncher(const EnvLookup& env, Config* config);

}  // namespace prof
