// A file that appears all at once: bytes go to a hidden temporary name in the
// target directory and Commit() renames it into place. On any failure the
// temporary is removed, so a reader never sees half a file.
#pragma once

#include <string>

#include "exporters/byte_sink.h"
#include "exporters/file_system.h"

namespace prof {

class AtomicFile final : public ByteSink {
 public:
  AtomicFile(FileSystem& fs, std::string final_path);
  ~AtomicFile() override;  // aborts (unlinks the temporary) unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool Open();
  bool Append(const char* data, size_t size) override;  // retries EINTR and short writes
  bool Finish() override { return ok(); }
  // Closes and renames into place; false (and nothing left behind) on failure.
  bool Commit();
  void Abort();

  bool ok() const { return error_.empty(); }
  // One line naming the call, the path and the errno ("write ...: No space
  // left on device (ENOSPC)"); empty while ok.
  const std::string& error() const { return error_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void Fail(const char* call, const std::string& path, int err);

  FileSystem& fs_;
  std::string final_path_;
  std::string temp_path_;
  int fd_ = -1;
  bool done_ = false;  // committed or aborted: nothing left to undo
  std::string error_;
};

// "No space left on device (ENOSPC)".
std::string ErrnoText(int err);

}  // namespace prof
