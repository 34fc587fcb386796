#include "exporters/gzip_sink.h"

#include <algorithm>

namespace prof {

GzipSink::GzipSink(ByteSink& out) : out_(out) {
  // windowBits 15 + 16 selects the gzip header and trailer.
  ok_ = deflateInit2(&stream_, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

GzipSink::~GzipSink() { deflateEnd(&stream_); }

bool GzipSink::Pump(int flush) {
  int rc;
  do {
    stream_.next_out = buffer_;
    stream_.avail_out = sizeof(buffer_);
    rc = deflate(&stream_, flush);
    if (rc == Z_STREAM_ERROR) return ok_ = false;
    size_t produced = sizeof(buffer_) - stream_.avail_out;
    if (produced > 0 && !out_.Append(reinterpret_cast<const char*>(buffer_), produced)) return ok_ = false;
  } while (stream_.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return true;
}

bool GzipSink::Append(const char* data, size_t size) {
  if (!ok_ || finished_) return false;
  // avail_in is 32-bit: feed huge buffers (a merged trace) in pieces.
  constexpr size_t kChunk = size_t{1} << 30;
  while (size > 0) {
    size_t n = std::min(size, kChunk);
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    stream_.avail_in = static_cast<uInt>(n);
    if (!Pump(Z_NO_FLUSH)) return false;
    data += n;
    size -= n;
  }
  return true;
}

bool GzipSink::Finish() {
  if (!ok_ || finished_) return false;
  finished_ = true;
  stream_.next_in = nullptr;
  stream_.avail_in = 0;
  return Pump(Z_FINISH) && out_.Finish();
}

}  // namespace prof
