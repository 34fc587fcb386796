#!/usr/bin/env bash
# Device records against the truth, on a quiet or a busy machine: builds
# NVIDIA's cuda-samples from a checkout you give it (nothing is fetched or
# committed), runs each sample on the simulated stack under libprof with
# short windows in both injection modes, optionally beside busy loops, and
# compares every window with the sim's truth log, per kind of device record
# (scripts/samples_truth_check.py; docs/testing.md, "Device records against
# the truth, on a busy machine").
#
#   scripts/samples-truth-check.sh --samples DIR [--build DIR] [--work DIR]
#       [--programs a,b,...] [--busy N] [--runs N] [--step time:5ms]
#       [--schedule WAIT,WARMUP,ACTIVE]
#
#   --samples DIR   a cuda-samples checkout, or a bare git directory of one
#                   (the `fetch` tool's mirror: /work/.mirror/NVIDIA+cuda-samples/repo)
#   --build DIR     libprof's build directory (default ./build): libprof.so
#                   and the sim are copied from it when the script starts,
#                   so a rebuild meanwhile does not change the runs
#   --work DIR      sources, binaries, runs and report.md (default
#                   /tmp/libprof-samples-truth; outside the repository)
#   --programs      comma-separated sample names (default: the 31 below)
#   --busy N        busy loops beside the samples (default 0; 2 = both
#                   cores of a 2-core machine busy)
#   --runs N        runs of each sample in each mode (default 1)
#   --step, --schedule  PROF_STEP (default time:5ms) and PROF_WAIT,
#                   PROF_WARMUP, PROF_ACTIVE (default 0,0,1: 5 ms windows
#                   back to back; 1,1,3 is a window of three steps every five)
#
# Exit status 1 if any window differs from the truth without saying so.
# Needs nvcc (CUDA_HOME, default /usr/local/cuda), git, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

samples="" build="build" work="/tmp/libprof-samples-truth" programs="" busy=0 runs=1 step="time:5ms" schedule="0,0,1"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --programs) programs="$2"; shift 2 ;;
    --busy) busy="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --step) step="$2"; shift 2 ;;
    --schedule) schedule="$2"; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "samples-truth-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -n "$samples" && -e "$samples" ]] || { echo "samples-truth-check.sh: --samples DIR (a cuda-samples checkout or bare mirror) is required" >&2; exit 2; }
[[ $busy =~ ^[0-9]+$ && $runs =~ ^[1-9][0-9]*$ ]] || { echo "samples-truth-check.sh: --busy and --runs take whole numbers (--runs at least 1)" >&2; exit 2; }
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="$CUDA_HOME/bin/nvcc"
[[ -x "$NVCC" ]] || { echo "samples-truth-check.sh: no nvcc at $NVCC (set CUDA_HOME)" >&2; exit 2; }
for need in "$build/test/sim/lib/libcudart.so.13" "$build/agent/libprof.so"; do
  [[ -e "$need" ]] || { echo "samples-truth-check.sh: $need missing: build libprof first (scripts/build.sh)" >&2; exit 2; }
done

# Samples that need only the CUDA runtime (no GL, MPI, NVRTC, cuBLAS, OpenMP,
# several GPUs): 0_Introduction's, and four from other folders with many
# launches, copies and memsets per millisecond (Thrust's sort, unified
# memory, a generator, asynchronous copies into shared memory).
default_programs="vectorAdd,asyncAPI,clock,simpleStreams,simpleCallback,simpleOccupancy,simpleMultiCopy,\
simpleZeroCopy,simpleAttributes,template,simpleTemplates,simpleAtomicIntrinsics,simpleHyperQ,\
simplePitchLinearTexture,simpleCubemapTexture,simpleLayeredTexture,simpleCooperativeGroups,simpleVoteIntrinsics,\
simpleAWBarrier,mergeSort,fp16ScalarProduct,matrixMul,simplePrintf,simpleAssert,systemWideAtomics,simpleTexture,\
simpleSurfaceWrite,radixSortThrust,UnifiedMemoryPerf,quasirandomGenerator,globalToShmemAsyncCopy"
programs="${programs:-$default_programs}"
IFS=',' read -r -a list <<< "$programs"

mkdir -p "$work/src" "$work/bin"
work="$(cd "$work" && pwd)"
src="$work/src"

# Where each sample lives (Samples/<folder>/<name>), from the checkout.
if [[ -d "$samples/Samples" ]]; then
  folders=$(cd "$samples" && ls -d Samples/*/*/)
else
  folders=$(git --git-dir="$samples" ls-tree -d --name-only HEAD Samples/ | while read -r d; do
              git --git-dir="$samples" ls-tree -d --name-only HEAD "$d/"; done)
fi
dir_of() { printf '%s\n' "$folders" | sed 's#/$##' | grep -m1 "/$1\$" || true; }

copy_in() {  # copy_in <path in the checkout> into $src
  [[ -e "$src/$1" ]] && return 0
  if [[ -d "$samples/Samples" ]]; then
    mkdir -p "$src/$(dirname "$1")" && cp -r "$samples/$1" "$src/$1"
  else
    # A mirror may lack large blobs elsewhere; these folders are complete.
    git --git-dir="$samples" archive HEAD "$1" | tar -x -C "$src"
  fi
}

copy_in Common
built=()
for p in "${list[@]}"; do
  rel=$(dir_of "$p")
  if [[ -z "$rel" ]]; then echo "skip $p: not in the checkout"; continue; fi
  copy_in "$rel" || { echo "skip $p: cannot copy $rel"; continue; }
  dir="$src/$rel"
  if [[ ! -x "$work/bin/$p" ]]; then
    # shellcheck disable=SC2046
    if ! nice "$NVCC" -cudart shared -arch=sm_90 -O1 -w -I "$src/Common" -o "$work/bin/$p" \
        $(ls "$dir"/*.cu "$dir"/*.cpp 2>/dev/null) > "$work/bin/$p.build.log" 2>&1; then
      echo "skip $p: does not build (see $work/bin/$p.build.log)"; continue
    fi
  fi
  echo "$dir" > "$work/bin/$p.cwd"  # run in its folder, for its data files
  built+=("$p")
done
[[ ${#built[@]} -gt 0 ]] || { echo "samples-truth-check.sh: no sample built" >&2; exit 2; }

# The libraries the runs use, copied once: another build meanwhile (a shared
# build directory) must not swap them under a run.
snap="$work/libs"
rm -rf "$snap" && mkdir -p "$snap/agent" "$snap/test/sim"
cp "$build/agent/libprof.so" "$snap/agent/"
cp -a "$build/test/sim/lib" "$snap/test/sim/"

python3 scripts/samples_truth_check.py --build "$snap" --bin "$work/bin" --programs "$(IFS=,; echo "${built[*]}")" \
  --work "$work" --busy "$busy" --runs "$runs" --step "$step" --schedule "$schedule"
