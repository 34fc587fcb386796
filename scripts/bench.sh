#!/usr/bin/env bash
# Builds libprof in Release into ${BENCH_BUILD_DIR:-build-bench} and runs every
# benchmark (test/bench/run_bench.py): prints one table with each figure, its
# target and whether it is met. Figures are ratios/differences against a
# baseline measured in the same run, medians of interleaved repetitions.
#   scripts/bench.sh                 full run (a few minutes)
#   scripts/bench.sh --smoke         tiny sizes, no judging (what CI runs)
#   scripts/bench.sh --json out.json also keep the figures
#   scripts/bench.sh --callgrind     also count instructions per step of the
#                                    host-limited loop under valgrind (exact on
#                                    a loaded machine, unlike CPU times)
#   scripts/bench.sh --only "host loop,callgrind"   just the host-loop figures
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
build_dir=${BENCH_BUILD_DIR:-build-bench}
jobs=${BENCH_JOBS:-$(nproc)}
scripts/setup-deps.sh
if [[ " $* " == *" --callgrind "* || "$*" == *callgrind* ]] && ! command -v valgrind >/dev/null; then
  echo "bench: installing valgrind for --callgrind"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq valgrind >/dev/null
fi
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DLIBPROF_BUILD_BENCH=ON -DCUDAToolkit_ROOT="$CUDA_HOME" >/dev/null
# What the benchmarks run: the agent, the simulated stack and the benchmarks.
log="$build_dir/bench-build.log"
if ! cmake --build "$build_dir" -j "$jobs" --target prof_agent sim_cuda sim_cudart sim_cupti bench_all ctypes_workload >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "bench: build failed (full log: $log)" >&2
  exit 1
fi
echo "bench: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(date -u +%Y-%m-%dT%H:%MZ)"
exec python3 -B test/bench/run_bench.py --build-dir "$build_dir" "$@"
