#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (labels unit,
# integration, bench, and gpu — which skips itself without an NVIDIA GPU;
# scripts/gpu-check.sh is the fuller side-by-side check on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" "$@")
# Bounded-time fuzzing of the configuration parser (and every other target
# under test/fuzz/): FUZZ_SECONDS per target, 0 to skip.
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
