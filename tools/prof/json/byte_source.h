// Where the `prof` readers' bytes come from: a file (plain or gzip, told by
// its first bytes, refused past a size once unpacked) or memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace prof::tool {

// Default cap on a file's size once gunzipped (`--max-unpacked-mb`).
inline constexpr uint64_t kDefaultMaxUnpackedBytes = uint64_t{16} << 30;

// Read returns the number of bytes read, 0 at the end, -1 on error (then
// error() says what, naming the file).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual long Read(char* buffer, size_t size) = 0;
  virtual const std::string& error() const = 0;
};

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, uint64_t max_unpacked_bytes, std::string* error);
std::unique_ptr<ByteSource> MemorySource(std::string_view bytes);

}  // namespace prof::tool
