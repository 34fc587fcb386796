#include "tools/prof/json/trace_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace prof::tool {

bool ReadFileBytes(const std::string& path, std::string* bytes, std::string* error) {
  // gzread passes plain files through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  gzbuffer(file, 1 << 20);
  bytes->clear();
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) bytes->append(buffer, static_cast<size_t>(n));
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  bool ok = n == 0 && code == Z_OK;
  if (!ok) {
    // zlib's message starts with the path: keep what follows it.
    std::string what = message != nullptr ? message : "";
    if (what.rfind(path + ": ", 0) == 0) what.erase(0, path.size() + 2);
    *error = path + ": " +
             (code == Z_ERRNO       ? std::string(std::strerror(errno))
              : code == Z_BUF_ERROR ? std::string("truncated gzip file (the compressed data ends early)")
                                    : "corrupt gzip file (" + what + ")");
  }
  gzclose(file);
  return ok;
}

bool LoadTrace(const std::string& path, nlohmann::json* trace, std::string* error) {
  std::string bytes;
  if (!ReadFileBytes(path, &bytes, error)) return false;
  try {
    *trace = nlohmann::json::parse(bytes, /*cb=*/nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    *error = "rule strict-json: " + path + ": " + e.what();
    return false;
  }
  return true;
}

}  // namespace prof::tool
