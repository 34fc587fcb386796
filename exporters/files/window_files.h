// Writes one sealed window's files: the Chrome trace, the summary, the report
// page and folded stacks. The agent's writer thread calls this once per
// window (never an application thread); `prof` does not.
#pragma once

#include <string>
#include <vector>

#include "model/window.h"
#include "base/file_system.h"

namespace prof {

struct OutputOptions {
  std::string output_dir;  // must exist: the window sink (agent/session/window_sink) creates it
  bool chrome = true;      // <stem>.pt.trace.json[.gz]
  bool summary = true;     // <stem>.summary.txt
  bool gzip = false;       // compress the trace
  bool html = false;       // <stem>.report.html (on in the agent by default: PROF_FORMATS)
  bool stacks = false;     // <stem>.stacks.txt
};

// "<name>[_rank<R>].<first step>": `name` is meta.name with '/' replaced (or
// "<hostname>_<pid>" when empty); the rank part only when meta.rank_known.
std::string WindowFileStem(const WindowMeta& meta);
// Variant 0 is WindowFileStem; variant 1 adds "_pid<pid>" to the name, and
// k > 1 "_pid<pid>_<k>". Used when another process (same PROF_NAME) already
// holds the plain name: an existing file is never replaced.
std::string WindowFileStemVariant(const WindowMeta& meta, int variant);

// Each file is written under a hidden temporary name in output_dir and linked
// into place (never replacing a file that exists: see WindowFileStemVariant). Returns false with a one-line `error` naming the call, path and
// errno (ENOSPC, EACCES, ...) and leaves no partial file; files already
// renamed into place stay. `written`, if given, gets the path of each file
// placed (output_dir + "/" + name), in the order written, whatever the
// outcome. Never throws.
bool WriteWindowFiles(const Window& window, const OutputOptions& options, std::string* error,
                      std::vector<std::string>* written = nullptr);

// What making and writing each file took (steady clock), for the debug log.
struct FileTimes {
  uint64_t trace_ns = 0, summary_ns = 0, page_ns = 0;
};

// The same, through a given file system seam (tests inject failures here).
bool WriteWindowFiles(const Window& window, const OutputOptions& options, FileSystem& fs,
                      std::string* error, std::vector<std::string>* written = nullptr, FileTimes* times = nullptr);

}  // namespace prof
