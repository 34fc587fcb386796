#!/usr/bin/env bash
# scripts/gpu-check.sh: check libprof on a machine with a real NVIDIA GPU,
# the way a user runs it.
#
# What it does:
#   1. builds libprof, the prof command and the nvcc workloads (or, with
#      --no-build, uses a build made elsewhere: see "GPU machine" below);
#   2. runs the nvcc workloads train_loop and graph_loop under libprof and
#      validates their traces;
#   3. runs one unmodified PyTorch training script (no profiler code in it)
#      five ways: alone; under libprof with no PROF_* variable set (auto
#      steps, Python stacks, the default schedule); under torch.profiler,
#      started by a wrapper that steps it from the optimizer's step hook with
#      the same schedule; and both at once, libprof first (torch.profiler
#      started while libprof is attached) and torch.profiler first (its
#      window open before libprof's begins);
#   4. prints, per recorded iteration, kernels and GPU time from each
#      profiler, libprof's call-site table (the backward's kernels on the
#      loss.backward() line, "via" the Python thread), the cost per step of
#      each profiler, what differs, and for the two-at-once runs whether each
#      profiler still recorded, or the line in which one refused.
#
# Without PyTorch (or with --force on a machine without a GPU) step 3 runs
# on the simulated stack instead: an unmodified ctypes training script
# (forward launches, a backward whose kernels a pool of native threads
# launches while Python waits, .item()), under libprof with default
# settings; the torch.profiler runs are skipped and it says so.
#
# On a machine without a GPU and without --force it says so and exits 0.
#
# GPU machine: it may reach no package registry (spdlog, fmt, Catch2 are not
# there). Build here (scripts/build.sh, or BUILD_DIR=DIR scripts/build.sh),
# carry the build directory there (libprof.so is self-contained: it links
# only libc, libm and zlib; the prof command also the C++ runtime), and run
#     scripts/gpu-check.sh --no-build --build-dir DIR [--quick]
# Under 8 minutes on one H100 or H200; --quick (fewer steps, train_loop only
# among the nvcc workloads) under 4.
#
# Usage: scripts/gpu-check.sh [--build-dir DIR] [--out DIR] [--no-build]
#                             [--quick] [--force]
# --force runs without a GPU, on the simulated stack (test/sim, in the build).
# Exit: 0 when everything ran; 1 when a run failed or a trace is invalid.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-gpu"
OUT=""
NO_BUILD=0
FORCE=0
QUICK=0

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --no-build) NO_BUILD=1; shift ;;
    --force) FORCE=1; shift ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
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
BUILD="$(cd "$BUILD" && pwd)"  # absolute: runs below change directory
# Without a GPU (--force) everything runs on the simulated stack of the build.
if [[ "$FORCE" == 1 && ! -e /dev/nvidia0 ]]; then
  export LD_LIBRARY_PATH="$BUILD/test/sim/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "gpu-check: --force without a GPU: the simulated stack ($BUILD/test/sim/lib) stands in for the GPU"
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
  "$PROF" summary "${traces[0]}" 2>/dev/null | grep -A6 "^== Steps" | head -8
  grep -h "CUPTI\|warning" "$dir/stderr.txt" | head -5
}
if [[ -x "$WORKLOADS/train_loop" ]]; then
  run_workload train_loop train_loop --steps 10 --manual-steps
  [[ "$QUICK" == 1 ]] || run_workload train_loop_tiny train_loop --steps 10 --manual-steps --tiny
  # CUDA graphs, with a capture inside the recorded steps: expect
  # device_records_missing 0 (CUPTI's GRAPHNODE_CREATED marks captured launches).
  [[ "$QUICK" == 1 ]] || run_workload graph_loop graph_loop --steps 10 --kernels 4 --recapture-at 4 --manual-steps
else
  echo "gpu-check: $WORKLOADS/train_loop not built (nvcc missing?): skipping the nvcc workloads"
fi

# ---- 3. and 4. An unmodified training script: alone, libprof, torch.profiler, both ----
# libprof's default schedule (PROF_WAIT 30, PROF_WARMUP 2, PROF_ACTIVE 5, no
# PROF_* set) records steps 30-36 of the loop auto-detection finds; the
# script runs past them. torch.profiler gets the same schedule.
STEPS=80
[[ "$QUICK" == 1 ]] && STEPS=60
WAIT=30; WARMUP=2; ACTIVE=5

MODE=torch
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  if [[ "$FORCE" == 1 || ! -e /dev/nvidia0 ]]; then
    MODE=sim
    echo "gpu-check: PyTorch with CUDA is not importable: the training script is a ctypes one on the simulated stack; no torch.profiler runs"
  else
    echo "gpu-check: PyTorch with CUDA is not importable: skipping the training-script comparison"
    exit "$FAILED"
  fi
fi

if [[ "$MODE" == torch ]]; then
cat >"$OUT/train.py" <<'PY'
"""An ordinary PyTorch training script: no profiler code. An MLP, AdamW,
mixed forward/backward, the loss read back every step (as logging does)."""
import sys, time
import torch

steps = int(sys.argv[1])
torch.manual_seed(0)
dev = torch.device("cuda")
model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(2048, 2048), torch.nn.GELU())]).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(256, 2048, device=dev)
y = torch.randn(256, 2048, device=dev)
for i in range(steps):
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    value = loss.item()
    print(f"step {i} loss {value:.5f} ms {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
PY
cat >"$OUT/with_torch_profiler.py" <<'PY'
"""Runs a training script unchanged under torch.profiler: the profiler's
schedule is stepped from a global optimizer step hook, so the script needs
no profiler code. Usage: with_torch_profiler.py TRACE WAIT WARMUP ACTIVE SCRIPT ARGS..."""
import runpy, sys
import torch
from torch.profiler import ProfilerActivity, profile, schedule

trace, wait, warmup, active = sys.argv[1], *map(int, sys.argv[2:5])
prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
               schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
               on_trace_ready=lambda p: p.export_chrome_trace(trace))
prof.start()
torch.optim.optimizer.register_optimizer_step_post_hook(lambda *a, **k: prof.step())
sys.argv = sys.argv[5:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    prof.stop()
PY
RUN=(python3 "$OUT/train.py" "$STEPS")
TP=(python3 "$OUT/with_torch_profiler.py")
else
cat >"$OUT/train.py" <<'PY'
"""An ordinary training loop over a CUDA library loaded with ctypes (the
simulated stack): no profiler code. Forward launches, a backward whose
kernels a pool of native threads launches while this thread waits in the C
call (as PyTorch's autograd engine does), the loss read back every step."""
import ctypes, os, sys, time

steps, lib_path = int(sys.argv[1]), sys.argv[2]
lib = ctypes.CDLL(lib_path, mode=os.RTLD_LOCAL)
lib.wl_item.restype = ctypes.c_float


def forward():
    for kernels in (2, 3):
        lib.wl_layer(kernels)


def backward():
    lib.wl_pool(3, 2)


lib.wl_init()
for i in range(steps):
    t0 = time.perf_counter()
    forward()
    backward()
    value = lib.wl_item()
    print(f"step {i} loss {value:.5f} ms {(time.perf_counter() - t0) * 1e3:.3f}", flush=True)
PY
RUN=(python3 "$OUT/train.py" "$STEPS" "$WORKLOADS/libctypes_workload.so")
TP=()
fi

cat >"$OUT/compare.py" <<'PY'
"""Per recorded iteration: kernels and GPU time from libprof's and
torch.profiler's traces (both Kineto's schema), libprof's call-site table,
step cost of each profiler, what differs, and the two-at-once runs."""
import collections, glob, gzip, json, os, re, statistics, sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def traces(directory):
    return sorted(glob.glob(os.path.join(directory, "**", "*.pt.trace.json*"), recursive=True))


def per_step(trace):
    """{step: Counter(kernel name)}, {step: GPU us}: a kernel belongs to the
    ProfilerStep#N span holding the call that launched it."""
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


def step_ms(path):
    with open(path) as f:
        return [float(m.group(1)) for m in (re.search(r" ms ([\d.]+)$", l.strip()) for l in f) if m]


def med(xs):
    return f"{statistics.median(xs):8.3f}" if xs else "     n/a"


def show_steps(label, names, gpu_us):
    for i, n in enumerate(sorted(names)):
        print(f"  {label} iteration {i + 1} (ProfilerStep#{n}): {sum(names[n].values())} kernels, "
              f"GPU {gpu_us[n] / 1e3:.3f} ms")


def main(out, mode):
    ok = True
    lib_files = traces(os.path.join(out, "libprof"))
    if not lib_files:
        print("gpu-check: libprof wrote no trace with default settings"); return False
    lib = load(lib_files[0])
    meta = lib.get("libprof", {})
    print(f"\nlibprof: {os.path.basename(lib_files[0])}; step: {meta.get('step')}; "
          f"Python: {meta.get('python', {}).get('stacks')}; CUPTI: {meta.get('cupti_mode')}; losses: {meta.get('losses')}")
    lib_names, lib_gpu = per_step(lib)
    summary = lib_files[0].replace(".pt.trace.json.gz", ".summary.txt").replace(".pt.trace.json", ".summary.txt")
    tp_names = tp_gpu = None
    tp_file = os.path.join(out, "torch_profiler.pt.trace.json")
    if mode == "torch":
        if os.path.exists(tp_file):
            tp_names, tp_gpu = per_step(load(tp_file))
        else:
            print("gpu-check: torch.profiler wrote no trace"); ok = False
    print(f"\n{'iteration':>9} | {'libprof kernels':>15} {'GPU ms':>8} | {'torch.prof kernels':>18} {'GPU ms':>8}")
    lib_steps = sorted(lib_names)
    tp_steps = sorted(tp_names) if tp_names else []
    for i in range(max(len(lib_steps), len(tp_steps))):
        l = f"{sum(lib_names[lib_steps[i]].values()):>15} {lib_gpu[lib_steps[i]] / 1e3:>8.3f}" if i < len(lib_steps) else " " * 24
        t = (f"{sum(tp_names[tp_steps[i]].values()):>18} {tp_gpu[tp_steps[i]] / 1e3:>8.3f}" if i < len(tp_steps)
             else f"{'(no torch.profiler)' if mode != 'torch' else '':>27}")
        print(f"{i + 1:>9} | {l} | {t}")
    if lib_steps and tp_steps:
        a, b = lib_names[lib_steps[-1]], tp_names[tp_steps[-1]]
        diff = [(k, a[k], b[k]) for k in sorted(set(a) | set(b)) if a[k] != b[k]]
        print(f"\nlast recorded iteration, kernels that differ (libprof / torch.profiler): {len(diff)}")
        for k, x, y in diff[:15]:
            print(f"  {x:>4} / {y:<4} {k[:100]}")
    if os.path.exists(summary):
        with open(summary) as f:
            text = f.read()
        if "== GPU time by Python call site" in text:
            print("\nlibprof's call-site table:")
            print("\n".join(text.split("== GPU time by Python call site")[1].split("\n== ")[0].splitlines()[:14]))
        else:
            print("gpu-check: libprof's summary has no call-site table"); ok = False
    none = step_ms(os.path.join(out, "none.txt"))
    libp = step_ms(os.path.join(out, "libprof.txt"))
    print("\nmedian step time, ms (steps 3+; libprof's recorded steps by its trace's step numbers):")
    print(f"  no profiler                {med(none[3:])}")
    rec = set(lib_steps)
    print(f"  libprof waiting            {med([t for i, t in enumerate(libp[3:], 3) if i not in rec and i < min(rec, default=0)])}")
    print(f"  libprof recording          {med([t for i, t in enumerate(libp) if i in rec])}")
    if mode == "torch":
        torp = step_ms(os.path.join(out, "torch.txt"))
        print(f"  torch.profiler waiting     {med(torp[3:30])}")
        print(f"  torch.profiler recording   {med(torp[32:37])}")
        for label, d in (("torch.profiler started while libprof is attached", "both_libprof_first"),
                         ("torch.profiler first, then libprof's window", "both_torch_first")):
            lf = traces(os.path.join(out, d, "libprof"))
            tf = os.path.join(out, d, "torch_profiler.pt.trace.json")
            lk = sum(sum(c.values()) for c in per_step(load(lf[0]))[0].values()) if lf else None
            tk = sum(sum(c.values()) for c in per_step(load(tf))[0].values()) if os.path.exists(tf) else None
            refusals = []
            for err in (os.path.join(out, d, "stderr.txt"),):
                if os.path.exists(err):
                    with open(err, errors="replace") as f:
                        refusals = [l.strip() for l in f if re.search(r"CUPTI|subscri|refus", l, re.I)][:3]
            print(f"\n{label}: libprof kernels {lk}, torch.profiler kernels {tk}")
            for r in refusals:
                print(f"  said: {r[:200]}")
            if (lk is None or lk == 0 or tk is None or tk == 0) and not refusals:
                print("  gpu-check: a profiler stopped recording without saying why"); ok = False
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2]) else 1)
PY

echo "== training script ($MODE), $STEPS steps: alone, then under libprof with no PROF_* set"
# No PROF_* variable: libprof's defaults, traces to ./prof-traces of the run's directory.
for v in $(env | grep -o '^PROF_[A-Z_0-9]*'); do unset "$v"; done
"${RUN[@]}" >"$OUT/none.txt" 2>"$OUT/none.err" || { echo "gpu-check: the script failed alone"; FAILED=1; }
mkdir -p "$OUT/libprof"
(cd "$OUT/libprof" && LD_PRELOAD="$LIBPROF" "${RUN[@]}" >"$OUT/libprof.txt" 2>"$OUT/libprof.err") ||
  { echo "gpu-check: the script failed under libprof, see $OUT/libprof.err"; FAILED=1; }
grep -h "libprof" "$OUT/libprof.err" | head -6
for t in "$OUT"/libprof/prof-traces/*.pt.trace.json*; do
  [[ -e "$t" ]] && { "$PROF" validate "$t" || FAILED=1; }
done
if [[ "$MODE" == torch ]]; then
  echo "== the same script under torch.profiler (same schedule), then both at once, each way"
  "${TP[@]}" "$OUT/torch_profiler.pt.trace.json" "$WAIT" "$WARMUP" "$ACTIVE" "$OUT/train.py" "$STEPS" \
    >"$OUT/torch.txt" 2>"$OUT/torch.err" || { echo "gpu-check: the script failed under torch.profiler"; FAILED=1; }
  # libprof first: attached from the start; torch.profiler starts recording
  # at step 10, while libprof waits, and records through libprof's window.
  mkdir -p "$OUT/both_libprof_first/libprof"
  (cd "$OUT/both_libprof_first/libprof" && LD_PRELOAD="$LIBPROF" "${TP[@]}" \
    "$OUT/both_libprof_first/torch_profiler.pt.trace.json" 10 1 30 "$OUT/train.py" "$STEPS" \
    >/dev/null 2>"$OUT/both_libprof_first/stderr.txt") || echo "gpu-check: exit $? with both profilers (libprof first)"
  # torch.profiler first: recording from step 1, before libprof's window opens.
  mkdir -p "$OUT/both_torch_first/libprof"
  (cd "$OUT/both_torch_first/libprof" && LD_PRELOAD="$LIBPROF" "${TP[@]}" \
    "$OUT/both_torch_first/torch_profiler.pt.trace.json" 0 1 40 "$OUT/train.py" "$STEPS" \
    >/dev/null 2>"$OUT/both_torch_first/stderr.txt") || echo "gpu-check: exit $? with both profilers (torch.profiler first)"
fi
python3 "$OUT/compare.py" "$OUT" "$MODE" || FAILED=1
exit "$FAILED"
