#include "tools/prof/json/byte_source.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace prof::tool {
namespace {

class GzFileSource : public ByteSource {
 public:
  GzFileSource(gzFile file, std::string path, uint64_t max_unpacked)
      : file_(file), path_(std::move(path)), max_(max_unpacked) {}
  ~GzFileSource() override { gzclose(file_); }

  long Read(char* buffer, size_t size) override {
    if (!error_.empty()) return -1;
    int n = gzread(file_, buffer, static_cast<unsigned>(std::min<size_t>(size, 1u << 30)));
    int code = Z_OK;
    const char* message = n <= 0 ? gzerror(file_, &code) : nullptr;
    if (n < 0 || code != Z_OK) {
      // A damaged or cut-short gzip stream is named as such, not left to
      // the JSON reader (which would see no bytes, or half of them).
      // zlib's message starts with the path: keep what follows it.
      std::string what = message != nullptr ? message : "";
      if (what.rfind(path_ + ": ", 0) == 0) what.erase(0, path_.size() + 2);
      if (code == Z_ERRNO) {
        error_ = path_ + ": " + std::strerror(errno);
      } else if (code == Z_BUF_ERROR) {
        error_ = path_ + ": truncated gzip file (the compressed data ends early)";
      } else {
        error_ = path_ + ": corrupt gzip file (" + what + ")";
      }
      return -1;
    }
    if (!checked_kind_ && n > 0) {
      checked_kind_ = true;
      // gzread passes plain bytes through: a .gz name on bytes that are not
      // gzip's is a damaged (or misnamed) file, said as such.
      if (gzdirect(file_) && EndsWithGz(path_)) {
        error_ = path_ + ": not a gzip file although named .gz (its first bytes are not gzip's 1f 8b)";
        return -1;
      }
    }
    total_ += static_cast<uint64_t>(n);
    if (total_ > max_) {
      error_ = path_ + ": more than " + std::to_string(max_ >> 20) +
               " MB once unpacked (raise --max-unpacked-mb to read it)";
      return -1;
    }
    return n;
  }
  const std::string& error() const override { return error_; }

 private:
  static bool EndsWithGz(const std::string& path) {
    return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  }

  gzFile file_;
  std::string path_;
  uint64_t max_;
  uint64_t total_ = 0;
  bool checked_kind_ = false;
  std::string error_;
};

class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string_view bytes) : bytes_(bytes) {}
  long Read(char* buffer, size_t size) override {
    size_t n = std::min(size, bytes_.size() - pos_);
    std::memcpy(buffer, bytes_.data() + pos_, n);
    pos_ += n;
    return static_cast<long>(n);
  }
  const std::string& error() const override { return error_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, uint64_t max_unpacked_bytes, std::string* error) {
  // gzread passes plain files through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    *error = path + ": " + std::strerror(errno ? errno : ENOMEM);
    return nullptr;
  }
  gzbuffer(file, 1 << 20);
  return std::make_unique<GzFileSource>(file, path, max_unpacked_bytes);
}

std::unique_ptr<ByteSource> MemorySource(std::string_view bytes) { return std::make_unique<StringSource>(bytes); }

}  // namespace prof::tool
