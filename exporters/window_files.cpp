#include "exporters/window_files.h"

#include <sys/stat.h>

#include <cerrno>
#include <exception>
#include <optional>

#include "exporters/atomic_file.h"
#include "exporters/chrome_trace.h"
#include "exporters/gzip_sink.h"
#include "exporters/summary.h"
#include "exporters/window_index.h"

namespace prof {
namespace {

// mkdir -p: PROF_OUTPUT_DIR may name several missing levels.
bool EnsureDir(FileSystem& fs, const std::string& dir, std::string* error) {
  for (size_t end = 1; end <= dir.size(); ++end) {
    if (end != dir.size() && dir[end] != '/') continue;
    std::string prefix = dir.substr(0, end);
    if (fs.MakeDir(prefix.c_str(), 0755) == 0 || errno == EEXIST) continue;
    *error = "mkdir " + prefix + ": " + ErrnoText(errno);
    return false;
  }
  return true;
}

bool WriteTrace(const Window& window, const WindowIndex& index, const std::string& path,
                const std::string& trace_name, bool gzip, FileSystem& fs, std::string* error) {
  AtomicFile file(fs, path);
  bool ok = file.Open();
  if (ok) {
    if (gzip) {
      GzipSink zipped(file);
      ok = WriteChromeTrace(window, index, trace_name, zipped);
    } else {
      ok = WriteChromeTrace(window, index, trace_name, file);
    }
  }
  ok = ok && file.Commit();
  if (!ok) *error = file.error().empty() ? "writing " + path + " failed" : file.error();
  return ok;
}

bool WriteSummaryFile(const Window& window, const WindowIndex& index, const std::string& path, FileSystem& fs,
                      std::string* error) {
  std::string text = RenderSummary(window, index);
  AtomicFile file(fs, path);
  bool ok = file.Open() && file.Append(text.data(), text.size()) && file.Commit();
  if (!ok) *error = file.error();
  return ok;
}

}  // namespace

std::string WindowFileStem(const WindowMeta& meta) {
  std::string name = meta.name.empty() ? meta.hostname + "_" + std::to_string(meta.pid) : meta.name;
  for (char& c : name) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (meta.rank_known) name += "_rank" + std::to_string(meta.rank);
  return name + "." + std::to_string(meta.first_step);
}

bool WriteWindowFiles(const Window& window, const OutputOptions& options, FileSystem& fs, std::string* error) {
  std::string scratch;
  if (error == nullptr) error = &scratch;
  error->clear();
  try {
    if (!EnsureDir(fs, options.output_dir, error)) return false;
    std::string dir = options.output_dir.empty() ? "" : options.output_dir + "/";
    std::string stem = WindowFileStem(window.meta);
    bool ok = true;
    // One pass over every event builds it; the trace and the summary share it.
    std::optional<WindowIndex> index;
    if (options.chrome || options.summary) index.emplace(window);
    if (options.chrome) {
      std::string trace_name = stem + ".pt.trace.json" + (options.gzip ? ".gz" : "");
      ok = WriteTrace(window, *index, dir + trace_name, trace_name, options.gzip, fs, error);
    }
    // A summary is still worth having when the trace failed (e.g. too big).
    if (options.summary) {
      std::string summary_error;
      if (!WriteSummaryFile(window, *index, dir + stem + ".summary.txt", fs, &summary_error)) {
        if (ok) *error = summary_error;
        ok = false;
      }
    }
    return ok;
  } catch (const std::exception& e) {  // bad_alloc: never let it reach the host
    *error = std::string("writing window files: ") + e.what();
    return false;
  }
}

bool WriteWindowFiles(const Window& window, const OutputOptions& options, std::string* error) {
  return WriteWindowFiles(window, options, PosixFileSystem(), error);
}

}  // namespace prof
