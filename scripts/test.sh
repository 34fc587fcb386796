#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (labels unit,
# integration, bench, and gpu — which skips itself without an NVIDIA GPU;
# scripts/gpu-check.sh is the fuller side-by-side check on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" "$@")
# The short-window check again with every core busy beside it (one busy
# loop per core), LOAD_TRIALS times (default 3, 0 skips; skipped when
# CTest arguments choose a subset): a window edge that races libprof's own
# threads on a loaded machine fails here.
load_trials=${LOAD_TRIALS:-3}
if [ "$load_trials" != 0 ] && [ "$#" -eq 0 ]; then
  kept=$(mktemp -d /tmp/libprof-load-trials-XXXXXX)
  if ! scripts/load-trials.sh -n "$load_trials" -o "$kept" agent_short_windows; then
    cat "$kept"/*.log
    exit 1
  fi
  rm -rf "$kept"
fi
# Bounded-time fuzzing of the configuration parser (and every other target
# under test/fuzz/): FUZZ_SECONDS per target, 0 to skip.
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
