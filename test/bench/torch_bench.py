#!/usr/bin/env python3
"""libprof beside torch.profiler on real PyTorch: what each costs a training
step and the whole process, as ratios to the bare run.

PyPI's torch (the tests' venv) on the simulated stack (<build>/test/sim/simrun)
runs test/workloads/torch_train.py in two shapes:

  transformer  the small transformer language model (2 blocks, width 256)
  tiny-ops     a host-bound step: --tiny-ops 200 elementwise operations on a
               256-value tensor, one small kernel each

and in each the same iterations are timed (--time-from: iterations FIRST to
the last, each ending with torch.cuda.synchronize()) under these variants:

  bare                  no profiler
  libprof waiting       LD_PRELOAD, PROF_STEP=api:cudaDeviceSynchronize, PROF_WAIT=10^9:
                        the schedule never records
  libprof no stacks     LD_PRELOAD, recording every timed iteration in one window
                        (PROF_WAIT/WARMUP/ACTIVE on the same synchronizes, PROF_BUFFER_MB=1024
                        so that nothing is dropped), PROF_PYTHON=0, PROF_TORCH_OPS=0,
                        PROF_TORCH_MEMORY=0
  libprof no ops        the same with PROF_PYTHON left at its default (auto): a Python
                        stack on every recorded call; PROF_TORCH_OPS=0, PROF_TORCH_MEMORY=0
  libprof no modules    stacks and PyTorch's operators by name (PROF_TORCH_OPS=names: no
                        module paths); PROF_TORCH_MEMORY=0
  libprof no memory     stacks, operators by name and module paths (names,modules);
                        PROF_TORCH_MEMORY=0
  libprof stacks        its defaults: stacks, operators, module paths and tensor memory
  libprof shapes        the same with PROF_TORCH_OPS=shapes (no module paths)
  torch CUDA            torch.profiler, ProfilerActivity.CUDA, schedule(wait, warmup,
                        active) on the same iterations, prof.step() after each synchronize
  torch CPU+CUDA        ProfilerActivity.CPU and CUDA
  torch CPU+CUDA shapes the same with record_shapes=True
  torch CPU+CUDA memory the same with profile_memory=True (in place of record_shapes)
  torch CPU+CUDA stack  the same with with_stack=True

Both profilers write their files after the timed iterations (libprof: its
default formats; torch.profiler: export_chrome_trace), so those count in the
process's CPU, not in the step. Figures, per workload and variant, each the
median over rounds of the ratio to bare in the same round (variant order
rotated every round), with the 10th-90th percentile:

  in-loop CPU    CPU of every thread of the process over the timed iterations
  loop thread    CPU of the thread running the loop (autograd's backward thread
                 is not in it)
  wall           wall time of the timed iterations
  process CPU    user + sys of the whole process and the children it waited for
                 (the DataLoader's workers), from wait4: import, loop, files, exit

and the targets (issue "torch.profiler in the same process", item 4):
recording's overhead (ratio - 1, in-loop and whole-process) at most half of
torch.profiler's with CUDA only; with Python stacks at most a quarter of
torch.profiler's with with_stack. --callgrind adds instructions per timed iteration (all threads)
of each workload under valgrind --tool=callgrind, bare and each of
--callgrind-variants (default: libprof waiting), one run each: instrumented
only over the timed iterations, one dump per iteration (client requests from
a small library the script compiles), each read from its totals: line less
the simulator's spin-wait; iteration i of a variant against iteration i of
bare, the median iteration decides (target: waiting adds at most 2 %), the
mean over all says what the iterations in which libprof looked at CUPTI
again add; the added Ir by object file (libprof.so, the sim's libcupti,
libtorch_cpu.so where Kineto lives, ...) say where it goes.

  torch_bench.py --build-dir build [--rounds N] [--workloads transformer,tiny-ops]
                 [--callgrind [--callgrind-variants V,...] [--callgrind-steps N] [--keep-callgrind DIR]]
                 [--json OUT] [--smoke]

libprof.so is copied at the start, so a rebuild during the run cannot mix
builds. Every run is checked: libprof's recording wrote one window of exactly
the timed iterations with nothing lost and waiting wrote none, torch.profiler's
trace holds a kernel per timed iteration at least and (with CPU) ProfilerStep#
of the first and last timed iterations; libprof logged no error.
Exit status 0 when every figure was produced (targets met or not), 1 if not.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
WORKLOAD = os.path.join(ROOT, "test", "workloads", "torch_train.py")
sys.path.insert(0, HERE)
from run_bench import check_loop_window, stats, trace_losses, Failure  # noqa: E402

# Iterations before the timed ones: PyTorch's first iterations pick kernels and
# fill its caching allocator; the profilers' schedules wait and warm up there.
WARMUP_STEPS = 2
WORKLOADS = {
    # name: (torch_train.py args, timed iterations, iterations before them)
    "transformer": (["--layers", "2", "--dim", "256", "--seq-len", "128"], 150, 10),
    "tiny-ops": (["--tiny-ops", "200"], 300, 10),
}
SMOKE_STEPS = {"transformer": (4, 3), "tiny-ops": (4, 3)}
VARIANTS = ["bare", "libprof waiting", "libprof no stacks", "libprof no ops", "libprof no modules", "libprof no memory",
            "libprof stacks",
            "libprof shapes", "torch CUDA", "torch CPU+CUDA", "torch CPU+CUDA shapes", "torch CPU+CUDA memory",
            "torch CPU+CUDA stack"]
FIGURES = [("cpu_s", "in-loop CPU"), ("thread_cpu_s", "loop thread"), ("wall_s", "wall"),
           ("process_s", "process CPU")]
# (variant, torch.profiler's variant it is held against, largest share of its overhead)
TARGETS = [("libprof no stacks", "torch CUDA", 0.5), ("libprof stacks", "torch CPU+CUDA stack", 0.25)]
CALLGRIND_TARGET = 0.02
MARKS_C = r"""
#include <valgrind/callgrind.h>
void bench_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_ZERO_STATS; }
void bench_step(void) { CALLGRIND_DUMP_STATS_AT("timed iteration"); }
void bench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
"""


def variant_run(variant, libprof, first, timed, out_dir):
    """(extra torch_train.py args, extra environment) of one variant."""
    wait = first - WARMUP_STEPS
    schedule = ["--wait", str(wait), "--warmup", str(WARMUP_STEPS), "--active", str(timed)]
    trace = os.path.join(out_dir, "torch.pt.trace.json")
    if variant == "bare":
        return [], {}
    if variant.startswith("libprof"):
        env = {"LD_PRELOAD": libprof, "PROF_OUTPUT_DIR": out_dir, "PROF_LOG_LEVEL": "warn",
               "PROF_STEP": "api:cudaDeviceSynchronize"}
        if variant == "libprof waiting":
            env["PROF_WAIT"] = "1000000000"
        else:
            env.update(PROF_WAIT=str(wait), PROF_WARMUP=str(WARMUP_STEPS), PROF_ACTIVE=str(timed),
                       PROF_BUFFER_MB="1024")
            if variant == "libprof no stacks":
                env.update(PROF_PYTHON="0", PROF_TORCH_OPS="0", PROF_TORCH_MEMORY="0")
            if variant == "libprof no ops":
                env.update(PROF_TORCH_OPS="0", PROF_TORCH_MEMORY="0")
            if variant == "libprof no modules":
                env.update(PROF_TORCH_OPS="names", PROF_TORCH_MEMORY="0")
            if variant == "libprof no memory":
                env["PROF_TORCH_MEMORY"] = "0"
            if variant == "libprof shapes":
                env["PROF_TORCH_OPS"] = "shapes"
        return [], env
    args = ["--torch-profiler", trace] + schedule
    if variant == "torch CUDA":
        args += ["--torch-activities", "cuda"]
    if variant.endswith("stack"):
        args.append("--with-stack")
    if variant.endswith("shapes"):
        args.append("--record-shapes")
    if variant.endswith("memory"):
        args.append("--profile-memory")
    return args, {}


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("PROF_") or k.startswith("SIM_"))
           and k not in ("LD_PRELOAD", "LD_AUDIT", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_once(cmd, env, log_path):
    """Runs cmd; returns (its last JSON line, user+sys seconds of it and the
    children it waited for, stdout+stderr)."""
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        text = log.read()
    if proc.returncode != 0:
        raise Failure(f"{' '.join(cmd[-6:])} exited {proc.returncode}: {text.strip()[-600:]}")
    result = None
    for line in text.splitlines():
        if line.startswith("{") and "timed_steps" in line:
            result = json.loads(line)
    if not result or not result.get("timed_steps"):
        own = "\n".join(line for line in text.splitlines() if not line.startswith("=="))  # valgrind's lines out
        raise Failure(f"{' '.join(cmd[-6:])}: no timed iterations: {own.strip()[-600:]}")
    return result, usage.ru_utime + usage.ru_stime, text


def check_outputs(variant, out_dir, first, timed, log):
    """What each recording variant must have written."""
    if variant in ("libprof no stacks", "libprof no ops", "libprof no modules", "libprof no memory", "libprof stacks",
                   "libprof shapes"):
        check_loop_window(out_dir, first, timed)
        _, losses = trace_losses(out_dir)
        if any(losses.values()):
            raise Failure(f"{variant}: events lost {losses}")
    elif variant == "libprof waiting":
        if any(n.endswith(".pt.trace.json") for n in os.listdir(out_dir)):
            raise Failure("libprof waiting wrote a window")
    elif variant.startswith("torch"):
        with open(os.path.join(out_dir, "torch.pt.trace.json"), errors="replace") as f:
            text = f.read()
        kernels = len(re.findall(r'"cat":\s*"kernel"', text))
        if kernels < timed:
            raise Failure(f"{variant}: torch.profiler's trace holds {kernels} kernels, fewer than the {timed} "
                          "timed iterations")
        # ProfilerStep#N is a CPU annotation: not recorded with CUDA alone.
        steps = {int(m) for m in re.findall(r'"ProfilerStep#(\d+)"', text)}
        if "CPU" in variant and (first not in steps or first + timed - 1 not in steps):
            raise Failure(f"{variant}: torch.profiler's trace holds ProfilerStep# {sorted(steps)[:3]}..., "
                          f"not {first} and {first + timed - 1}")
    errors = [line for line in log.splitlines() if line.startswith(("[libprof] error", "[libprof] critical"))]
    if errors:
        raise Failure(f"{variant}: libprof logged {errors[0]}")


def measure(args, simrun, python, libprof, tmp):
    """Interleaved rounds; returns {workload: {variant: [per-round dict]}} and the load averages."""
    runs = {w: {v: [] for v in VARIANTS} for w in args.workloads}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for w in args.workloads:
            wl_args, timed, first = WORKLOADS[w]
            if args.smoke:
                timed, first = SMOKE_STEPS[w]
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for v in order:
                out_dir = os.path.join(tmp, "out")
                shutil.rmtree(out_dir, ignore_errors=True)
                os.makedirs(out_dir)
                extra_args, extra_env = variant_run(v, libprof, first, timed, out_dir)
                env = clean_env()
                env.update(extra_env)
                cmd = [simrun, python, WORKLOAD, *wl_args, "--steps", str(first + timed), "--sync-each-step",
                       "--time-from", str(first), *extra_args]
                result, process_s, log = run_once(cmd, env, os.path.join(tmp, "run.log"))
                check_outputs(v, out_dir, first, timed, log)
                result["process_s"] = process_s
                runs[w][v].append(result)
                print(f"torch_bench: round {r + 1}/{args.rounds} {w:11} {v:21} in-loop {result['cpu_s']:.3f} s "
                      f"process {process_s:.2f} s", file=sys.stderr, flush=True)
        loads.append(os.getloadavg()[0])
    return runs, loads


def ratios(runs):
    """{workload: {variant: {figure: stats of the per-round ratio to bare}}}."""
    out = {}
    for w, per in runs.items():
        out[w] = {}
        for v, rs in per.items():
            out[w][v] = {}
            for key, _ in FIGURES:
                samples = [x[key] / b[key] for x, b in zip(rs, per["bare"]) if b[key] > 0]
                out[w][v][key] = stats(samples)
        out[w]["bare"]["per_step_ms"] = stats([1e3 * b["cpu_s"] / b["timed_steps"] for b in per["bare"]])
        out[w]["bare"]["process_abs_s"] = stats([b["process_s"] for b in per["bare"]])
    return out


def overhead_shares(runs):
    """Per target and workload: the variant's overhead over torch.profiler's
    (ratio to bare less 1, medians), in-loop and whole-process."""
    out = []
    for w, per in runs.items():
        for ours, theirs, bound in TARGETS:
            for key, label in (("cpu_s", "in-loop CPU"), ("process_s", "process CPU")):
                def over(v):
                    return stats([x[key] / b[key] - 1 for x, b in zip(per[v], per["bare"])])

                o, t = over(ours), over(theirs)
                per_round = [(x[key] / b[key] - 1) / (y[key] / b[key] - 1)
                             for x, y, b in zip(per[ours], per[theirs], per["bare"]) if y[key] != b[key]]
                share = o["value"] / t["value"] if t["value"] > 0 else float("nan")
                out.append({"workload": w, "figure": label, "ours": ours, "theirs": theirs, "bound": bound,
                            "ours_overhead": o["value"], "theirs_overhead": t["value"], "share": share,
                            "share_spread": stats(per_round), "met": share <= bound})
    return out


def callgrind(args, simrun, python, libprof, tmp):
    """Instructions per timed iteration of each workload under each of
    --callgrind-variants, one dump per iteration: {workload: {variant: {"ir":
    [all threads' Ir less the simulator's spin-wait, per iteration],
    "objects": [{object file: Ir of its own code}, per iteration]}}}."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise Failure("valgrind not installed")
    src, lib = os.path.join(tmp, "marks.c"), os.path.join(tmp, "libmarks.so")
    with open(src, "w") as f:
        f.write(MARKS_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    out = {}
    for w, v in [(w, v) for w in args.workloads for v in args.callgrind_variants]:
        wl_args, _, first = WORKLOADS[w]
        timed = 3 if args.smoke else args.callgrind_steps
        first = SMOKE_STEPS[w][1] if args.smoke else first
        out_dir = os.path.join(args.keep_callgrind or tmp, f"cg-{w}-{v.replace(' ', '-')}")
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        extra_args, extra_env = variant_run(v, libprof, first, timed, out_dir)
        env = clean_env()
        env.update(extra_env)
        dump = os.path.join(out_dir, "callgrind.out")
        cmd = [simrun, valgrind, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={dump}.%p",
               python, WORKLOAD, *wl_args, "--steps", str(first + timed), "--time-from", str(first),
               "--callgrind-lib", lib, *extra_args]
        started = time.time()
        run_once(cmd, env, os.path.join(out_dir, "log"))
        parts = sorted((int(m.group(1)), n) for n in os.listdir(out_dir)
                       for m in [re.match(r"callgrind\.out\.\d+\.(\d+)$", n)] if m)
        if len(parts) != timed:
            raise Failure(f"callgrind {w} {v}: {len(parts)} dumps, not one per timed iteration ({timed})")
        per = {"ir": [], "objects": []}
        for _, name in parts:
            total, spin, objects = totals_ir(os.path.join(out_dir, name))
            per["ir"].append(total - spin)
            per["objects"].append(objects)
        out.setdefault(w, {})[v] = per
        print(f"torch_bench: callgrind {w} {v}: median {stats(per['ir'])['value']:,.0f} Ir per iteration "
              f"({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
    return out


def annotate_ir(path, inclusive):
    """[(Ir, function line)] from callgrind_annotate."""
    p = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--auto=no",
                        "--threshold=100", path], capture_output=True, text=True)
    rows = []
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return rows


def totals_ir(path):
    """(the dump's totals: line, which counts only what ran after the zero;
    the simulator's spin-wait sim::WaitUntilNs, inclusive; {object file: Ir
    of its own code}, the spin-wait's taken from libcuda.so.1's)."""
    total = 0
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                total = int(line.split()[1])
    spin = max([ir for ir, name in annotate_ir(path, True) if "sim::WaitUntilNs" in name], default=0)
    objects = {}
    for ir, name in annotate_ir(path, False):
        m = re.search(r"\[([^\]]+)\]$", name)
        key = os.path.basename(m.group(1)) if m else "(inlined, object not named)"
        objects[key] = objects.get(key, 0) + ir
    if "libcuda.so.1" in objects:
        objects["libcuda.so.1"] -= spin
    return total, spin, objects


def callgrind_added(bare, other):
    """other's Ir over bare's. Iteration i of one run is compared with
    iteration i of the other: PyTorch's iterations differ from each other by
    up to 25 % (the DataLoader's, the allocator's and Python's own rhythms)
    but repeat run to run within 0.3 %. The median iteration decides; the mean
    includes the iterations in which libprof looked at CUPTI again."""
    diffs = [o - b for o, b in zip(other["ir"], bare["ir"])]
    shares = [d / b for d, b in zip(diffs, bare["ir"])]
    names = set().union(*bare["objects"], *other["objects"])
    by_object = {n: stats([o.get(n, 0) - b.get(n, 0) for o, b in zip(other["objects"], bare["objects"])])["value"]
                 for n in names}
    attached = sum(1 for o in other["objects"] if o.get("libcupti.so.13"))
    return {"ir": stats(diffs)["value"], "share": stats(shares)["value"], "bare": stats(bare["ir"])["value"],
            "n": len(diffs), "mean_share": sum(other["ir"]) / sum(bare["ir"]) - 1, "cupti_iterations": attached,
            "by_object": dict(sorted(by_object.items(), key=lambda kv: -abs(kv[1]))[:6])}


def fmt_stat(s, digits=3):
    return f"{s['value']:.{digits}f} ({s['p10']:.{digits}f}-{s['p90']:.{digits}f})"


def print_table(res, shares, cg, loads, rounds, smoke):
    print(f"{rounds} interleaved rounds; 1-minute load average {min(loads):.1f}-{max(loads):.1f} "
          f"on {os.cpu_count()} CPUs")
    head = ["workload", "variant"] + [label for _, label in FIGURES]
    rows = [head]
    for w, per in res.items():
        b = per["bare"]
        rows.append([w, f"bare: {b['per_step_ms']['value']:.2f} ms CPU per iteration, process "
                        f"{b['process_abs_s']['value']:.2f} s", "", "", "", ""])
        for v in VARIANTS[1:]:
            rows.append(["", v] + [fmt_stat(per[v][key]) for key, _ in FIGURES])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for i, r in enumerate(rows if res else []):
        print("| " + " | ".join(c.ljust(widths[j]) for j, c in enumerate(r)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (wd + 2) for wd in widths) + "|")
    print()
    for s in shares:
        if smoke:
            verdict = "(smoke: not judged)"
        elif not s["theirs_overhead"] > 0:
            verdict = "undecided: torch.profiler's median overhead is not above bare's"
        else:
            verdict = "met" if s["met"] else "MISSED"
        print(f"- {s['workload']}, {s['figure']}: {s['ours']} {s['ours_overhead']:+.3f} vs {s['theirs']} "
              f"{s['theirs_overhead']:+.3f} = {s['share']:.2f}x (per round {s['share_spread']['p10']:.2f}-"
              f"{s['share_spread']['p90']:.2f}); target <= {s['bound']}x: {verdict}")
    for w, per in (cg or {}).items():
        for v, runs in per.items():
            if v == "bare":
                continue
            added = callgrind_added(per["bare"], runs)
            objects = ", ".join(f"{n} {ir:+,.0f}" for n, ir in added["by_object"].items())
            verdict = ""
            if v == "libprof waiting":
                verdict = (f"; target <= {CALLGRIND_TARGET * 100:.0f} %: " + ("(smoke: not judged)" if smoke else
                           "met" if added["share"] <= CALLGRIND_TARGET else "MISSED"))
            print(f"- callgrind, {w}, {v}: {added['ir']:+,.0f} Ir per iteration over bare's {added['bare']:,.0f} "
                  f"({added['share'] * 100:+.2f} %, median of {added['n']} iterations paired with bare's; mean "
                  f"{added['mean_share'] * 100:+.2f} %, CUPTI attached in {added['cupti_iterations']}); by object: "
                  f"{objects}{verdict}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--callgrind", action="store_true", help="also instructions per iteration under callgrind")
    ap.add_argument("--callgrind-variants", default="libprof waiting",
                    help="comma list of the variants counted under callgrind besides bare (default: libprof waiting)")
    ap.add_argument("--callgrind-steps", type=int, default=16, help="timed iterations under callgrind")
    ap.add_argument("--keep-callgrind", metavar="DIR", help="keep the callgrind dumps in DIR/<workload>-<variant>/")
    ap.add_argument("--python", default=os.path.join(ROOT, ".deps", "venv", "bin", "python"))
    ap.add_argument("--json", help="also write every figure here")
    ap.add_argument("--smoke", action="store_true", help="one round of a few iterations: checks, no figures to judge")
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.callgrind_variants = ["bare"] + [v for v in args.callgrind_variants.split(",") if v != "bare"]
    if args.smoke:
        args.rounds = 1
    if (any(w not in WORKLOADS for w in args.workloads) or any(v not in VARIANTS for v in args.callgrind_variants)
            or args.rounds < (0 if args.callgrind else 1)):
        ap.error(f"--workloads takes {','.join(WORKLOADS)}; --callgrind-variants {','.join(VARIANTS)}; "
                 "--rounds at least 1 (0: --callgrind alone)")
    build = os.path.abspath(args.build_dir)
    simrun = os.path.join(build, "test", "sim", "simrun")
    for path in (simrun, args.python, os.path.join(build, "agent", "libprof.so")):
        if not os.path.exists(path):
            print(f"torch_bench: {path} missing (build prof_agent and the sim; scripts/setup-deps.sh for the venv)",
                  file=sys.stderr)
            return 1
    tmp = tempfile.mkdtemp(prefix="torch-bench-")
    try:
        libprof = os.path.join(tmp, "libprof.so")
        shutil.copy2(os.path.join(build, "agent", "libprof.so"), libprof)
        with open(libprof, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        print(f"libprof.so built {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(os.path.getmtime(libprof)))}, "
              f"sha256 {digest}; torch_train.py on {os.path.basename(simrun)}")
        started = time.time()
        runs, loads = measure(args, simrun, args.python, libprof, tmp) if args.rounds else ({}, [os.getloadavg()[0]])
        cg = callgrind(args, simrun, args.python, libprof, tmp) if args.callgrind else None
        res = ratios(runs)
        shares = overhead_shares(runs)
        print_table(res, shares, cg, loads, args.rounds, args.smoke)
        print(f"({time.time() - started:.0f} s)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"ratios": res, "shares": shares, "callgrind": cg, "loads": loads, "runs": runs}, f,
                          indent=1)
    except (Failure, OSError, subprocess.CalledProcessError) as e:
        print(f"torch_bench: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
