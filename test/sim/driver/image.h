// What a device code image holds, read the way the driver would find it:
// ELF cubins (alone, or entries of a fat binary, walked entry by entry)
// give their kernel (STT_FUNC) and variable (STT_OBJECT) symbols with sizes
// and initial bytes; PTX text gives its .entry names. A compressed entry
// cannot be read here: a fat binary of compressed entries only (PyTorch's
// libraries register such images) has unknown contents (known is false),
// and any name may be looked up in it.
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
  bool known = false;       // some ELF or PTX was read
  bool compressed = false;  // a fat binary entry could not be read (compressed)
};

// Size of the image at `image` (ELF, fat binary, fat binary wrapper or
// NUL-terminated PTX), 0 if it is none of those.
size_t ImageSize(const void* image);

// Reads the symbols of `size` bytes of image (also when it is the
// concatenation of several images, as cuLinkComplete makes here).
ImageContents ReadImage(const void* image, size_t size);

}  // namespace sim
