#include "collectors/python/safe_read.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace prof::python {
namespace {
std::atomic<bool> g_refused{false};
}  // namespace

bool SafeRead(const SafeSpan* spans, int count) {
  if (count <= 0 || count > 8 || g_refused.load(std::memory_order_relaxed)) return false;
  iovec local[8], remote[8];
  size_t total = 0;
  for (int i = 0; i < count; ++i) {
    local[i] = {spans[i].out, spans[i].bytes};
    remote[i] = {reinterpret_cast<void*>(spans[i].address), spans[i].bytes};
    total += spans[i].bytes;
  }
  ssize_t n = process_vm_readv(getpid(), local, static_cast<unsigned long>(count), remote,
                               static_cast<unsigned long>(count), 0);
  if (n < 0 && (errno == ENOSYS || errno == EPERM)) g_refused.store(true, std::memory_order_relaxed);
  return n == static_cast<ssize_t>(total);
}

bool SafeReadAvailable() { return !g_refused.load(std::memory_order_relaxed); }

}  // namespace prof::python
