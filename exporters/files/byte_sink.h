// Where exporters put bytes: a file (atomic_file.h), a gzip stream in front
// of one (gzip_sink.h), or a string in tests and in `prof summary`.
#pragma once

#include <cstddef>
#include <string>

namespace prof {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // False once anything failed; later calls keep returning false.
  virtual bool Append(const char* data, size_t size) = 0;
  // Flushes whatever the sink buffers (the gzip trailer, for instance).
  virtual bool Finish() = 0;
};

class StringSink final : public ByteSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  bool Append(const char* data, size_t size) override {
    out_->append(data, size);
    return true;
  }
  bool Finish() override { return true; }

 private:
  std::string* out_;
};

}  // namespace prof
