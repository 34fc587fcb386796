#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, integration;
# gpu-labelled tests skip themselves without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
