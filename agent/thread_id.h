// The OS thread id (gettid), cached per thread; a fork bumps the generation
// so the child's thread asks again.
#pragma once

#include <cstdint>

namespace prof {

uint32_t ThisThreadId();
void ThreadIdsAfterFork();

}  // namespace prof
