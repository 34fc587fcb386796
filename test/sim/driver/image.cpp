#include "image.h"

#include <cstring>
#include <regex>

namespace sim {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50u;   // fat binary header
constexpr uint32_t kWrapperMagic = 0x466243B1u;  // __fatBinC_Wrapper_t

template <typename T>
bool Read(const unsigned char* base, size_t size, size_t offset, T* out) {
  if (offset > size || size - offset < sizeof(T)) return false;
  memcpy(out, base + offset, sizeof(T));
  return true;
}

// One ELF64 image starting at `elf` with `size` bytes available.
bool ReadElf(const unsigned char* elf, size_t size, ImageContents* out) {
  if (size < 64 || memcmp(elf, "\x7f" "ELF", 4) != 0 || elf[4] != 2 /*ELFCLASS64*/) return false;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (!Read(elf, size, 0x28, &shoff) || !Read(elf, size, 0x3A, &shentsize) || !Read(elf, size, 0x3C, &shnum)) {
    return false;
  }
  if (shentsize < 64 || shoff > size || shnum > (size - shoff) / shentsize) return false;
  struct Section {
    uint32_t type;
    uint64_t offset, bytes;
    uint32_t link;
  };
  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const size_t at = shoff + static_cast<size_t>(i) * shentsize;
    Section& s = sections[i];
    if (!Read(elf, size, at + 4, &s.type) || !Read(elf, size, at + 0x18, &s.offset) ||
        !Read(elf, size, at + 0x20, &s.bytes) || !Read(elf, size, at + 0x28, &s.link)) {
      return false;
    }
    if (s.type != 8 /*NOBITS*/ && (s.offset > size || s.bytes > size - s.offset)) return false;
  }
  bool any = false;
  for (const Section& symtab : sections) {
    if (symtab.type != 2 /*SYMTAB*/ || symtab.link >= shnum) continue;
    const Section& strtab = sections[symtab.link];
    for (uint64_t at = symtab.offset; at + 24 <= symtab.offset + symtab.bytes; at += 24) {
      uint32_t name_offset = 0;
      uint8_t info = 0;
      uint16_t shndx = 0;
      uint64_t value = 0, bytes = 0;
      Read(elf, size, at, &name_offset);
      Read(elf, size, at + 4, &info);
      Read(elf, size, at + 6, &shndx);
      Read(elf, size, at + 8, &value);
      Read(elf, size, at + 16, &bytes);
      if (name_offset >= strtab.bytes) continue;
      const char* name = reinterpret_cast<const char*>(elf + strtab.offset + name_offset);
      const size_t max_len = strtab.bytes - name_offset;
      const std::string symbol(name, strnlen(name, max_len));
      if (symbol.empty()) continue;
      const int type = info & 0xf;
      if (type == 2 /*STT_FUNC*/) {
        out->functions.insert(symbol);
        any = true;
      } else if (type == 1 /*STT_OBJECT*/ && shndx != 0 && shndx < shnum) {
        ImageVariable variable;
        variable.bytes = bytes;
        const Section& holder = sections[shndx];
        if (holder.type != 8 && value <= holder.bytes && bytes <= holder.bytes - value) {
          variable.init.assign(elf + holder.offset + value, elf + holder.offset + value + bytes);
        }
        out->variables[symbol] = std::move(variable);
        any = true;
      }
    }
  }
  return any || true;  // a readable ELF without symbols is still known
}

// PTX: kernels are `.entry name`; variables are not read (their sizes need a
// PTX parser), so cuModuleGetGlobal does not find them.
bool ReadPtx(const char* text, size_t size, ImageContents* out) {
  const std::string ptx(text, strnlen(text, size));
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) return false;
  static const std::regex entry(R"(\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*))");
  for (std::sregex_iterator it(ptx.begin(), ptx.end(), entry), end; it != end; ++it) out->functions.insert((*it)[1]);
  return true;
}

// A fat binary, walked entry by entry rather than searched: a compressed
// entry's bytes may hold anything, the ELF magic included. The container
// header (16 bytes: magic, version, its own size, the entries' size) is
// followed by entries, each a header (kind: 1 PTX, 2 ELF; its own size at
// byte 4; the payload's size at byte 8) and the payload; several
// containers may follow each other. A payload that is neither an ELF image
// nor PTX text is compressed, and what it holds stays unknown (as to any
// driver that cannot decompress it): the contents are then known only as
// far as the uncompressed entries tell.
ImageContents ReadFatbin(const unsigned char* p, size_t size) {
  ImageContents out;
  size_t container = 0;
  while (container + 16 <= size) {
    uint32_t magic = 0;
    uint16_t header = 0;
    uint64_t entries_bytes = 0;
    Read(p, size, container, &magic);
    Read(p, size, container + 6, &header);
    Read(p, size, container + 8, &entries_bytes);
    if (magic != kFatbinMagic || header < 16 || entries_bytes > size - container - header) break;
    const size_t end = container + header + entries_bytes;
    size_t entry = container + header;
    // The entries inside a container: the containers' read-then-bound-check, on the entries' fields.
    while (entry + 16 <= end) {
      uint16_t kind = 0;
      uint32_t entry_header = 0;
      uint64_t payload = 0;
      Read(p, size, entry, &kind);
      Read(p, size, entry + 4, &entry_header);
      Read(p, size, entry + 8, &payload);
      if (entry_header < 16 || entry_header > end - entry || payload > end - entry - entry_header) break;
      const unsigned char* data = p + entry + entry_header;
      if (payload >= 4 && memcmp(data, "\x7f" "ELF", 4) == 0) {
        if (ReadElf(data, payload, &out)) out.known = true;
      } else if (kind == 1 && ReadPtx(reinterpret_cast<const char*>(data), payload, &out)) {
        out.known = true;
      } else {
        out.compressed = true;
      }
      entry += entry_header + payload;
    }
    container = end;
  }
  return out;
}

}  // namespace

size_t ImageSize(const void* image) {
  if (!image) return 0;
  const auto* p = static_cast<const unsigned char*>(image);
  uint32_t magic = 0;
  memcpy(&magic, p, sizeof magic);
  if (magic == kWrapperMagic) {
    const void* data = nullptr;
    memcpy(&data, p + 8, sizeof data);
    return ImageSize(data);
  }
  if (magic == kFatbinMagic) {
    uint16_t header = 0;
    uint64_t payload = 0;
    memcpy(&header, p + 6, sizeof header);
    memcpy(&payload, p + 8, sizeof payload);
    return header + payload;
  }
  if (memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {
    uint64_t shoff = 0;
    uint16_t shentsize = 0, shnum = 0;
    memcpy(&shoff, p + 0x28, sizeof shoff);
    memcpy(&shentsize, p + 0x3A, sizeof shentsize);
    memcpy(&shnum, p + 0x3C, sizeof shnum);
    return shoff + static_cast<size_t>(shentsize) * shnum;
  }
  return strlen(static_cast<const char*>(image)) + 1;  // PTX text
}

ImageContents ReadImage(const void* image, size_t size) {
  ImageContents out;
  const auto* p = static_cast<const unsigned char*>(image);
  if (!p || size == 0) return out;
  uint32_t magic = 0;
  if (size >= 4) memcpy(&magic, p, sizeof magic);
  if (magic == kWrapperMagic) {
    const void* data = nullptr;
    memcpy(&data, p + 8, sizeof data);
    return ReadImage(data, ImageSize(data));
  }
  if (magic == kFatbinMagic) return ReadFatbin(p, size);
  // Every embedded ELF (a linked image here is several images back to back),
  // then PTX text.
  for (size_t at = 0; at + 4 <= size; ++at) {
    if (p[at] == 0x7f && memcmp(p + at, "\x7f" "ELF", 4) == 0 && ReadElf(p + at, size - at, &out)) out.known = true;
  }
  if (ReadPtx(reinterpret_cast<const char*>(p), size, &out)) out.known = true;
  for (size_t at = 0; at + 8 <= size; ++at) {  // PTX inside a fat binary (uncompressed)
    if (p[at] == '.' && memcmp(p + at, ".version", 8) == 0 &&
        ReadPtx(reinterpret_cast<const char*>(p + at), size - at, &out)) {
      out.known = true;
      break;
    }
  }
  return out;
}

}  // namespace sim
