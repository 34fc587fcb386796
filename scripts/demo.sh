#!/usr/bin/env bash
# The main job in one command: installs what is missing, builds libprof, runs
# a training-like workload under the agent (on the real GPU when there is
# one, otherwise on the simulated CUDA stack in test/sim) and says where the
# trace, summary and report page are.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup-deps.sh
build=${BUILD_DIR:-build}
[[ $build = /* ]] || build=$root/$build

# Only what the demo runs: the agent, prof, the simulated stack, one workload
# (scripts/test.sh builds the rest). Progress is shown as it goes; the full
# compiler output is kept in a log, and its end shown if the build fails.
targets=(prof_agent prof_tool sim_cuda sim_cudart sim_cupti train_loop)
mkdir -p "$build"
log=$build/demo-build.log
if [ -e "$build/tools/prof/prof" ]; then
  echo "demo: building what changed since the last build (seconds)"
else
  # About 20 core-minutes of compiling (measured on 2 cores: about 10 minutes).
  cores=$(nproc)
  echo "demo: first build of libprof, prof and the simulated CUDA stack: about $(( cores >= 10 ? 2 : 20 / cores )) minutes on $cores cores (later runs take seconds)"
fi
started=$SECONDS
# Prints "demo: build N%" at each tenth from cmake's "[ N%]" lines.
progress() {
  local shown=-10 line pct
  while IFS= read -r line; do
    [[ $line =~ ^\[\ *([0-9]+)%\] ]] || continue
    pct=${BASH_REMATCH[1]}
    if (( pct >= shown + 10 )); then
      shown=$(( pct - pct % 10 ))
      echo "demo: build ${pct}% ($(( SECONDS - started )) s)"
    fi
  done
}
if ! scripts/build.sh --target "${targets[@]}" 2>&1 | tee "$log" | progress; then
  tail -40 "$log" >&2
  echo "demo: build failed (full log: $log)" >&2
  exit 1
fi
echo "demo: built in $(( SECONDS - started )) s"

# The demo's own directory, emptied first. A directory named by PROF_OUTPUT_DIR
# (perhaps the user's real traces) is written into but never emptied.
if [ -n "${PROF_OUTPUT_DIR:-}" ]; then
  out=$PROF_OUTPUT_DIR
else
  out=$root/prof-traces/demo
  rm -rf "$out"
fi
mkdir -p "$out"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  where="the real GPU ($(nvidia-smi -L | head -1))"
  stack_env=()
else
  where="the simulated CUDA stack (no GPU found)"
  stack_env=(LD_LIBRARY_PATH="$build/test/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
echo "demo: profiling test/workloads/train_loop on $where"

# Each cudaDeviceSynchronize ends a step: skip 5 steps, warm up 2, record 5.
env "${stack_env[@]}" "$build/tools/prof/prof" run --step sync --wait 5 --warmup 2 --active 5 \
  --out "$out" -- "$build/test/workloads/train_loop" --steps 20 >/dev/null

echo "demo: files written to $out:"
ls -l "$out"
summary=$(ls -t "$out"/*.summary.txt 2>/dev/null | head -1)  # this run's, if the directory had others
if [ -z "$summary" ]; then
  echo "demo: no window was written; see the agent's log above" >&2
  exit 1
fi
echo
echo "demo: findings from $(basename "$summary"):"
sed -n '/^== Findings ==/,/^== CUDA GPU Kernel/p' "$summary" | sed '$d'
echo
echo "demo: open the .pt.trace.json in https://ui.perfetto.dev or chrome://tracing; 'prof summary <trace>' recomputes the summary."
report=${summary%.summary.txt}.report.html
if [ ! -f "$report" ]; then
  echo "demo: no report page next to $(basename "$summary"); see the agent's log above" >&2
  exit 1
fi
echo "demo: report written: $report (open it in a browser; 'prof report <trace>' builds one from any trace)"
