#!/usr/bin/env bash
# Runs tests many times on a busy machine and reports each one's failure
# rate: a test that fails only under load hides a race.
#
#   scripts/load-trials.sh [-n TRIALS] [-b BUSY] [-o DIR] [TEST...]
#
#   -n TRIALS  runs of each test (default 50)
#   -b BUSY    busy loops started beside the tests, one process each
#              (default: one per core, nproc)
#   -o DIR     where the output of failed runs is kept
#              (default: a new directory under /tmp)
#   TEST       CTest names (default: the short-window check and the
#              suite's load-sensitive tests, below)
#
# The busy loops run at the script's own niceness, so they compete with the
# tests as equals: to keep a shared machine usable, lower the whole run
# (`nice -n 10 scripts/load-trials.sh`) rather than the loops alone, which
# would leave the tests an idle machine. The load is reported with the
# figures (cores, busy loops, niceness, load average before and after):
# failure rates mean nothing without it. Needs a build (scripts/build.sh;
# BUILD_DIR as there).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath "${BUILD_DIR:-build}")
trials=50
busy=$(nproc)
keep=""
while getopts "n:b:o:h" opt; do
  case $opt in
    n) trials=$OPTARG ;;
    b) busy=$OPTARG ;;
    o) keep=$OPTARG ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(agent_short_windows agent_runtime_records agent_signals agent_auto_step agent_windows
         agent_injection_cuda12 agent_step_sources)
fi
if ! [[ $trials =~ ^[0-9]+$ && $busy =~ ^[0-9]+$ ]] || [ "$trials" -lt 1 ]; then
  echo "load-trials: -n and -b take whole numbers (-n at least 1)" >&2
  exit 2
fi
[ -d "$build_dir" ] || { echo "load-trials: no build at $build_dir (run scripts/build.sh)" >&2; exit 2; }
keep=${keep:-$(mktemp -d /tmp/libprof-load-trials-XXXXXX)}
mkdir -p "$keep"

pids=()
stop_busy() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_busy EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < busy; i++)); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load-trials: ${#tests[@]} tests x $trials trials; $(nproc) cores, $busy busy loops beside them," \
     "niceness $(nice); load average $load_before; failed runs' output in $keep"
declare -A failed seconds
start_all=$SECONDS
for ((t = 1; t <= trials; t++)); do
  for name in "${tests[@]}"; do
    log="$keep/$name.$t.log"
    began=$SECONDS
    if (cd "$build_dir" && ctest -R "^${name}\$" --output-on-failure --timeout 900) >"$log" 2>&1 &&
       grep -q "100% tests passed" "$log"; then
      rm -f "$log"
    else
      failed[$name]=$((${failed[$name]:-0} + 1))
      echo "  trial $t: $name FAILED ($log)"
    fi
    seconds[$name]=$((${seconds[$name]:-0} + SECONDS - began))
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
stop_busy

echo
printf '%-26s %8s %8s %8s\n' test failed trials "mean s"
total=0
for name in "${tests[@]}"; do
  f=${failed[$name]:-0}
  total=$((total + f))
  printf '%-26s %8d %8d %8.1f\n' "$name" "$f" "$trials" "$(awk -v s="${seconds[$name]}" -v n="$trials" 'BEGIN { print s / n }')"
done
echo "load average before $load_before, after $load_after; $(nproc) cores, $busy busy loops;" \
     "$((SECONDS - start_all)) s in all"
[ "$total" -eq 0 ]
