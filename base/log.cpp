#include "base/log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

namespace prof {

std::string EscapeForLog(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

namespace {

// "%*": the message with control characters escaped, so a value echoed into
// the log (a PROF_* variable, a path, a config line) can never start a line
// of its own: every record is exactly one line.
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    std::string escaped = EscapeForLog(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<EscapedMessage>(); }
};

// Appends to a descriptor we opened and checked ourselves (spdlog's file
// sink would fopen the path again: a FIFO swapped in between would block).
class FdSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit FdSink(int fd) : fd_(fd) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a full disk loses log lines, never the host
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void flush_() override {}

 private:
  int fd_;
};

}  // namespace

int OpenLogFile(const char* path, std::string* why) {
  // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader
  // forever (in the host's constructor). Regular files only.
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    ::close(fd);
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

namespace {

std::shared_ptr<spdlog::logger> MakeLogger() {
  std::shared_ptr<spdlog::logger> logger;
  // secure_getenv: nothing under AT_SECURE (agent_start.cpp never gets this
  // far there; this is the second lock on the door).
  const char* file = secure_getenv("PROF_LOG_FILE");
  std::string file_error;
  if (file != nullptr && *file != '\0') {
    int fd = OpenLogFile(file, &file_error);
    if (fd >= 0) {
      try {
        logger = std::make_shared<spdlog::logger>("libprof", std::make_shared<FdSink>(fd));
      } catch (const std::exception&) {
        ::close(fd);
        file_error = "out of memory";
      }
    }
  }
  if (!logger) logger = std::make_shared<spdlog::logger>("libprof", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedMessage>('*').set_pattern("[libprof] %l: %*");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::info);
  const char* level = secure_getenv("PROF_LOG_LEVEL");
  if (level != nullptr && *level != '\0') {
    auto parsed = spdlog::level::from_str(level);
    // from_str answers "off" for anything it does not know; only "off" means off.
    if (parsed != spdlog::level::off || std::string_view(level) == "off") {
      logger->set_level(parsed);
    } else {
      logger->warn("PROF_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, critical, off; using info", level);
    }
  }
  if (!file_error.empty()) {
    logger->warn("PROF_LOG_FILE='{}' is not valid: expected a regular file that can be opened for appending ({}); logging to stderr",
                 file, file_error);
  }
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace

namespace {
// Created on first use, never destroyed (threads and the exit path log until
// the very end), never registered globally so the host's own spdlog (if
// any) is untouched. Replaced wholesale in a fork child, where a parent
// thread may have held the sink's mutex.
std::atomic<spdlog::logger*> g_logger{nullptr};
std::mutex g_logger_mu;
}  // namespace

spdlog::logger& Log() {
  spdlog::logger* logger = g_logger.load(std::memory_order_acquire);
  if (logger != nullptr) return *logger;
  std::lock_guard<std::mutex> lock(g_logger_mu);
  logger = g_logger.load(std::memory_order_relaxed);
  if (logger == nullptr) {
    auto* holder = new std::shared_ptr<spdlog::logger>(MakeLogger());  // leaked on purpose
    logger = holder->get();
    g_logger.store(logger, std::memory_order_release);
  }
  return *logger;
}

void ResetLogAfterFork() {
  new (&g_logger_mu) std::mutex();
  g_logger.store(nullptr, std::memory_order_release);  // the old one is leaked
}

}  // namespace prof
