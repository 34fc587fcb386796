// What every command's arguments share.
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

}  // namespace prof::tool
