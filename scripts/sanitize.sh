#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer build of libprof, the
# simulated CUDA stack, `prof` and the unit tests (in ${SANITIZE_BUILD_DIR:-build-asan}),
# then the unit and integration suites on it. Usage:
#   scripts/sanitize.sh [ctest arguments, e.g. -R agent_]
# The integration tests start uninstrumented programs (Python, nvcc-built
# workloads) that load instrumented libraries (libprof.so, the sim's
# libcudart/libcupti): the ASan runtime must then come first, so every child
# process gets LIBPROF_SANITIZER_PRELOAD (libasan, libubsan) at the front of its
# LD_PRELOAD (test/integration/harness.py). Leak checking is off: libprof keeps
# its runtime for the process's life on purpose (late wrappers, the exit path).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SANITIZE_BUILD_DIR:-build-asan}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -O1 and line tables only: the build takes about half as long as RelWithDebInfo's
# -O2 -g, and reports still name file and line.
opt="-O1 -gline-tables-only"
if ! "${CXX:-g++}" --version | grep -q clang; then opt="-O1 -g1"; fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=None -DCUDAToolkit_ROOT="$cuda_home" -DLIBPROF_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$san $opt" -DCMAKE_CXX_FLAGS="$san $opt" -DCMAKE_EXE_LINKER_FLAGS="$san" \
  -DCMAKE_SHARED_LINKER_FLAGS="$san" -DCMAKE_MODULE_LINKER_FLAGS="$san" "${launcher[@]}"
nice cmake --build "$dir" -j "${JOBS:-$(nproc)}"
cxx=${CXX:-g++}
LIBPROF_SANITIZER_PRELOAD="$("$cxx" -print-file-name=libasan.so):$("$cxx" -print-file-name=libubsan.so)"
export LIBPROF_SANITIZER_PRELOAD
# verify_asan_link_order=0: programs that dlopen libprof (CUDA_INJECTION64_PATH)
# or the sim still work when something else was preloaded first.
# handle_segv/sigbus/sigfpe=0: the fatal-signal tests check what libprof's own
# handler does (one line, no temporary, death by the signal), not ASan's report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0:halt_on_error=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LIBPROF_SANITIZED=1  # timing and memory bounds that sanitizers distort skip themselves
cd "$dir"
ctest -L 'unit|integration' --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
