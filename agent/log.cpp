#include "agent/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <memory>

namespace prof {
namespace {

std::shared_ptr<spdlog::logger> MakeLogger() {
  std::shared_ptr<spdlog::logger> logger;
  const char* file = std::getenv("PROF_LOG_FILE");
  bool file_failed = false;
  if (file != nullptr && *file != '\0') {
    try {
      auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file);
      logger = std::make_shared<spdlog::logger>("libprof", std::move(sink));
    } catch (const std::exception&) {
      file_failed = true;  // fall back to stderr below, and say so
    }
  }
  if (!logger) logger = std::make_shared<spdlog::logger>("libprof", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("[libprof] %l: %v");
  logger->set_level(spdlog::level::info);
  const char* level = std::getenv("PROF_LOG_LEVEL");
  if (level != nullptr && *level != '\0') {
    auto parsed = spdlog::level::from_str(level);
    // from_str answers "off" for anything it does not know; only "off" means off.
    if (parsed != spdlog::level::off || std::string_view(level) == "off") {
      logger->set_level(parsed);
    } else {
      logger->warn("PROF_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, critical, off; using info", level);
    }
  }
  if (file_failed) {
    logger->warn("PROF_LOG_FILE='{}' cannot be opened for writing; logging to stderr", file);
  }
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace

spdlog::logger& Log() {
  // Function-local static: thread-safe init, lives until exit; never
  // registered globally so the host's own spdlog (if any) is untouched.
  static std::shared_ptr<spdlog::logger> logger = MakeLogger();
  return *logger;
}

}  // namespace prof
