#include "agent/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <atomic>
#include <memory>
#include <mutex>

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
