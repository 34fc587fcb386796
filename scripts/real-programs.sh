#!/usr/bin/env bash
# Public CUDA programs written by others (NVIDIA's cuda-samples), built with
# `nvcc -cudart shared`, run on the simulated stack bare, under LD_PRELOAD
# and under CUDA_INJECTION64_PATH, with one window over the whole run and
# with many short windows; every window is compared with the sim's truth log
# (docs/real-programs.md says what is compared and what the last run gave).
# The programs are fetched when the script runs and never committed.
#
#   scripts/real-programs.sh [--samples DIR] [--url URL] [--build DIR]
#                            [--work DIR] [--programs a,b,...]
#
#   --samples DIR   a cuda-samples checkout, or a bare git directory of one
#                   (such as a mirror): Samples/ and Common/ are taken from it
#   --url URL       otherwise clone this (default
#                   https://github.com/NVIDIA/cuda-samples, depth 1)
#   --build DIR     libprof's build directory (default ./build): the sim,
#                   libprof.so and the prof tool come from it
#   --work DIR      where sources, binaries, runs and the report go
#                   (default ./real-programs)
#   --programs      comma-separated sample names (default: the list below)
#
# Needs nvcc (CUDA_HOME, default /usr/local/cuda), git, python3.
set -euo pipefail
cd "$(dirname "$0")/.."

samples="" url="https://github.com/NVIDIA/cuda-samples" build="build" work="real-programs" programs=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --url) url="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --programs) programs="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "real-programs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
NVCC="$CUDA_HOME/bin/nvcc"
for need in "$build/test/sim/lib/libcudart.so.13" "$build/agent/libprof.so"; do
  [[ -e "$need" ]] || { echo "real-programs.sh: $need missing: build libprof first (scripts/build.sh)" >&2; exit 2; }
done
[[ -x "$NVCC" ]] || { echo "real-programs.sh: no nvcc at $NVCC (set CUDA_HOME)" >&2; exit 2; }

# Single-directory samples of cuda-samples' 0_Introduction that need no
# library beyond the runtime (no GL, MPI, NVRTC, cuBLAS, OpenMP, multi-GPU).
default_programs="vectorAdd,asyncAPI,clock,simpleStreams,simpleCallback,simpleOccupancy,simpleMultiCopy,\
simpleZeroCopy,simpleAttributes,template,simpleTemplates,simpleAtomicIntrinsics,simpleHyperQ,\
simplePitchLinearTexture,simpleCubemapTexture,simpleLayeredTexture,simpleCooperativeGroups,simpleVoteIntrinsics,\
simpleAWBarrier,mergeSort,fp16ScalarProduct,matrixMul,simplePrintf,simpleAssert,systemWideAtomics,simpleTexture,\
simpleSurfaceWrite"
programs="${programs:-$default_programs}"

mkdir -p "$work"
work="$(cd "$work" && pwd)"
src="$work/src"
if [[ ! -d "$src/Samples" ]]; then
  rm -rf "$src" && mkdir -p "$src"
  if [[ -n "$samples" && -d "$samples/Samples" ]]; then
    cp -r "$samples/Samples" "$samples/Common" "$src/"
  elif [[ -n "$samples" ]]; then  # a bare repository (no work tree)
    # A mirror may lack large blobs outside these folders: git then complains
    # but still writes what exists, which is all that is needed here.
    git --git-dir="$samples" archive HEAD Samples/0_Introduction Common 2>/dev/null | tar -x -C "$src" || true
    [[ -d "$src/Samples/0_Introduction" ]] || { echo "real-programs.sh: no Samples/0_Introduction in $samples" >&2; exit 2; }
  else
    git clone --depth 1 "$url" "$work/clone"
    cp -r "$work/clone/Samples" "$work/clone/Common" "$src/"
  fi
fi

mkdir -p "$work/bin"
IFS=',' read -r -a list <<< "$programs"
built=()
for p in "${list[@]}"; do
  dir="$src/Samples/0_Introduction/$p"
  if [[ ! -d "$dir" ]]; then echo "skip $p: not in the checkout"; continue; fi
  if [[ ! -x "$work/bin/$p" ]]; then
    # shellcheck disable=SC2046
    if ! nice "$NVCC" -cudart shared -arch=sm_90 -O1 -w -I "$src/Common" -o "$work/bin/$p" \
        $(ls "$dir"/*.cu "$dir"/*.cpp 2>/dev/null) > "$work/bin/$p.build.log" 2>&1; then
      echo "skip $p: does not build (see $work/bin/$p.build.log)"; continue
    fi
  fi
  built+=("$p")
done

python3 scripts/real_programs.py --build "$build" --work "$work" --programs "$(IFS=,; echo "${built[*]}")"
