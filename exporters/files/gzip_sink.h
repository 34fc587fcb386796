// Compresses into another sink with zlib, in gzip framing. Level 1: the
// writer thread must keep up with millions of events per second, and trace
// JSON is repetitive enough that level 1 already shrinks it ~18 times.
//
// zlib deflates raw and this class writes the gzip header and trailer
// itself, so the trailer's CRC-32 comes from crc32.h (carry-less multiply)
// rather than zlib 1.2's tables; the bytes are what zlib's own gzip
// framing writes.
#pragma once

#include <zlib.h>

#include <cstdint>

#include "exporters/files/byte_sink.h"

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
  bool header_written_ = false;
  uint32_t crc_ = 0;         // of the uncompressed bytes
  uint64_t input_bytes_ = 0;  // the trailer keeps it mod 2^32
  unsigned char buffer_[1 << 16];
};

}  // namespace prof
