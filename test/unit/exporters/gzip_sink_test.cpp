// GzipSink frames raw deflate itself and computes the trailer's CRC with
// crc32.h: its bytes must be exactly what zlib's own gzip framing writes.
#include "exporters/files/gzip_sink.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "exporters/files/crc32.h"

namespace prof {
namespace {

// `text` through zlib's gzip framing (windowBits 15 + 16), fed in `pieces`.
std::string ZlibGzip(const std::vector<std::string>& pieces) {
  z_stream s{};
  REQUIRE(deflateInit2(&s, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out;
  unsigned char buffer[4096];
  auto pump = [&](int flush) {
    int rc;
    do {
      s.next_out = buffer;
      s.avail_out = sizeof(buffer);
      rc = deflate(&s, flush);
      out.append(reinterpret_cast<char*>(buffer), sizeof(buffer) - s.avail_out);
    } while (s.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  };
  for (const std::string& p : pieces) {
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p.data()));
    s.avail_in = static_cast<uInt>(p.size());
    pump(Z_NO_FLUSH);
  }
  pump(Z_FINISH);
  deflateEnd(&s);
  return out;
}

std::string OurGzip(const std::vector<std::string>& pieces) {
  std::string out;
  StringSink sink(&out);
  GzipSink zipped(sink);
  for (const std::string& p : pieces) REQUIRE(zipped.Append(p.data(), p.size()));
  REQUIRE(zipped.Finish());
  return out;
}

// The deflate pump above, inflating: zlib's loop each way.
std::string Inflate(const std::string& gz) {
  z_stream s{};
  REQUIRE(inflateInit2(&s, 15 + 16) == Z_OK);  // gzip only: checks the CRC and length
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  s.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  unsigned char buffer[4096];
  int rc;
  do {
    s.next_out = buffer;
    s.avail_out = sizeof(buffer);
    rc = inflate(&s, Z_NO_FLUSH);
    out.append(reinterpret_cast<char*>(buffer), sizeof(buffer) - s.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&s);
  CHECK(rc == Z_STREAM_END);
  return out;
}

TEST_CASE("Crc32 equals zlib's crc32 for every length, alignment and starting value", "[gzip]") {
  std::mt19937_64 rng(7);
  std::vector<unsigned char> data(70'000);
  for (unsigned char& b : data) b = static_cast<unsigned char>(rng());
  for (size_t size = 0; size < 300; ++size) {
    for (size_t offset : {0, 1, 7, 15}) {
      uint32_t start = static_cast<uint32_t>(rng());
      INFO("size " << size << " offset " << offset);
      REQUIRE(Crc32(start, data.data() + offset, size) == crc32_z(start, data.data() + offset, size));
    }
  }
  REQUIRE(Crc32(0, data.data() + 3, 65'536 + 37) == crc32_z(0, data.data() + 3, 65'536 + 37));
  // Chained calls give the CRC of the whole.
  uint32_t chained = Crc32(Crc32(0, data.data(), 1000), data.data() + 1000, 5000);
  CHECK(chained == crc32_z(0, data.data(), 6000));
}

TEST_CASE("GzipSink writes exactly zlib's gzip bytes, which inflate back", "[gzip]") {
  std::mt19937_64 rng(11);
  std::string trace;
  while (trace.size() < 300'000) {
    trace += "{\"ph\":\"X\",\"ts\":" + std::to_string(rng() % 100000) + ".000,\"name\":\"k\"},\n";
  }
  std::vector<std::vector<std::string>> inputs = {
      {},                                   // empty: header, empty block, trailer
      {"{}"},                               // shorter than one CRC fold
      {trace},                              // one big append
      {trace.substr(0, 65'536), trace.substr(65'536, 3), trace.substr(65'539)},  // odd pieces
  };
  for (const auto& pieces : inputs) {
    std::string whole;
    for (const std::string& p : pieces) whole += p;
    std::string ours = OurGzip(pieces);
    CHECK(ours == ZlibGzip(pieces));
    CHECK(Inflate(ours) == whole);
  }
}

TEST_CASE("GzipSink reports a failing sink and refuses more input", "[gzip]") {
  struct Failing final : ByteSink {
    bool Append(const char*, size_t) override { return false; }
    bool Finish() override { return true; }
  } failing;
  GzipSink zipped(failing);
  CHECK_FALSE(zipped.Append("x", 1));  // the header cannot be written
  CHECK_FALSE(zipped.Append("y", 1));
  CHECK_FALSE(zipped.Finish());
}

}  // namespace
}  // namespace prof
