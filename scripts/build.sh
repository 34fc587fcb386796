#!/usr/bin/env bash
# Configures and builds libprof into ${BUILD_DIR:-build}. Used by test.sh and demo.sh.
# Arguments go to `cmake --build` (demo.sh builds only its targets: --target ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} -DCUDAToolkit_ROOT="$CUDA_HOME" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "$@"
