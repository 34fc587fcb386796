// PROF_* parsing. Policy for a bad value (DESIGN.md: never crash, never
// silently misbehave): where the default is obviously safe (schedule
// numbers, formats, buffer size, ...) it is used; where guessing would record
// something the user did not ask for (PROF_ENABLE, PROF_STEP, an unusable
// PROF_OUTPUT_DIR) profiling is disabled. Either way the line says which.
#include <cmath>
#include <map>
#include <regex>

#include "base/config_loader.h"
#include "base/config_parts.h"
#include "base/log.h"
#include "base/output_dir.h"

namespace prof {
namespace {

using config_parts::Lower;
using config_parts::ParseUnsigned;
using config_parts::Trim;

constexpr uint64_t kMaxScheduleSteps = 1'000'000'000;
constexpr uint64_t kMaxBufferMb = 1'048'576;  // 1 TiB: anything above is a typo
constexpr uint64_t kMaxFlushTimeoutMs = 600'000;

class Parser {
 public:
  explicit Parser(ConfigResult* result) : result_(result), config_(result->config) {}

  // The line quotes the value as it was given (untrimmed).
  void Problem(const std::string& key, const std::string& /*trimmed*/, const std::string& accepted,
               const std::string& consequence) {
    result_->problems.push_back(fmt::format("{}='{}' is not valid: expected {}; {}", key, raw_, accepted, consequence));
  }
  void Disable(const std::string& key, const std::string& value, const std::string& accepted) {
    Problem(key, value, accepted, "profiling disabled");
    disabled_by_error_ = true;
  }

  void Apply(const std::string& key, const std::string& raw) {
    raw_ = raw;
    std::string value = Trim(raw);
    if (key == "PROF_ENABLE") return Enable(value);
    if (key == "PROF_OUTPUT_DIR") return OutputDir(value);
    if (key == "PROF_STEP") return Step(value);
    if (key == "PROF_RANGE") return Range(value);
    if (key == "PROF_SKIP_FIRST") return ScheduleNumber(key, value, 0, &config_.skip_first, 0);
    if (key == "PROF_WAIT") return ScheduleNumber(key, value, 0, &config_.wait, 30);
    if (key == "PROF_WARMUP") return ScheduleNumber(key, value, 0, &config_.warmup, 2);
    if (key == "PROF_ACTIVE") return ScheduleNumber(key, value, 1, &config_.active, 5);
    if (key == "PROF_REPEAT") return ScheduleNumber(key, value, 0, &config_.repeat, 1);
    if (key == "PROF_ACTIVITIES") return Activities(value);
    if (key == "PROF_FORMATS") return Formats(value);
    if (key == "PROF_COMPRESS") return Compress(value);
    if (key == "PROF_BUFFER_MB") return BufferMb(value);
    if (key == "PROF_TRIGGER_FILE") return TriggerFile(value);
    if (key == "PROF_NAME") return Name(value);
    if (key == "PROF_RANK") return Rank(value);
    if (key == "PROF_CUPTI_LIB") return CuptiLib(value);
    if (key == "PROF_FLUSH_TIMEOUT_MS") return FlushTimeout(value);
    if (key == "PROF_PYTHON") return Python(value);
    if (key == "PROF_PYTHON_DEPTH") return PythonDepth(value);
    if (key == "PROF_PYTHON_USER") config_.python_user = value;
    if (key == "PROF_AUTO_TIMEOUT") return AutoTimeout(value);
    if (key == "PROF_TORCH_OPS") return TorchOps(value);
    if (key == "PROF_TORCH_MEMORY") return TorchMemory(value);
  }

  bool disabled_by_error() const { return disabled_by_error_; }

 private:
  void Enable(const std::string& value) {
    std::string v = Lower(value);
    if (v == "1" || v == "true" || v == "yes" || v == "on") {
      config_.enabled = true;
    } else if (v == "0" || v == "false" || v == "no" || v == "off") {
      config_.enabled = false;
    } else {
      Disable("PROF_ENABLE", value, "1/0 (or true/false, yes/no, on/off)");
    }
  }

  void OutputDir(const std::string& value) {
    if (value.empty()) return Disable("PROF_OUTPUT_DIR", value, "a directory path");
    config_.output_dir = value;
  }

  void Step(const std::string& value) {
    const char* accepted =
        "auto, time:<duration> (e.g. time:100ms), kernel:<regex>, nvtx:<regex>, api:<cudaFunction>, sync or manual";
    if (value == "auto") {
      config_.step_source = StepSource::kAuto;
      return;
    }
    if (value == "sync") {
      config_.step_source = StepSource::kSync;
      return;
    }
    if (value == "manual") {
      config_.step_source = StepSource::kManual;
      return;
    }
    size_t colon = value.find(':');
    if (colon == std::string::npos) return Disable("PROF_STEP", value, accepted);
    std::string kind = value.substr(0, colon);
    std::string arg = value.substr(colon + 1);
    if (kind == "time") {
      uint64_t ns = 0;
      if (!ParseDurationNs(arg, &ns)) return Disable("PROF_STEP", value, "time:<duration> with a unit: ns, us, ms, s or min (e.g. time:100ms, time:2s)");
      config_.step_source = StepSource::kTime;
      config_.step_time_ns = ns;
    } else if (kind == "kernel" || kind == "nvtx") {
      if (arg.empty()) return Disable("PROF_STEP", value, std::string(kind) + ":<non-empty regex>");
      try {
        std::regex check(arg, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return Disable("PROF_STEP", value, fmt::format("{}:<ECMAScript regex> ({})", kind, e.what()));
      }
      config_.step_source = kind == "kernel" ? StepSource::kKernel : StepSource::kNvtx;
      config_.step_pattern = arg;
    } else if (kind == "api") {
      ApiId id;
      if (!ApiFromName(arg, &id)) return Disable("PROF_STEP", value, "api:<an intercepted CUDA function, e.g. cudaGraphLaunch or cudaMemcpyAsync>");
      config_.step_source = StepSource::kApi;
      config_.step_api = id;
    } else {
      Disable("PROF_STEP", value, accepted);
    }
  }

  // A bad PROF_RANGE falls back to PROF_STEP's schedule (what runs without
  // PROF_RANGE), and the line says so.
  void Range(const std::string& value) {
    config_.range_kind = RangeKind::kNone;
    config_.range_pattern.clear();
    const char* fallback = "capture ranges off: windows follow the PROF_STEP schedule";
    if (value.empty()) return;
    if (Lower(value) == "cudaprofilerapi") {
      config_.range_kind = RangeKind::kProfilerApi;
      return;
    }
    if (value.rfind("nvtx:", 0) == 0) {
      std::string arg = value.substr(5);
      if (arg.empty()) return Problem("PROF_RANGE", value, "nvtx:<non-empty regex>", fallback);
      try {
        std::regex check(arg, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return Problem("PROF_RANGE", value, fmt::format("nvtx:<ECMAScript regex> ({})", e.what()), fallback);
      }
      config_.range_kind = RangeKind::kNvtx;
      config_.range_pattern = arg;
      return;
    }
    Problem("PROF_RANGE", value, "cudaProfilerApi or nvtx:<regex> (e.g. nvtx:^train_step$, nvtx:mydomain@)", fallback);
  }

  void ScheduleNumber(const std::string& key, const std::string& value, uint64_t min, uint64_t* field, uint64_t def) {
    uint64_t n = 0;
    if (!ParseUnsigned(value, kMaxScheduleSteps, &n) || n < min) {
      *field = def;
      return Problem(key, value, fmt::format("an integer from {} to {}", min, kMaxScheduleSteps),
                     fmt::format("using the default {}", def));
    }
    *field = n;
  }

  void Activities(const std::string& value) {
    static const std::map<std::string, uint32_t> kNames = {
        {"kernel", kActKernel}, {"memcpy", kActMemcpy}, {"memset", kActMemset},     {"runtime", kActRuntime},
        {"driver", kActDriver}, {"sync", kActSync},     {"memory", kActMemory},     {"nvtx", kActNvtx},
        {"overhead", kActOverhead}};
    uint32_t bits = 0;
    std::stringstream in(value);
    std::string item;
    bool ok = !value.empty();
    while (ok && std::getline(in, item, ',')) {
      auto it = kNames.find(Lower(Trim(item)));
      if (it == kNames.end()) ok = false;
      else bits |= it->second;
    }
    if (!ok || bits == 0) {
      config_.activities = kDefaultActivities;
      return Problem("PROF_ACTIVITIES", value,
                     "a comma list of kernel, memcpy, memset, runtime, driver, sync, memory, nvtx, overhead",
                     "using the default kernel,memcpy,memset,runtime,sync,memory,nvtx");
    }
    config_.activities = bits;
  }

  void Formats(const std::string& value) {
    bool chrome = false, summary = false, html = false, stacks = false;
    std::stringstream in(value);
    std::string item;
    bool ok = !value.empty();
    while (ok && std::getline(in, item, ',')) {
      std::string v = Lower(Trim(item));
      if (v == "chrome") chrome = true;
      else if (v == "summary") summary = true;
      else if (v == "html") html = true;
      else if (v == "stacks") stacks = true;
      else ok = false;
    }
    if (!ok || !(chrome || summary || html || stacks)) {
      config_.write_chrome = config_.write_summary = config_.write_html = true;
      config_.write_stacks = false;
      return Problem("PROF_FORMATS", value, "a comma list of chrome, summary, html, stacks",
                     "using the default chrome,summary,html");
    }
    config_.write_chrome = chrome;
    config_.write_summary = summary;
    config_.write_html = html;
    config_.write_stacks = stacks;
  }

  void Compress(const std::string& value) {
    std::string v = Lower(value);
    if (v == "none") config_.gzip = false;
    else if (v == "gzip") config_.gzip = true;
    else {
      config_.gzip = false;
      Problem("PROF_COMPRESS", value, "none or gzip", "using the default none");
    }
  }

  void BufferMb(const std::string& value) {
    uint64_t mb = 0;
    if (!ParseUnsigned(value, kMaxBufferMb, &mb) || mb == 0) {
      config_.buffer_bytes = 256ull << 20;
      return Problem("PROF_BUFFER_MB", value, fmt::format("an integer number of MiB from 1 to {}", kMaxBufferMb),
                     "using the default 256");
    }
    config_.buffer_bytes = mb << 20;
  }

  void TriggerFile(const std::string& value) {
    if (value.empty()) return Problem("PROF_TRIGGER_FILE", value, "a file path", "no trigger: the schedule starts at once");
    config_.trigger_file = value;
  }

  void Name(const std::string& value) {
    bool ok = !value.empty() && value.size() <= 200 && value.find('/') == std::string::npos && value != "." &&
              value != "..";
    for (char c : value) ok = ok && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
    if (!ok) {
      config_.name.clear();
      return Problem("PROF_NAME", value, "a non-empty file-name part without '/' or control characters",
                     "using the default <host>_<process>_<pid>");
    }
    config_.name = value;
  }

  void Rank(const std::string& value) {
    uint64_t r = 0;
    if (!ParseUnsigned(value, 1'000'000'000, &r)) {
      return Problem("PROF_RANK", value, "a non-negative integer", "rank taken from the launcher's variables, if any");
    }
    config_.rank = static_cast<int>(r);
    rank_from_prof_ = true;
  }

  void CuptiLib(const std::string& value) {
    struct stat st;
    if (value.empty() || stat(value.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      config_.cupti_lib.clear();
      return Problem("PROF_CUPTI_LIB", value, "the path of an existing libcupti.so file", "searching for libcupti as usual");
    }
    config_.cupti_lib = value;
  }

  void FlushTimeout(const std::string& value) {
    uint64_t ms = 0;
    if (!ParseUnsigned(value, kMaxFlushTimeoutMs, &ms)) {
      config_.flush_timeout_ns = 3'000'000'000;
      return Problem("PROF_FLUSH_TIMEOUT_MS", value, fmt::format("an integer number of milliseconds from 0 to {}", kMaxFlushTimeoutMs),
                     "using the default 3000");
    }
    config_.flush_timeout_ns = ms * 1'000'000;
  }

  void Python(const std::string& value) {
    std::string v = Lower(value);
    if (v == "auto" || v == "1" || v == "on" || v == "true" || v == "yes") {
      config_.python_stacks = true;
    } else if (v == "0" || v == "off" || v == "false" || v == "no") {
      config_.python_stacks = false;
    } else {
      config_.python_stacks = true;
      Problem("PROF_PYTHON", value, "auto or 0", "using auto");
    }
  }

  // names | shapes | 0, optionally followed by ",modules" (unset: names,modules).
  void TorchOps(const std::string& value) {
    std::string v = Lower(value);
    config_.torch_modules = false;
    const std::string suffix = ",modules";
    if (v.size() > suffix.size() && v.compare(v.size() - suffix.size(), suffix.size(), suffix) == 0) {
      config_.torch_modules = true;
      v.resize(v.size() - suffix.size());
    } else if (v == "modules") {
      config_.torch_modules = true;
      v = "names";
    }
    if (v == "shapes") {
      config_.torch_ops = TorchOps::kShapes;
    } else if (v == "names" || v == "1" || v == "on" || v == "true" || v == "yes") {
      config_.torch_ops = TorchOps::kNames;
    } else if ((v == "0" || v == "off" || v == "false" || v == "no") && !config_.torch_modules) {
      config_.torch_ops = TorchOps::kOff;
    } else {
      config_.torch_ops = TorchOps::kNames;
      config_.torch_modules = true;
      Problem("PROF_TORCH_OPS", value, "names, shapes or 0, optionally followed by ,modules",
              "using names,modules");
    }
  }

  void TorchMemory(const std::string& value) {
    std::string v = Lower(value);
    if (v == "1" || v == "on" || v == "true" || v == "yes") {
      config_.torch_memory = true;
    } else if (v == "0" || v == "off" || v == "false" || v == "no") {
      config_.torch_memory = false;
    } else {
      config_.torch_memory = true;
      Problem("PROF_TORCH_MEMORY", value, "1 or 0", "using 1");
    }
  }

  void PythonDepth(const std::string& value) {
    uint64_t n = 0;
    if (!ParseUnsigned(value, 256, &n) || n < 1) {
      config_.python_depth = 64;
      return Problem("PROF_PYTHON_DEPTH", value, "an integer from 1 to 256", "using the default 64");
    }
    config_.python_depth = static_cast<int>(n);
  }

  void AutoTimeout(const std::string& value) {
    uint64_t ns = 0;
    if (!ParseDurationNs(value, &ns)) {
      config_.auto_timeout_ns = 60'000'000'000;
      return Problem("PROF_AUTO_TIMEOUT", value, "a duration with a unit: ms, s or min (e.g. 60s, 2min)", "using the default 60s");
    }
    config_.auto_timeout_ns = ns;
  }

  ConfigResult* result_;
  Config& config_;
  std::string raw_;  // the value being applied, as given
  bool disabled_by_error_ = false;

 public:
  bool rank_from_prof_ = false;
};


std::string StepText(const Config& c) {
  switch (c.step_source) {
    case StepSource::kTime: return fmt::format("time:{}ns", c.step_time_ns);
    case StepSource::kKernel: return "kernel:" + c.step_pattern;
    case StepSource::kNvtx: return "nvtx:" + c.step_pattern;
    case StepSource::kApi: return "api:" + std::string(ApiName(c.step_api));
    case StepSource::kSync: return "sync";
    case StepSource::kManual: return "manual";
    case StepSource::kAuto: return "auto";
  }
  return "?";
}

std::string ActivitiesText(uint32_t bits) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kActKernel, "kernel"}, {kActMemcpy, "memcpy"}, {kActMemset, "memset"}, {kActRuntime, "runtime"}, {kActDriver, "driver"},
      {kActSync, "sync"},     {kActMemory, "memory"}, {kActNvtx, "nvtx"},     {kActOverhead, "overhead"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (bits & bit) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

std::string FormatsText(bool chrome, bool summary, bool html, bool stacks) {
  std::string out;
  const std::pair<bool, const char*> kNames[] = {{chrome, "chrome"}, {summary, "summary"}, {html, "html"}, {stacks, "stacks"}};
  for (const auto& [on, name] : kNames) {
    if (on) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

}  // namespace

// Keys read from the environment or the config file, in the order applied.
const std::vector<std::string>& ConfigKeys() {
  static const std::vector<std::string> kKeys = {
      "PROF_ENABLE",   "PROF_OUTPUT_DIR", "PROF_STEP",      "PROF_RANGE",     "PROF_SKIP_FIRST",   "PROF_WAIT",
      "PROF_WARMUP",   "PROF_ACTIVE",     "PROF_REPEAT",    "PROF_ACTIVITIES",   "PROF_FORMATS",
      "PROF_COMPRESS", "PROF_BUFFER_MB",  "PROF_TRIGGER_FILE", "PROF_NAME",      "PROF_RANK",
      "PROF_CUPTI_LIB", "PROF_FLUSH_TIMEOUT_MS", "PROF_PYTHON", "PROF_PYTHON_DEPTH", "PROF_PYTHON_USER",
      "PROF_AUTO_TIMEOUT", "PROF_TORCH_OPS", "PROF_TORCH_MEMORY"};
  return kKeys;
}

bool ParseDurationNs(const std::string& text, uint64_t* out_ns) {
  static const std::pair<const char*, double> kUnits[] = {
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"min", 60e9}, {"s", 1e9}};
  std::string t = Trim(text);
  size_t digits_end = 0;
  while (digits_end < t.size() && (std::isdigit(static_cast<unsigned char>(t[digits_end])) || t[digits_end] == '.')) ++digits_end;
  if (digits_end == 0 || digits_end == t.size()) return false;
  std::string number = t.substr(0, digits_end);
  std::string unit = t.substr(digits_end);
  if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' || number.back() == '.') return false;
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    double ns = std::strtod(number.c_str(), nullptr) * scale;
    // A step shorter than 1 us is no step; longer than a day is a typo.
    if (!std::isfinite(ns) || ns < 1000.0 || ns > 86400e9) return false;
    *out_ns = static_cast<uint64_t>(std::llround(ns));
    return true;
  }
  return false;
}

ConfigResult ParseConfig(const EnvLookup& env) {
  ConfigResult result;
  std::map<std::string, std::string> file_values;
  const char* file = env("PROF_CONFIG_FILE");
  if (file != nullptr && *file != '\0') ReadConfigFile(file, &file_values, &result.problems);

  Parser parser(&result);
  for (const std::string& key : ConfigKeys()) {
    const char* v = env(key.c_str());
    if (v != nullptr) {
      parser.Apply(key, v);
    } else if (auto it = file_values.find(key); it != file_values.end()) {
      parser.Apply(key, it->second);
    }
  }
  Config& config = result.config;
  if (!parser.rank_from_prof_) RankFromLauncher(env, &config, &result.problems);
  WorldSizeFromLauncher(env, &config);

  if (config.enabled && !parser.disabled_by_error()) {
    std::string why;
    if (!OutputDirUsable(config.output_dir, &why)) {
      result.problems.push_back(fmt::format("PROF_OUTPUT_DIR='{}' is not valid: expected a writable directory or one that can be created ({}); profiling disabled",
                                            config.output_dir, why));
      config.enabled = false;
    }
  }
  if (parser.disabled_by_error()) config.enabled = false;
  // Resolved once, now: a host that chdir()s later still writes where the
  // user pointed (a relative PROF_OUTPUT_DIR is relative to the start cwd).
  config.output_dir = AbsoluteOutputDir(config.output_dir);
  return result;
}

Config LoadConfigFromEnvironment() {
  // secure_getenv: nothing under AT_SECURE (agent_start.cpp stops before
  // this there; a second lock on the door).
  ConfigResult result = ParseConfig([](const char* name) { return static_cast<const char*>(secure_getenv(name)); });
  for (const std::string& line : result.problems) Log().warn("{}", line);
  return result.config;
}

std::vector<std::pair<std::string, std::string>> Config::Describe() const {
  return {
      {"PROF_ENABLE", enabled ? "1" : "0"},
      {"PROF_OUTPUT_DIR", output_dir},
      {"PROF_STEP", StepText(*this)},
      {"PROF_RANGE", range_kind == RangeKind::kProfilerApi ? "cudaProfilerApi"
                     : range_kind == RangeKind::kNvtx     ? "nvtx:" + range_pattern
                                                          : ""},
      {"PROF_SKIP_FIRST", std::to_string(skip_first)},
      {"PROF_WAIT", std::to_string(wait)},
      {"PROF_WARMUP", std::to_string(warmup)},
      {"PROF_ACTIVE", std::to_string(active)},
      {"PROF_REPEAT", std::to_string(repeat)},
      {"PROF_ACTIVITIES", ActivitiesText(activities)},
      {"PROF_FORMATS", FormatsText(write_chrome, write_summary, write_html, write_stacks)},
      {"PROF_COMPRESS", gzip ? "gzip" : "none"},
      {"PROF_BUFFER_MB", std::to_string(buffer_bytes >> 20)},
      {"PROF_TRIGGER_FILE", trigger_file},
      {"PROF_NAME", name},
      {"PROF_RANK", rank >= 0 ? std::to_string(rank) : ""},
      {"PROF_CUPTI_LIB", cupti_lib},
      {"PROF_FLUSH_TIMEOUT_MS", std::to_string(flush_timeout_ns / 1'000'000)},
      {"PROF_PYTHON", python_stacks ? "auto" : "0"},
      {"PROF_PYTHON_DEPTH", std::to_string(python_depth)},
      {"PROF_PYTHON_USER", python_user},
      {"PROF_AUTO_TIMEOUT", fmt::format("{}ms", auto_timeout_ns / 1'000'000)},
      {"PROF_TORCH_OPS", std::string(torch_ops == TorchOps::kShapes ? "shapes" : torch_ops == TorchOps::kNames ? "names" : "0") +
                             (torch_modules && torch_ops != TorchOps::kOff ? ",modules" : "")},
      {"PROF_TORCH_MEMORY", torch_memory ? "1" : "0"},
  };
}

}  // namespace prof
