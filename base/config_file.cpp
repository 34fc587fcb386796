// PROF_CONFIG_FILE: KEY=VALUE lines for the keys the environment leaves
// unset, read without ever blocking or costing the host.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "base/config_parts.h"
#include "base/log.h"

namespace prof {
namespace {

using config_parts::Trim;

// Keys that may appear in the file but are handled elsewhere (log.cpp reads
// its two from the environment before anything else runs).
bool IsLogKey(const std::string& key) { return key == "PROF_LOG_LEVEL" || key == "PROF_LOG_FILE"; }

// PROF_CONFIG_FILE is read only if it is a regular file of at most
// kMaxConfigFileBytes: a FIFO would block the host's start forever, a device
// (/dev/zero, /dev/urandom) would cost seconds and gigabytes. Problems found
// in it are capped at kMaxConfigFileProblems lines plus one summary line.
constexpr size_t kMaxConfigFileBytes = 1u << 20;
constexpr int kMaxConfigFileProblems = 10;

// The file's bytes, or false with a reason.
bool ReadSmallRegularFile(const std::string& path, std::string* text, std::string* why) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (!ok) *why = std::strerror(errno);
  else if (S_ISDIR(st.st_mode)) *why = "it is a directory", ok = false;
  else if (!S_ISREG(st.st_mode)) *why = "it is not a regular file", ok = false;
  else if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    *why = fmt::format("it is larger than {} bytes", kMaxConfigFileBytes);
    ok = false;
  }
  char buf[65536];
  while (ok) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else if (text->size() + static_cast<size_t>(n) > kMaxConfigFileBytes) {
      *why = fmt::format("it is larger than {} bytes", kMaxConfigFileBytes);  // grew while we read
      ok = false;
    } else {
      text->append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return ok;
}

}  // namespace

void ReadConfigFile(const std::string& path, std::map<std::string, std::string>* out, std::vector<std::string>* problems) {
  std::string text;
  std::string why;
  if (!ReadSmallRegularFile(path, &text, &why)) {
    problems->push_back(fmt::format("PROF_CONFIG_FILE='{}' is not valid: expected a readable regular file of KEY=VALUE lines, at most {} bytes ({}); using the environment only",
                                    path, kMaxConfigFileBytes, why));
    return;
  }
  std::istringstream in(text);
  std::string line;
  int number = 0;
  int file_problems = 0;
  int suppressed = 0;
  auto problem = [&](std::string message) {
    if (++file_problems <= kMaxConfigFileProblems) problems->push_back(std::move(message));
    else ++suppressed;
  };
  while (std::getline(in, line)) {
    ++number;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (t.rfind("export ", 0) == 0) t = Trim(t.substr(7));
    size_t eq = t.find('=');
    std::string key = eq == std::string::npos ? "" : Trim(t.substr(0, eq));
    bool known = std::find(ConfigKeys().begin(), ConfigKeys().end(), key) != ConfigKeys().end();
    if (!known && !IsLogKey(key)) {
      if (t.size() > 200) t = t.substr(0, 200) + "...";
      problem(fmt::format("PROF_CONFIG_FILE='{}' line {} '{}' is not valid: expected KEY=VALUE with KEY one of the PROF_* variables; line ignored",
                          path, number, t));
      continue;
    }
    if (IsLogKey(key)) {
      problem(fmt::format("PROF_CONFIG_FILE='{}' line {}: {} is read from the environment only; line ignored", path, number, key));
      continue;
    }
    std::string value = Trim(t.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    (*out)[key] = value;
  }
  if (suppressed > 0) {
    problems->push_back(fmt::format("PROF_CONFIG_FILE='{}': {} more invalid lines not listed (first {} above)", path,
                                    suppressed, kMaxConfigFileProblems));
  }
}


}  // namespace prof
