// Device records lost, by kind, in words: the summary's Data loss line and
// its data-loss finding both say which tables undercount.
#pragma once

#include <string>

#include "model/window.h"

namespace prof {

// "2 kernels, 1 copy" (the kinds with any, in that order); "" when none.
inline std::string LossKindsText(const DeviceLossKinds& k) {
  std::string text;
  auto add = [&text](uint64_t n, const char* one, const char* many) {
    if (n == 0) return;
    text += (text.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(k.kernels, "kernel", "kernels");
  add(k.copies, "copy", "copies");
  add(k.memsets, "memset", "memsets");
  return text;
}

}  // namespace prof
