// Reading memory that may be freed or unmapped under the reader, without
// risk to the process: process_vm_readv(2) on the process itself. The
// kernel copies what is mapped and reports EFAULT for what is not, so a
// read of memory another thread has just released yields stale bytes or a
// failure, never a fault. It is a system call (around a microsecond), so
// only cold or rare paths use it; the caller validates what it read.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prof::python {

struct SafeSpan {
  uintptr_t address;
  void* out;
  size_t bytes;
};

// Reads every span; true only when all were read in full.
bool SafeRead(const SafeSpan* spans, int count);

inline bool SafeRead(uintptr_t address, void* out, size_t bytes) {
  SafeSpan s{address, out, bytes};
  return SafeRead(&s, 1);
}

// False once the kernel has refused process_vm_readv for this process
// (seccomp, an old kernel): callers then do without what it would read.
bool SafeReadAvailable();

}  // namespace prof::python
