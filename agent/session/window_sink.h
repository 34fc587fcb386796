// What happens to a sealed window, in one place: the writer thread hands it
// here (WriterDeps::sink) and this decides and does the rest.
//
//   1. A window that recorded nothing is skipped: no files (a shell between
//      the launcher and the job, a CPU-only fork-based worker).
//   2. PROF_OUTPUT_DIR is created if missing (every window: it may have been
//      removed since the last one).
//   3. The formats PROF_FORMATS asks for are written, each atomically
//      (exporters/files/window_files: a hidden temporary linked into place).
//   4. Temporaries that workers ending through _exit() left mid-write are
//      swept (exporters/files/temporary_sweeper).
//
// Every file and directory call goes through one FileSystem
// (base/file_system.h), so tests inject each failure. The sink logs its own notes (a fork child's
// host-only windows, swept temporaries); the writer logs the outcome from
// what Write returns ("window steps a-b of pid P written: ...; files: <each
// path>", or "not written: why").
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "agent/session/writer.h"
#include "base/config.h"
#include "base/file_system.h"
#include "exporters/files/temporary_sweeper.h"
#include "exporters/files/window_files.h"
#include "model/window.h"

namespace prof {

struct WindowSinkOptions {
  OutputOptions files;  // the directory and the formats (PROF_OUTPUT_DIR, PROF_FORMATS, PROF_COMPRESS)
  // A fork child of a process that had loaded CUDA (no CUPTI there): its
  // first window written says, once, why it holds host calls only, naming
  // the parent.
  bool host_only = false;
  pid_t parent = 0;
};

// The options for the agent's configuration.
WindowSinkOptions SinkOptionsFor(const Config& config);

class WindowFileSink {
 public:
  // fs must outlive the sink (PosixFileSystem() does).
  explicit WindowFileSink(WindowSinkOptions options, FileSystem& fs = PosixFileSystem());

  // The WindowSink contract (agent/session/writer.h): false with a one-line
  // error naming the call, the path and the errno; true with a note when
  // nothing was written on purpose; no partial file either way. `files`, if
  // given, gets the path of each file placed. Writer thread only.
  bool Write(const Window& window, std::string* note, std::vector<std::string>* files = nullptr);

  // Whether a window holds anything worth a file.
  static bool Recorded(const Window& window);

 private:
  WindowSinkOptions options_;
  FileSystem& fs_;
  TemporarySweeper sweeper_;
  bool host_only_note_pending_;  // the fork child's line is still to be logged
};

// A WindowSink for the writer thread, owning a WindowFileSink.
WindowSink MakeWindowFileSink(WindowSinkOptions options);

}  // namespace prof
