// What a device code image holds, read the way the driver would find it:
// ELF cubins (alone or inside a fat binary, uncompressed) give their kernel
// (STT_FUNC) and variable (STT_OBJECT) symbols with sizes and initial
// bytes; PTX text gives its .entry names. A compressed fat binary cannot be
// read here: its contents are then unknown (Known() is false).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace sim {

struct ImageVariable {
  size_t bytes = 0;
  std::vector<unsigned char> init;  // initial value (empty: zeros)
};

struct ImageContents {
  std::set<std::string> functions;
  std::map<std::string, ImageVariable> variables;
  bool known = false;  // some ELF or PTX was read
};

// Size of the image at `image` (ELF, fat binary, fat binary wrapper or
// NUL-terminated PTX), 0 if it is none of those.
size_t ImageSize(const void* image);

// Reads the symbols of `size` bytes of image (also when it is the
// concatenation of several images, as cuLinkComplete makes here).
ImageContents ReadImage(const void* image, size_t size);

}  // namespace sim
