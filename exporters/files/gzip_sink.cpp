#include "exporters/files/gzip_sink.h"

#include <algorithm>

#include "exporters/files/crc32.h"

namespace prof {
namespace {

// RFC 1952 member header as zlib writes it for level 1: no name, no mtime,
// XFL 4 (fastest compression), OS 3 (Unix).
constexpr unsigned char kGzipHeader[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3};

void PutLittleEndian32(uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

GzipSink::GzipSink(ByteSink& out) : out_(out) {
  // Negative windowBits: raw deflate, no zlib or gzip framing.
  ok_ = deflateInit2(&stream_, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK;
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
  // zlib's gzip framing writes the header with the first compressed bytes;
  // so does this (an empty stream still gets one, in Finish).
  if (!header_written_) {
    header_written_ = true;
    if (!out_.Append(reinterpret_cast<const char*>(kGzipHeader), sizeof(kGzipHeader))) return ok_ = false;
  }
  crc_ = Crc32(crc_, reinterpret_cast<const unsigned char*>(data), size);
  input_bytes_ += size;
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
  if (!header_written_) {
    header_written_ = true;
    if (!out_.Append(reinterpret_cast<const char*>(kGzipHeader), sizeof(kGzipHeader))) return ok_ = false;
  }
  finished_ = true;
  stream_.next_in = nullptr;
  stream_.avail_in = 0;
  if (!Pump(Z_FINISH)) return false;
  unsigned char trailer[8];
  PutLittleEndian32(crc_, trailer);
  PutLittleEndian32(static_cast<uint32_t>(input_bytes_), trailer + 4);
  if (!out_.Append(reinterpret_cast<const char*>(trailer), sizeof(trailer))) return ok_ = false;
  return out_.Finish();
}

}  // namespace prof
