#!/usr/bin/env bash
# Bounded-time fuzzing with libFuzzer (clang from Debian, installed by
# setup-deps.sh), AddressSanitizer and UndefinedBehaviorSanitizer. Each target
# lives in test/fuzz/<name>/ (fuzz_<name>.cpp, the sources it needs listed in
# sources.txt, seed corpus in corpus/). Usage:
#   scripts/fuzz.sh [seconds per target, default 20] [target ...]
# Targets may include files the CMake build generates (the CUPTI callback
# names): build first (scripts/build.sh; BUILD_DIR, default build).
# New inputs found go to ${FUZZ_DIR:-build-fuzz}/<name>/corpus (the committed
# corpus is read, never written); a crash leaves its input there and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
out=${FUZZ_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-clang++}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in test/fuzz/*/; do targets+=("$(basename "$d")"); done
fi
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -I"${BUILD_DIR:-build}/collectors/cupti" -isystem "$cuda_home/include" -isystem "$cuda_home/extras/CUPTI/include"
       -DSPDLOG_HEADER_ONLY -DSPDLOG_FMT_EXTERNAL -DFMT_HEADER_ONLY -DAGENT_VERSION_STRING='"fuzz"')
status=0
for t in "${targets[@]}"; do
  dir=test/fuzz/$t
  if [ ! -f "$dir/fuzz_$t.cpp" ]; then echo "fuzz: skipping $t (no $dir/fuzz_$t.cpp)" >&2; continue; fi
  mkdir -p "$out/$t/corpus" "$out/$t/artifacts"
  sources=()
  [ -f "$dir/sources.txt" ] && mapfile -t sources < <(grep -v '^#' "$dir/sources.txt" | grep .)
  echo "fuzz: building $t"
  nice "$cxx" "${flags[@]}" "$dir/fuzz_$t.cpp" "${sources[@]}" -o "$out/$t/fuzz_$t" -lpthread -lz
  echo "fuzz: running $t for ${seconds}s"
  if ! "$out/$t/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$out/$t/artifacts/" "$out/$t/corpus" "$dir/corpus" 2>"$out/$t/log.txt"; then
    echo "fuzz: $t FAILED (input in $out/$t/artifacts/; log $out/$t/log.txt)" >&2
    tail -40 "$out/$t/log.txt" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "$out/$t/log.txt" | tail -2
  fi
done
exit $status
