// Compresses into another sink with zlib (gzip framing). Level 1: the writer
// thread must keep up with millions of events per second, and trace JSON is
// repetitive enough that level 1 already shrinks it several times.
#pragma once

#include <zlib.h>

#include "exporters/byte_sink.h"

namespace prof {

class GzipSink final : public ByteSink {
 public:
  explicit GzipSink(ByteSink& out);
  ~GzipSink() override;
  GzipSink(const GzipSink&) = delete;
  GzipSink& operator=(const GzipSink&) = delete;

  bool Append(const char* data, size_t size) override;
  bool Finish() override;  // writes the gzip trailer, then finishes `out`

 private:
  bool Pump(int flush);

  ByteSink& out_;
  z_stream stream_{};
  bool ok_ = false;
  bool finished_ = false;
  unsigned char buffer_[1 << 16];
};

}  // namespace prof
