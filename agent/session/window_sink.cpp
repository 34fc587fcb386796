#include "agent/session/window_sink.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "base/output_dir.h"
#include "base/log.h"

namespace prof {

WindowSinkOptions SinkOptionsFor(const Config& config) {
  WindowSinkOptions options;
  options.files.output_dir = config.output_dir;
  options.files.chrome = config.write_chrome;
  options.files.summary = config.write_summary;
  options.files.html = config.write_html;
  options.files.stacks = config.write_stacks;
  options.files.gzip = config.gzip;
  return options;
}

WindowFileSink::WindowFileSink(WindowSinkOptions options, FileSystem& fs)
    : options_(std::move(options)),
      fs_(fs),
      sweeper_(options_.files.output_dir, fs),
      host_only_note_pending_(options_.host_only) {}

bool WindowFileSink::Recorded(const Window& w) {
  // A call only CUPTI's records show (a device query no wrapper or callback
  // records, such as cudaGetDeviceProperties) counts: libprof's own calls
  // leave no record in a window (CuptiCollector::DrainCompletedLocked).
  bool device = std::any_of(w.device_records.begin(), w.device_records.end(), [](const DeviceRecord& r) {
    return static_cast<DeviceKind>(r.kind) != DeviceKind::kOverhead;
  });
  return device || !w.host_events.empty() || !w.nvtx_ranges.empty() || !w.alloc_samples.empty() ||
         !w.collectives.empty();
}

bool WindowFileSink::Write(const Window& window, std::string* note, std::vector<std::string>* files) {
  if (!Recorded(window)) {
    *note = "not written: nothing was recorded in it";
    return true;
  }
  const std::string& dir = options_.files.output_dir;
  std::string why;
  if (!MakeDirectories(dir, nullptr, &why, fs_)) {
    *note = fmt::format("PROF_OUTPUT_DIR='{}': {}", dir, why);
    return false;
  }
  FileTimes times;
  bool written = WriteWindowFiles(window, options_.files, fs_, note, files, &times);
  Log().debug("window steps {}-{}: trace {:.1f} ms, summary {:.1f} ms, report page {:.1f} ms (each made and written)",
              window.meta.first_step, window.meta.last_step, times.trace_ns / 1e6, times.summary_ns / 1e6,
              times.page_ns / 1e6);
  if (written && host_only_note_pending_) {
    host_only_note_pending_ = false;
    Log().info("this process (pid {}) was forked from pid {} after that process had loaded CUDA, so CUPTI cannot "
               "be used here: its windows hold host calls only, no GPU timings; start such workers with "
               "multiprocessing's 'spawn' method (or fork before loading CUDA) to profile them fully",
               getpid(), options_.parent);
  }
  // Workers that left through _exit() mid-write (no exit path ran there).
  if (int n = sweeper_.Sweep()) {
    Log().info("removed {} temporary file(s) in PROF_OUTPUT_DIR left by processes that ended through _exit() while "
               "writing a window",
               n);
  }
  return written;
}

WindowSink MakeWindowFileSink(WindowSinkOptions options) {
  auto sink = std::make_shared<WindowFileSink>(std::move(options));
  return [sink](const Window& window, std::string* note, std::vector<std::string>* files) {
    return sink->Write(window, note, files);
  };
}

}  // namespace prof
