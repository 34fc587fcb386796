#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (labels unit,
# integration, bench; none needs a GPU: the GPU checks are scripts/gpu-check.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
