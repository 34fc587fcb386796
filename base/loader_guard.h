// libprof's own calls into the dynamic loader (dl_iterate_phdr, a dlopen
// that maps a library, a dlclose that may unmap one) and fork.
//
// In a fork child glibc re-initialises two of the loader's locks
// (dl_load_lock, dl_load_tls_lock) but not the one dl_iterate_phdr holds
// for its whole walk and dlopen takes to add a library to the list
// (dl_load_write_lock). A fork while another thread is inside such a call
// leaves that lock held in the child for ever: the child's next dlopen of a
// new library (its first CUDA call, which loads the driver; a Python import)
// waits for good. libprof's agent thread walks the loaded objects at times
// the host cannot know of (is CUDA loaded yet, was a library added), so a
// host that is single-threaded itself could fork at that instant.
//
// Each of libprof's loader calls runs inside a LoaderSection; a fork's
// prepare handler waits for sections in progress to end (bounded: a section
// on the forking thread itself, or one whose dlopen runs a constructor that
// waits for the fork, is not waited for past kForkWaitNs) and new ones wait
// until the fork has returned.
#pragma once

#include <cstdint>

namespace prof {

class LoaderSection {
 public:
  LoaderSection();
  ~LoaderSection();
  LoaderSection(const LoaderSection&) = delete;
  LoaderSection& operator=(const LoaderSection&) = delete;
};

// Registers the fork handlers (once). Before any other fork handler of
// libprof: the child's is then the first to run, before libprof restarts
// there.
void InstallLoaderForkGuard();

// The longest a fork waits for sections of other threads.
constexpr uint64_t kLoaderForkWaitNs = 2'000'000'000;

}  // namespace prof
