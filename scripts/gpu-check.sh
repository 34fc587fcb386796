#!/usr/bin/env bash
# scripts/gpu-check.sh: check libprof on a machine with a real NVIDIA GPU.
#
# What it does (issue "CUPTI collection", item 8):
#   1. builds libprof, the prof command and the nvcc workloads;
#   2. runs the nvcc workloads train_loop and graph_loop (CUDA graphs, with a
#      capture inside the recorded steps) under libprof (manual steps) and
#      validates their traces;
#   3. runs one small PyTorch training loop four ways with the same schedule
#      (wait/warmup/active): no profiler, under libprof (LD_PRELOAD, manual
#      steps through prof_step()), under torch.profiler;
#   4. prints side by side: kernels per active step (names and counts), GPU
#      time per step, records dropped, and step times with no profiler,
#      libprof waiting, libprof recording, torch.profiler recording, and
#      after each profiler's schedule has finished.
#
# On a machine without a GPU it says so and exits 0, having run nothing.
#
# Usage: scripts/gpu-check.sh [--build-dir DIR] [--out DIR] [--wait N]
#                             [--warmup N] [--active N] [--tail N]
#                             [--no-build] [--force]
# --no-build uses an existing build; --force runs without a GPU (to try the
# script itself on the simulated stack: LD_LIBRARY_PATH=<build>/test/sim/lib).
# Exit: 0 when everything ran; 1 when a run failed or a trace is invalid.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-gpu"
OUT=""
WAIT=20
WARMUP=2
ACTIVE=5
TAIL=20
NO_BUILD=0
FORCE=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --wait) WAIT="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --active) ACTIVE="$2"; shift 2 ;;
    --tail) TAIL="$2"; shift 2 ;;
    --no-build) NO_BUILD=1; shift ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# ---- 0. Is there a GPU at all? ----
gpu_names() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -i '^GPU' || true
  fi
}
GPUS="$(gpu_names)"
if [[ -z "$GPUS" && "$FORCE" == 1 ]]; then
  GPUS="(none: --force)"
fi
if [[ -z "$GPUS" ]]; then
  if [[ -e /dev/nvidia0 ]]; then
    GPUS="(/dev/nvidia0 present, nvidia-smi unavailable)"
  else
    echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi lists none, no /dev/nvidia0): nothing was run."
    echo "gpu-check: run this script on a machine with a GPU and a driver; see docs/gpu-validation.md."
    exit 0
  fi
fi
echo "gpu-check: GPU(s): $GPUS"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null

[[ -n "$OUT" ]] || OUT="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
mkdir -p "$OUT"
echo "gpu-check: outputs in $OUT"
FAILED=0

# Trace reading shared by the workload and torch.profiler sections.
cat >"$OUT/compare.py" <<'PY'
"""Side-by-side comparison of libprof's and torch.profiler's traces (both
in Kineto's schema) and of the step times of the four runs."""
import collections, glob, gzip, json, os, statistics, sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)

def per_step(trace):
    """{step: Counter(kernel name)} and {step: GPU ns}, a kernel belonging to
    the ProfilerStep#N span holding the runtime call that launched it."""
    ev = trace.get("traceEvents", [])
    steps = sorted((e["ts"], e["ts"] + e.get("dur", 0), int(e["name"].split("#")[1]))
                   for e in ev if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X")
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in ev
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    names, gpu_us = collections.defaultdict(collections.Counter), collections.Counter()
    for e in ev:
        if e.get("cat") != "kernel":
            continue
        ts = launch_ts.get(e.get("args", {}).get("correlation"))
        for lo, hi, n in steps:
            if ts is not None and lo <= ts < hi:
                names[n][e["name"]] += 1
                gpu_us[n] += e.get("dur", 0)
                break
    return names, gpu_us


def workload(path):
    """Kernels and GPU time per recorded step of one libprof trace."""
    trace = load(path)
    names, gpu_us = per_step(trace)
    meta = trace.get("libprof", {})
    print(f"  CUPTI mode: {meta.get('cupti_mode')}; losses: {meta.get('losses')}")
    for n in sorted(names):
        print(f"  step {n}: {sum(names[n].values())} kernels, GPU {gpu_us[n] / 1e3:.3f} ms, "
              + ", ".join(f"{c}x {k[:40]}" for k, c in names[n].most_common(4)))


def compare_torch(out, wait, warmup, active):
    lib_files = sorted(glob.glob(os.path.join(out, "libprof_torch", "*.pt.trace.json*")))
    tp_file = os.path.join(out, "torch_profiler.pt.trace.json")
    if not lib_files or not os.path.exists(tp_file):
        print(f"gpu-check: missing traces (libprof: {lib_files}, torch.profiler: {os.path.exists(tp_file)})")
        sys.exit(1)
    lib = load(lib_files[0])
    tp = load(tp_file)
    lib_names, lib_gpu = per_step(lib)
    tp_names, tp_gpu = per_step(tp)
    meta = lib.get("libprof", {})
    print(f"\nlibprof CUPTI mode: {meta.get('cupti_mode')}  losses: {meta.get('losses')}")
    print("torch.profiler drops: not reported by Kineto")

    print(f"\n{'step':>5} | {'libprof kernels':>15} {'GPU ms':>8} | {'torch.prof kernels':>18} {'GPU ms':>8}")
    for n in sorted(set(lib_names) | set(tp_names)):
        print(f"{n:>5} | {sum(lib_names[n].values()):>15} {lib_gpu[n] / 1e3:>8.3f} | "
              f"{sum(tp_names[n].values()):>18} {tp_gpu[n] / 1e3:>8.3f}")

    first = min(set(lib_names) & set(tp_names), default=None)
    if first is not None:
        print(f"\nkernels of step {first} (count libprof / torch.profiler):")
        for name in sorted(set(lib_names[first]) | set(tp_names[first]), key=lambda k: -tp_names[first][k]):
            mark = "" if lib_names[first][name] == tp_names[first][name] else "   <-- differs"
            print(f"  {lib_names[first][name]:>4} / {tp_names[first][name]:<4} {name[:100]}{mark}")

    def times(name):
        with open(os.path.join(out, name)) as f:
            return [json.loads(l)["ms"] for l in f if l.startswith("{")]

    def med(xs):
        return f"{statistics.median(xs):8.3f}" if xs else "     n/a"

    rec_lo, rec_hi = wait + warmup, wait + warmup + active
    none, libp, torp = times("torch_none.jsonl"), times("torch_libprof.jsonl"), times("torch_torchprof.jsonl")
    skip = 3  # CUDA/cuBLAS start-up steps are not steady state
    print("\nmedian step time, ms:")
    print(f"  no profiler                     {med(none[skip:])}")
    print(f"  libprof waiting                 {med(libp[skip:wait])}")
    print(f"  libprof recording               {med(libp[rec_lo:rec_hi])}")
    print(f"  libprof after schedule finished {med(libp[rec_hi + 1:])}")
    print(f"  torch.profiler waiting          {med(torp[skip:wait])}")
    print(f"  torch.profiler recording        {med(torp[rec_lo:rec_hi])}")
    print(f"  torch.profiler after finished   {med(torp[rec_hi + 1:])}")


if __name__ == "__main__":
    if sys.argv[1] == "workload":
        for p in sys.argv[2:]:
            workload(p)
    else:
        compare_torch(sys.argv[2], *map(int, sys.argv[3:6]))
PY


# ---- 1. Build ----
echo "== build ($BUILD)"
if [[ "$NO_BUILD" == 1 ]]; then
  echo "gpu-check: --no-build: using $BUILD as it is"
elif ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/cmake.log" 2>&1 ||
   ! cmake --build "$BUILD" -j "$(nproc)" >>"$OUT/cmake.log" 2>&1; then
  echo "gpu-check: build failed, see $OUT/cmake.log" >&2
  tail -20 "$OUT/cmake.log" >&2
  exit 1
fi
LIBPROF="$BUILD/agent/libprof.so"
PROF="$BUILD/tools/prof/prof"
WORKLOADS="$BUILD/test/workloads"

# ---- 2. nvcc workloads under libprof ----
run_workload() {  # name, then the workload's arguments
  local name="$1"; shift
  local dir="$OUT/$name"
  mkdir -p "$dir"
  echo "== $name under libprof: $*"
  "$PROF" run --lib "$LIBPROF" --step manual --wait 2 --warmup 1 --active 3 --out "$dir" -- "$WORKLOADS/$@" \
      >"$dir/stdout.txt" 2>"$dir/stderr.txt"
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "gpu-check: $name failed (exit $rc), see $dir/stderr.txt"; FAILED=1; return
  fi
  local traces=("$dir"/*.pt.trace.json*)
  if [[ ! -e "${traces[0]}" ]]; then
    echo "gpu-check: $name wrote no trace"; FAILED=1; return
  fi
  "$PROF" validate "${traces[@]}" || FAILED=1
  python3 "$OUT/compare.py" workload "${traces[@]}" || FAILED=1
  grep -h "CUPTI\|warning" "$dir/stderr.txt" | head -5
}
if [[ -x "$WORKLOADS/train_loop" ]]; then
  run_workload train_loop train_loop --steps 10 --manual-steps
  run_workload train_loop_tiny train_loop --steps 10 --manual-steps --tiny
  # CUDA graphs, with a capture inside the recorded steps: expect
  # device_records_missing 0 (CUPTI's GRAPHNODE_CREATED marks captured launches).
  run_workload graph_loop graph_loop --steps 10 --kernels 4 --recapture-at 4 --manual-steps
else
  echo "gpu-check: $WORKLOADS/train_loop not built (nvcc missing?): skipping the nvcc workloads"
fi

# ---- 3. and 4. PyTorch: no profiler, libprof, torch.profiler ----
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu-check: PyTorch with CUDA is not importable: skipping the torch.profiler comparison"
  exit "$FAILED"
fi

cat >"$OUT/loop.py" <<'PY'
"""A small training loop: MLP + AdamW, synchronised at each step's end so
step times are GPU-inclusive. --mode none | libprof | torch."""
import argparse, ctypes, json, time
import torch

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--steps", type=int, required=True)
p.add_argument("--wait", type=int, required=True)
p.add_argument("--warmup", type=int, required=True)
p.add_argument("--active", type=int, required=True)
p.add_argument("--trace", default="")
a = p.parse_args()

torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(2048, 2048), torch.nn.GELU())]).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(256, 2048, device=dev)
y = torch.randn(256, 2048, device=dev)

def train_step():
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()

step_marker = lambda: None
prof = None
if a.mode == "libprof":
    step_marker = ctypes.CDLL(None).prof_step  # exported by the preloaded libprof.so
elif a.mode == "torch":
    from torch.profiler import ProfilerActivity, profile, schedule
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=a.wait, warmup=a.warmup, active=a.active, repeat=1),
                   on_trace_ready=lambda p: p.export_chrome_trace(a.trace))
    prof.__enter__()
    step_marker = prof.step

for i in range(a.steps):
    t0 = time.perf_counter()
    train_step()
    step_marker()
    print(json.dumps({"step": i, "ms": (time.perf_counter() - t0) * 1e3}), flush=True)
if prof is not None:
    prof.__exit__(None, None, None)
PY

STEPS=$((WAIT + WARMUP + ACTIVE + TAIL))
LOOP_ARGS=(--steps "$STEPS" --wait "$WAIT" --warmup "$WARMUP" --active "$ACTIVE")
echo "== PyTorch loop, $STEPS steps, schedule wait=$WAIT warmup=$WARMUP active=$ACTIVE repeat=1"
python3 "$OUT/loop.py" --mode none "${LOOP_ARGS[@]}" >"$OUT/torch_none.jsonl" 2>"$OUT/torch_none.err" || FAILED=1
mkdir -p "$OUT/libprof_torch"
LD_PRELOAD="$LIBPROF" PROF_STEP=manual PROF_SKIP_FIRST=0 PROF_WAIT="$WAIT" PROF_WARMUP="$WARMUP" \
  PROF_ACTIVE="$ACTIVE" PROF_REPEAT=1 PROF_OUTPUT_DIR="$OUT/libprof_torch" \
  python3 "$OUT/loop.py" --mode libprof "${LOOP_ARGS[@]}" >"$OUT/torch_libprof.jsonl" 2>"$OUT/torch_libprof.err" || FAILED=1
python3 "$OUT/loop.py" --mode torch --trace "$OUT/torch_profiler.pt.trace.json" "${LOOP_ARGS[@]}" \
  >"$OUT/torch_torchprof.jsonl" 2>"$OUT/torch_torchprof.err" || FAILED=1
grep -h "libprof" "$OUT/torch_libprof.err" | head -5

python3 "$OUT/compare.py" torch "$OUT" "$WAIT" "$WARMUP" "$ACTIVE" || FAILED=1

exit "$FAILED"
