// What every command's arguments share.
#include <cstdio>
#include <string>

#include "tools/prof/commands/commands.h"

namespace prof::tool {

bool WantsHelp(const Args& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

bool ParseMegabytes(const std::string& text, uint64_t* bytes) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  uint64_t mb = std::stoull(text);
  if (mb == 0) return false;
  *bytes = mb << 20;
  return true;
}

std::string CannotWrite(const std::string& path, const std::string& file_error) {
  // The reason follows the last ": " (the errno's text, which holds none).
  size_t colon = file_error.rfind(": ");
  std::string why = colon == std::string::npos ? file_error : file_error.substr(colon + 2);
  return "cannot write " + path + (why.empty() ? "" : ": " + why);
}

int ParseFileArgs(const Args& args, const char* command, const char* help, uint64_t* max_unpacked,
                  std::vector<std::string>* paths, bool* quiet) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (quiet != nullptr && args[i] == "-q") {
      *quiet = true;
    } else if (args[i] == "--max-unpacked-mb") {
      if (i + 1 >= args.size() || !ParseMegabytes(args[i + 1], max_unpacked)) {
        std::fprintf(stderr, "prof %s: --max-unpacked-mb needs a whole number of MB\n", command);
        return 2;
      }
      ++i;
    } else {
      paths->push_back(args[i]);
    }
  }
  if (paths->empty()) {
    std::fprintf(stderr, "prof %s: no files given\n%s", command, help);
    return 2;
  }
  return 0;
}

}  // namespace prof::tool
