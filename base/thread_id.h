// The OS thread id (gettid), cached per thread; a fork bumps the generation
// so the child's thread asks again.
#pragma once

#include <cstdint>

namespace prof {

uint32_t ThisThreadId();
void ThreadIdsAfterFork();

// libprof's own threads (writer, agent thread): the CUDA calls they make
// (versions, device properties for a window's metadata) are libprof's, not
// the application's, and never appear in its data. Up to 8 threads.
void MarkLibprofThread();
bool IsLibprofThread(uint32_t tid);

}  // namespace prof
