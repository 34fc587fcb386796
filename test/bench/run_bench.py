#!/usr/bin/env python3
"""Runs every libprof benchmark and prints one table: figure, value, spread,
target, met.

Each figure is a ratio or a difference against a baseline measured in the
same run (the machine is shared): the C++ benchmarks interleave their
variants in-process (harness.h); the end-to-end runs here interleave whole
processes round by round (bare, waiting, recording, bare, ...), and every
figure is the median over rounds of the per-round ratio, with the 10th-90th
percentile as spread.

  run_bench.py --build-dir build-bench [--smoke] [--rounds N] [--json OUT]

--smoke: tiny sizes, one round, no judging: only checks that every
benchmark runs and reports every figure (the CTest test bench_smoke).
Exit status: 0 when every figure was produced (targets missed or not),
1 when a benchmark failed or a figure is missing.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_NAME_RE = re.compile(r'"name":\s*("(?:[^"\\]|\\.)*")')

# figure id -> (label, comparison, target); comparison None = information.
# Data, not logic: one row per figure.
TARGETS = {
    "wrapper_idle_ns": ("wrapper cost, no window recording", "<=", 2.0),
    "wrapper_record_ns": ("wrapper cost, recording", "<=", 25.0),
    "alloc_pair_ns": ("allocator tracking, cudaMalloc+cudaFree", "<=", 50.0),
    "e2e_wait_ratio": ("end to end, agent waiting / bare", "<=", 1.01),
    "e2e_record_ratio": ("end to end, recording every step / bare", "<=", 1.25),
    "window_end_stall_ms": ("window end stall, 1M host events (in process)", "<=", 1.0),
    "window_end_stall_e2e_ms": ("window end stall, ~1M-launch window on the sim", "<=", 1.0),
    "export_chrome_events_per_s": ("Chrome JSON export, per core", ">=", 3e6),
    "export_gzip_events_per_s": ("Chrome JSON gzip export, per core", ">=", 1e6),
    "kernel_event_bytes": ("kernel event bytes (excl. name) vs Kineto", "<=", None),  # target filled from Kineto
    "mem_over_bare_mb_256": ("memory over bare, PROF_BUFFER_MB=256 (default)", "<=", 256 + 32.0),
    # Host-limited loop (host_loop.cu): CPU of every thread inside the loop,
    # ratio to bare; one row per step source while waiting.
    "host_wait_time_ratio": ("host loop, waiting, PROF_STEP=time:100ms / bare CPU", "<=", 1.01),
    "host_wait_sync_ratio": ("host loop, waiting, PROF_STEP=sync / bare CPU", "<=", 1.01),
    "host_wait_api_ratio": ("host loop, waiting, PROF_STEP=api:cudaStreamSynchronize / bare", "<=", 1.01),
    "host_wait_kernel_ratio": ("host loop, waiting, PROF_STEP=kernel:host_k0 / bare CPU", "<=", 1.01),
    "host_wait_nvtx_ratio": ("host loop, waiting, PROF_STEP=nvtx:host_step / bare CPU", "<=", 1.01),
    "host_wait_auto_ratio": ("host loop, waiting, PROF_STEP=auto (detect, then its marker) / bare", "<=", 1.01),
    "auto_detect_ns": ("PROF_STEP=auto looking for the loop: per observed event", "<=", 20.0),
    # Recording every step as Kineto was measured on this loop: one
    # window over the whole measured loop, its trace written at the end.
    "host_record_ratio": ("host loop, recording every step (one window), in-loop CPU / bare", "<=", 1.35),
    "host_record_writer_ns": ("host loop, recording: other threads' in-loop CPU per launch", "<=", 1000.0),
    # Kineto on this loop, driven through its C++ API as PyTorch drives it,
    # cost 8.31x bare CPU for the whole process (and 1.429x in the loop): half of it.
    "host_record_process_ratio": ("host loop, recording, whole-process CPU / bare", "<=", 8.31 / 2),
    "python_warm_ns": ("Python stack, 30 frames, stack seen before", "<=", 300.0),
    "python_cold_ns": ("Python stack, 30 frames, first sight", "<=", 5000.0),
    "python_loop_ratio": ("Python loop recording, with stacks / without", "<=", 1.2),
    # Preloaded into every process of a job (shells, launchers) that may never
    # touch CUDA: what loading libprof.so costs such a process.
    "load_cost_ms": ("loading libprof.so into a process that makes no CUDA call, over bare", "<=", 1.0),
    # memory() adds one row per lowered cap.
}
INFO = {
    "wrapper_floor_ns": "reference: minimal hand-written wrapper",
    "alloc_pair_record_ns": "allocator pair while recording",
    "clock_read_ns": "one agent clock read (clock_gettime)",
    "tsc_read_ns": "one rdtsc read (for comparison)",
    "auto_detect_over_idle_ns": "auto detecting: per event over the idle wrapper",
    "window_end_stall_cpu_ms": "window end: app-thread CPU in that marker",
    "window_seal_ms": "window seal on the writer thread",
    "export_chrome_peak_mb": "plain export's transient memory, 1M events",
    "mem_over_bare_waiting_mb": "memory over bare, agent waiting",
    "export_summary_events_per_s": "summary, per core",
    "export_chrome_bytes_per_event": "Chrome JSON bytes/event",
    "export_gzip_bytes_per_event": "Chrome JSON gzip bytes/event",
    "export_summary_bytes_per_event": "summary bytes/event",
    "e2e_bare_launch_ns": "bare sim launch (loop time / launches)",
    "e2e_wait_app_cpu_ns": "breakdown: waiting, app-thread CPU added per launch",
    "e2e_record_host_ratio": "breakdown: recording with PROF_ACTIVITIES=runtime / bare",
    "e2e_record_added_ns": "breakdown: recording, wall added per launch",
    "e2e_record_app_cpu_ns": "breakdown: recording, app-thread CPU added per launch",
    "e2e_record_wrapper_ns": "breakdown:   of which the wrapper + HostEvent (micro)",
    "e2e_record_host_app_cpu_ns": "breakdown:   app-thread CPU with runtime records only",
    "e2e_record_other_cpu_ns": "breakdown: recording, other threads' CPU per launch",
    "host_bare_step_ns": "host loop, bare: CPU per step (all threads)",
    "load_bare_ms": "bare process (/bin/true): spawn to exit",
    "load_cost_cpu_ms": "loading libprof.so: CPU added (user + sys, every thread)",
    "load_libprof_mb": "libprof.so on disk",
    "host_record_app_ns": "host loop, recording: app-thread CPU added per launch",
    "host_record_wall_ratio": "host loop, recording: loop wall / bare",
    "host_record_after_ns": "host loop, recording: CPU outside the loop over bare, per launch",
    # The same loop cut into windows of 10 steps, repeated for ever: a
    # window's fixed costs (two files, a summary) every 40 launches.
    "host_windows10_ratio": "host loop, windows of 10 steps: in-loop CPU / bare",
    "host_windows10_writer_ns": "host loop, windows of 10 steps: other threads' in-loop CPU per launch",
    "host_windows10_app_ns": "host loop, windows of 10 steps: app-thread CPU added per launch",
    "host_windows10_process_ratio": "host loop, windows of 10 steps: whole-process CPU / bare",
}
# Callgrind (--callgrind): instructions per step inside the loop, all
# threads, the simulator's spin-wait excluded; one row per variant.
CG_VARIANTS = ["bare", "wait_time", "wait_sync", "wait_api", "wait_kernel", "wait_nvtx", "wait_auto", "record",
               "record_loop"]
# host_loop's steps before its measured loop (its --warmup-steps default).
HOST_WARMUP_STEPS = 100
CG_WARMUP_STEPS = 50  # under callgrind
# PROF_STEP=auto while it is still looking: a loop too short to be decided
# (host_loop is decided after 9 to 100+ iterations, depending on timing).
CG_DETECT_WARMUP, CG_DETECT_STEPS = 2, 6


PEAK_RSS = None  # path of bench_peak_rss, set in main()


class Failure(Exception):
    pass


def stats(samples):
    s = sorted(samples)
    if not s:
        return {"value": float("nan"), "p10": float("nan"), "p90": float("nan"), "n": 0}

    def pct(p):
        r = p * (len(s) - 1)
        lo, hi = int(r), min(int(r) + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (r - lo)

    return {"value": pct(0.5), "p10": pct(0.1), "p90": pct(0.9), "n": len(s)}


def run_figures(cmd, env=None):
    """Runs a C++ benchmark; returns its figure lines keyed by id."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            f = json.loads(line)
            out[f.pop("figure")] = f
    return out


def run_workload_rss(exe, args, env, want_cpu=False):
    """Runs launch_storm under peak_rss; returns (result, peak RSS KiB,
    stderr[, CPU ns of the whole process, all threads])."""
    p = subprocess.run([PEAK_RSS, exe] + args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure(f"{exe} {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if len(lines) < 2 or "peak_rss_kb" not in lines[-1]:
        raise Failure(f"{exe} printed no result")
    res, usage = lines[0], lines[-1]
    if want_cpu:
        return res, usage["peak_rss_kb"], p.stderr, usage["cpu_ns"]
    return res, usage["peak_rss_kb"], p.stderr


def agent_env(base, libprof, out_dir, **prof):
    env = dict(base)
    env["LD_PRELOAD"] = libprof
    env["PROF_OUTPUT_DIR"] = out_dir
    env["PROF_LOG_LEVEL"] = "warn"
    for k, v in prof.items():
        env["PROF_" + k] = str(v)
    return env


def nonzero(counts):
    return {k: v for k, v in counts.items() if v} or "none"


def check_loop_window(out_dir, first_step, steps):
    """The one-window recording run wrote exactly the loop's steps, whole."""
    traces = [n for n in os.listdir(out_dir) if n.endswith(".pt.trace.json")]
    if len(traces) != 1:
        raise Failure(f"one-window recording wrote {len(traces)} traces, not 1")
    with open(os.path.join(out_dir, traces[0])) as f:
        window = json.load(f)["libprof"]["window"]
    want = (first_step, first_step + steps - 1, False)
    got = (window["first_step"], window["last_step"], window["partial"])
    if got != want:
        raise Failure(f"one-window recording: window (first, last, partial) {got}, not {want}")


def trace_losses(out_dir):
    """Sums the loss counts written at the head of every trace in out_dir."""
    total = {}
    traces = 0
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".pt.trace.json"):
            continue
        traces += 1
        with open(os.path.join(out_dir, name), "rb") as f:
            head = f.read(1 << 16).decode(errors="replace")
        m = re.search(r'"losses":\s*', head)
        if m:
            # The counts, and per-kind breakdowns of some ("..._by_kind":
            # {...}) that the counts already hold: only the counts are summed.
            losses, _ = json.JSONDecoder().raw_decode(head, m.end())
            for k, v in losses.items():
                if isinstance(v, int):
                    total[k] = total.get(k, 0) + v
    return traces, total


def held_provisional_window(out_dir):
    """Whether out_dir holds PROF_STEP=auto's provisional window (step 0,
    from the first CUDA call until the loop was found), written at exit
    because the schedule's first window never came: what a waiting auto
    run writes after its loop, not a window of it."""
    for name in os.listdir(out_dir):
        if name.endswith(".0.pt.trace.json"):
            with open(os.path.join(out_dir, name), "rb") as f:
                head = f.read(1 << 16).decode(errors="replace")
            return "the process ended before the schedule's first window" in head
    return False


def kernel_event_sizes(text, limit):
    """Byte size of each kernel event object in raw trace text, without its
    name string (names differ between programs; the fields are compared)."""
    start = text.find('"traceEvents"')
    if start < 0:
        return [], set()
    pos = text.find("[", start) + 1
    dec = json.JSONDecoder()
    sizes, fields = [], set()
    n = len(text)
    while pos < n and len(sizes) < limit:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] == "]":
            break
        obj, end = dec.raw_decode(text, pos)
        if isinstance(obj, dict) and obj.get("cat") == "kernel":
            raw = text[pos:end].encode()
            m = KERNEL_NAME_RE.search(text, pos, end)
            sizes.append(len(raw) - (len(m.group(1).encode()) if m else 0))
            fields.update(obj.keys())
            fields.update("args." + k for k in obj.get("args", {}))
        pos = end
    return sizes, fields


def kineto_kernel_bytes(traces_dir):
    sizes, fields = [], set()
    for name in sorted(os.listdir(traces_dir)):
        if name.endswith(".json.gz"):
            with gzip.open(os.path.join(traces_dir, name), "rt") as f:
                s, fl = kernel_event_sizes(f.read(), 10**9)
            sizes += s
            fields |= fl
    return sizes, fields


def callgrind_loop_ir(path):
    """(instructions in the loop dump, of which the simulator's spin-wait). The dump's `totals:` line (the
    costs the dump holds), not `summary:`, which also counts other threads' work from before the zero."""
    total = summary = None
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                total = int(line.split()[1])
            elif line.startswith("summary:"):
                summary = int(line.split()[1])
    total = total if total is not None else (summary or 0)
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", path],
                       capture_output=True, text=True)
    spin = 0
    for line in p.stdout.splitlines():
        if "sim::WaitUntilNs" in line:
            spin = max(spin, int(line.split()[0].replace(",", "")))
    return total, spin


def callgrind_inclusive(path, needles):
    """Inclusive instructions of the first function whose line holds each needle."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", path],
                       capture_output=True, text=True)
    found = {n: 0 for n in needles}
    for line in p.stdout.splitlines():
        for n in needles:
            if n in line and found[n] == 0:
                found[n] = int(line.split()[0].replace(",", ""))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rounds", type=int, default=0, help="end-to-end rounds (default 5)")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--only", help="comma list of steps: exporters,bench_wrappers,bench_window_end,"
                    "end to end,memory,host loop,callgrind,load cost,python stacks,tools")
    ap.add_argument("--host-steps", type=int, default=0, help="steps of the host-limited loop (default 20000)")
    ap.add_argument("--host-rounds", type=int, default=0, help="interleaved rounds of the host loop (default 9)")
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions per step of the host loop under valgrind --tool=callgrind "
                    "(repeatable on a loaded machine; needs valgrind)")
    ap.add_argument("--callgrind-steps", type=int, default=2000)
    ap.add_argument("--keep-callgrind", help="directory to keep the callgrind.out files in")
    ap.add_argument("--formats", help="PROF_FORMATS for every agent run (default: the agent's, chrome,summary,html); "
                    "chrome,summary measures the agent without the report page")
    ap.add_argument("--require-agent", action="store_true",
                    help="fail when an agent figure cannot be produced (CTest sets it once the agent's "
                    "wrappers and runtime are in the tree; before that they are reported as skipped)")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    smoke = args.smoke
    bench_bin = os.path.join(build, "test", "bench")
    global PEAK_RSS
    PEAK_RSS = os.path.join(bench_bin, "bench_peak_rss")
    libprof = os.path.join(build, "agent", "libprof.so")
    sim_lib = os.path.join(build, "test", "sim", "lib")
    kineto_dir = os.environ.get("KINETO_TRACES") or os.path.join(HERE, "..", "..", "..", "shared", "data", "kineto-traces")
    figures = {}
    problems = []
    tmp = tempfile.mkdtemp(prefix="libprof-bench-")
    small = ["--smoke"] if smoke else []

    skipped = []

    def step(name, fn, needs_agent=False):
        if args.only and name not in args.only.split(","):
            return
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        try:
            fn()
        except (Failure, OSError, ValueError, KeyError) as e:
            (skipped if needs_agent and not args.require_agent else problems).append(f"{name}: {e}")

    # --- exporters (and a trace for the kernel-event size check) ---
    our_trace = os.path.join(tmp, "bench.pt.trace.json")

    def exporters():
        figures.update(run_figures([os.path.join(bench_bin, "bench_exporters"), "--trace-out", our_trace] + small))
        with open(our_trace) as f:
            ours, our_fields = kernel_event_sizes(f.read(), 5000)
        theirs, their_fields = kineto_kernel_bytes(kineto_dir)
        if not ours or not theirs:
            raise Failure("no kernel events to compare (ours %d, Kineto %d)" % (len(ours), len(theirs)))
        kineto = statistics.median(theirs)
        missing = sorted(their_fields - our_fields)
        extra = sorted(our_fields - their_fields)
        figures["kernel_event_bytes"] = dict(
            stats(ours), unit="B", target=kineto,
            note=f"Kineto median {kineto:.0f} B over {len(theirs)} kernel events"
            + (f"; fields Kineto has and we lack: {', '.join(missing)}" if missing else "")
            + (f"; fields only we write: {', '.join(extra)}" if extra else ""))

    step("exporters", exporters)

    # --- in-process agent micro-benchmarks ---
    for exe, extra in (("bench_wrappers", ["--pin"]), ("bench_window_end", [])):
        path = os.path.join(bench_bin, exe)

        def micro(path=path, extra=extra):
            if not os.path.exists(path):
                raise Failure("not built (the agent's wrappers/runtime were missing at configure time)")
            figures.update(run_figures([path] + extra + small))

        step(exe, micro, needs_agent=True)

    # --- end to end on the simulated stack ---
    storm = os.path.join(bench_bin, "launch_storm")
    base = dict(os.environ)
    for k in list(base):
        if k.startswith("PROF_") or k == "LD_PRELOAD":
            del base[k]
    if args.formats:
        base["PROF_FORMATS"] = args.formats
    base["LD_LIBRARY_PATH"] = sim_lib + (":" + base["LD_LIBRARY_PATH"] if base.get("LD_LIBRARY_PATH") else "")
    # Simulated kernels of 100 ns: the GPU keeps up, the loop is bound by
    # launches (as a real loop of tiny kernels is), not by the device model.
    base["SIM_KERNEL_NS"] = "tiny=100"
    steps, launches = (4, 200) if smoke else (200, 5000)  # 1M launches
    wargs = ["--steps", str(steps), "--launches", str(launches)]
    rounds = 1 if smoke else (args.rounds or 5)
    wait_rounds = rounds if smoke else 3 * rounds
    active = 2 if smoke else 10

    def e2e():
        if not os.path.exists(libprof):
            raise Failure(f"{libprof} not built")
        rec = dict(STEP="sync", WAIT=0, WARMUP=0, ACTIVE=active, REPEAT=0)
        variants = {
            "bare": base,
            "wait": agent_env(base, libprof, os.path.join(tmp, "wait"), STEP="sync", WAIT=10**9),
            "record": agent_env(base, libprof, os.path.join(tmp, "rec"), **rec),
            "record_host": agent_env(base, libprof, os.path.join(tmp, "rech"), ACTIVITIES="runtime", **rec),
        }
        names = list(variants)
        runs = {n: [] for n in names}  # (result, rusage CPU ns of the whole process)
        written, lost = {}, {n: {} for n in names}
        for r in range(rounds):
            for k in range(len(names)):
                n = names[(k + r) % len(names)]
                res, _, err, cpu_ns = run_workload_rss(storm, wargs, variants[n], want_cpu=True)
                runs[n].append((res, cpu_ns))
                out = variants[n].get("PROF_OUTPUT_DIR")
                if out and os.path.isdir(out):  # traces are large: count, then delete
                    traces, losses = trace_losses(out)
                    written[n] = written.get(n, 0) + traces
                    for key, v in losses.items():
                        lost[n][key] = lost[n].get(key, 0) + v
                    shutil.rmtree(out)
        total = steps * launches
        loop = lambda v, i: runs[v][i][0]["loop_ns"]
        main_cpu = lambda v, i: runs[v][i][0]["loop_cpu_ns"]
        other_cpu = lambda v, i: runs[v][i][1] - runs[v][i][0]["loop_cpu_ns"]
        per = lambda f, v: [(f(v, i) - f("bare", i)) / total for i in range(rounds)]
        ratio = lambda v: [loop(v, i) / loop("bare", i) for i in range(rounds)]
        # Waiting costs little, so its ratio needs more rounds than one
        # recording round buys: extra bare/wait pairs, interleaved as well.
        for r in range(wait_rounds - rounds):
            for n in (("bare", "wait") if r % 2 == 0 else ("wait", "bare")):
                res, _, _, cpu_ns = run_workload_rss(storm, wargs, variants[n], want_cpu=True)
                runs[n].append((res, cpu_ns))
        pairs = len(runs["wait"])
        wait = [loop("wait", i) / loop("bare", i) for i in range(pairs)]
        figures["e2e_wait_ratio"] = dict(stats(wait), unit="x",
                                         note=f"{total} launches in {steps} steps, {pairs} interleaved rounds, "
                                         "SIM_KERNEL_NS=tiny=100 (launch-bound); app-thread CPU ratio %.4f" %
                                         statistics.median([main_cpu("wait", i) / main_cpu("bare", i)
                                                            for i in range(pairs)]))
        figures["e2e_record_ratio"] = dict(stats(ratio("record")), unit="x",
                                           note=f"windows of {active} steps, repeat forever, chrome+summary written")
        figures["e2e_bare_launch_ns"] = dict(stats([loop("bare", i) / total for i in range(rounds)]), unit="ns/launch",
                                             note="wall; main-thread CPU %.0f ns/launch" % statistics.median(
                                                 [main_cpu("bare", i) / total for i in range(rounds)]))
        figures["e2e_record_host_ratio"] = dict(stats(ratio("record_host")), unit="x")
        figures["e2e_record_added_ns"] = dict(stats(per(loop, "record")), unit="ns/launch", note="wall")
        figures["e2e_record_app_cpu_ns"] = dict(stats(per(main_cpu, "record")), unit="ns/launch",
                                                note="CPU added on the application thread")
        figures["e2e_record_other_cpu_ns"] = dict(stats(per(other_cpu, "record")), unit="ns/launch",
                                                  note="CPU added on other threads (writer, exporters) + start/exit")
        figures["e2e_record_host_app_cpu_ns"] = dict(stats(per(main_cpu, "record_host")), unit="ns/launch",
                                                     note="PROF_ACTIVITIES=runtime: no kernel records")
        figures["e2e_wait_app_cpu_ns"] = dict(
            stats([(main_cpu("wait", i) - main_cpu("bare", i)) / total for i in range(pairs)]), unit="ns/launch")
        if "wrapper_record_ns" in figures:
            figures["e2e_record_wrapper_ns"] = dict(figures["wrapper_record_ns"], note="from bench_wrappers")
        if not written.get("record"):
            raise Failure("the recording runs wrote no trace")
        figures["e2e_record_ratio"]["note"] += f"; {written['record']} windows written"
        if any(lost["record"].values()):
            figures["e2e_record_ratio"]["note"] += f"; losses {lost['record']}"

    step("end to end", e2e, needs_agent=True)

    # --- memory and the e2e window-end stall: one window over every step ---
    def memory():
        if not os.path.exists(libprof):
            raise Failure(f"{libprof} not built")
        bare_rss = []
        for _ in range(1 if smoke else 3):
            _, rss, _ = run_workload_rss(storm, wargs, base)
            bare_rss.append(rss)
        bare = statistics.median(bare_rss) / 1024.0
        _, rss, _ = run_workload_rss(storm, wargs, agent_env(base, libprof, os.path.join(tmp, "memwait"),
                                                             STEP="sync", WAIT=10**9))
        figures["mem_over_bare_waiting_mb"] = dict(stats([rss / 1024.0 - bare]), unit="MB",
                                                   note="agent loaded, no window: code, logger, tables")
        default_cap = 256
        caps = [default_cap] + ([1] if smoke else [64, 16, 4])
        stall_samples, stall_cpu, switches = [], [], []
        for cap in caps:
            out = os.path.join(tmp, f"mem{cap}")
            env = agent_env(base, libprof, out, STEP="sync", WAIT=0, WARMUP=0, ACTIVE=steps, REPEAT=1,
                            BUFFER_MB=cap)
            res, rss, _ = run_workload_rss(storm, wargs, env)
            traces, losses = trace_losses(out)
            shutil.rmtree(out, ignore_errors=True)
            dropped = sum(v for k, v in losses.items() if k.endswith("dropped"))
            over = rss / 1024.0 - bare
            label = f"memory over bare, PROF_BUFFER_MB={cap}" + (" (default)" if cap == default_cap else "")
            TARGETS[f"mem_over_bare_mb_{cap}"] = (label, "<=", cap + 32.0)
            figures[f"mem_over_bare_mb_{cap}"] = dict(
                stats([over]), unit="MB",
                note=f"bare peak {bare:.0f} MB; {traces} trace(s); dropped {dropped} ({losses or 'no trace'})")
            stall_samples.append((res["sync_last_ns"] - res["sync_median_ns"]) / 1e6)
            stall_cpu.append(res["sync_last_cpu_ns"] / 1e6)
            switches.append(f"{res['sync_last_blocked']}/{res['sync_last_preempted']}")
        # Every run above ends one window of all its launches at its last
        # synchronize; the cap changes what is kept, not what the end does.
        figures["window_end_stall_e2e_ms"] = dict(
            stats(stall_samples), unit="ms",
            note=f"the last sync (it ends one window of {steps * launches} launches, then the schedule "
            f"finishes) minus the median sync, {len(stall_samples)} runs; worst {max(stall_samples):.2f} ms; "
            f"app-thread CPU in it: median {statistics.median(stall_cpu):.3f} ms, worst {max(stall_cpu):.3f} ms; "
            f"blocked/preempted switches in it per run: {', '.join(switches)}")

    step("memory", memory, needs_agent=True)

    # --- the host-limited loop: waiting per step source, recording ---
    host = os.path.join(bench_bin, "host_loop")
    hbase = dict(base)
    hbase["SIM_KERNEL_NS"] = "host_k=100"
    host_steps = 200 if smoke else (args.host_steps or 20000)
    host_rounds = 1 if smoke else (args.host_rounds or 9)

    def host_variants(out_root, loop_steps=host_steps, warmup_steps=HOST_WARMUP_STEPS):
        def agent(name, **prof):
            env = agent_env(hbase, libprof, os.path.join(out_root, name), **prof)
            env["NVTX_INJECTION64_PATH"] = libprof  # as `prof run` sets it
            return env
        wait = dict(WAIT=10**9)
        return {
            "bare": hbase,
            "wait_time": agent("wait_time", STEP="time:100ms", **wait),
            "wait_sync": agent("wait_sync", STEP="sync", **wait),
            "wait_api": agent("wait_api", STEP="api:cudaStreamSynchronize", **wait),
            "wait_kernel": agent("wait_kernel", STEP="kernel:host_k0", **wait),
            "wait_nvtx": agent("wait_nvtx", STEP="nvtx:host_step", **wait),
            "wait_auto": agent("wait_auto", STEP="auto", **wait),
            "record": agent("record", STEP="sync", WAIT=0, WARMUP=0, ACTIVE=2 if smoke else 10, REPEAT=0),
            # One window of exactly the measured loop's steps (host_loop's
            # warm-up steps wait and warm up); the budget raised so that a
            # 20,000-step window loses nothing (the default 256 MB holds
            # about 15,000), as the trace's losses would tell a user to.
            "record_loop": agent("record_loop", STEP="sync", WAIT=warmup_steps - 10, WARMUP=10,
                                 ACTIVE=loop_steps, BUFFER_MB=1024),
        }

    def host_loop():
        if not os.path.exists(libprof) or not os.path.exists(host):
            raise Failure("libprof.so or host_loop not built")
        variants = host_variants(os.path.join(tmp, "host"))
        names = list(variants)
        runs = {n: [] for n in names}
        written, lost, loop_lost = 0, {}, {}
        hargs = ["--steps", str(host_steps)]
        for r in range(host_rounds):
            for k in range(len(names)):
                n = names[(k + r) % len(names)]
                res, _, _, cpu_ns = run_workload_rss(host, hargs, variants[n], want_cpu=True)
                runs[n].append((res, cpu_ns))
                out = variants[n].get("PROF_OUTPUT_DIR")
                if out and os.path.isdir(out):
                    traces, losses = trace_losses(out)
                    if n == "record":
                        written += traces
                        for key, v in losses.items():
                            lost[key] = lost.get(key, 0) + v
                    elif n == "record_loop":
                        check_loop_window(out, HOST_WARMUP_STEPS, host_steps)
                        for key, v in losses.items():
                            loop_lost[key] = loop_lost.get(key, 0) + v
                    elif traces - (n == "wait_auto" and held_provisional_window(out)):
                        raise Failure(f"{n}: a waiting run wrote {traces} trace(s)")
                    shutil.rmtree(out)
        launches = 4 * host_steps
        allcpu = lambda v, i: runs[v][i][0]["loop_all_cpu_ns"]
        appcpu = lambda v, i: runs[v][i][0]["loop_cpu_ns"]
        proc = lambda v, i: runs[v][i][1]
        wall = lambda v, i: runs[v][i][0]["loop_ns"]
        other = lambda v, i: allcpu(v, i) - appcpu(v, i)
        rounds_ = range(host_rounds)
        ratio = lambda f, v: [f(v, i) / f("bare", i) for i in rounds_]
        per_launch = lambda f, v: [(f(v, i) - f("bare", i)) / launches for i in rounds_]
        note = (f"{host_steps} steps, {host_rounds} interleaved rounds, median of per-round ratios of in-loop CPU "
                "(all threads); app-thread ratio %s")
        for n in names:
            if n.startswith("wait_"):
                figures[f"host_{n}_ratio"] = dict(stats(ratio(allcpu, n)), unit="x",
                                                  note=note % ("%.4f" % statistics.median(ratio(appcpu, n))))
        # Recording every step, one window over the loop (as Kineto was measured).
        figures["host_record_ratio"] = dict(
            stats(ratio(allcpu, "record_loop")), unit="x",
            note=f"one window of the loop's {host_steps} steps (PROF_BUFFER_MB=1024), chrome+summary written "
            f"after it; app-thread ratio {statistics.median(ratio(appcpu, 'record_loop')):.4f}; "
            f"losses {nonzero(loop_lost)}")
        figures["host_record_process_ratio"] = dict(stats(ratio(proc, "record_loop")), unit="x",
                                                    note="whole process (wait4): start-up, loop, writing, exit")
        figures["host_record_wall_ratio"] = dict(stats(ratio(wall, "record_loop")), unit="x")
        figures["host_record_writer_ns"] = dict(
            stats(per_launch(other, "record_loop")), unit="ns/launch",
            note="in-loop CPU of the agent's threads (writer, agent thread) per recorded launch")
        figures["host_record_app_ns"] = dict(stats(per_launch(appcpu, "record_loop")), unit="ns/launch")
        outside = lambda v, i: proc(v, i) - allcpu(v, i)
        figures["host_record_after_ns"] = dict(
            stats(per_launch(outside, "record_loop")), unit="ns/launch",
            note="whole-process CPU less in-loop CPU, over bare's: decoding, the trace and summary, exit")
        # The same loop in windows of 10 steps, repeated: the writer's
        # per-window costs, every 40 launches.
        figures["host_windows10_ratio"] = dict(stats(ratio(allcpu, "record")), unit="x",
                                               note=f"chrome+summary per window; {written} windows written; "
                                               f"losses {nonzero(lost)}")
        figures["host_windows10_writer_ns"] = dict(
            stats(per_launch(other, "record")), unit="ns/launch",
            note="a writer behind the loop seals the windows still queued after it, which this leaves out "
            "(whole-process and cg_record_window_ir count them)")
        figures["host_windows10_app_ns"] = dict(stats(per_launch(appcpu, "record")), unit="ns/launch")
        figures["host_windows10_process_ratio"] = dict(stats(ratio(proc, "record")), unit="x")
        figures["host_bare_step_ns"] = dict(stats([allcpu("bare", i) / host_steps for i in rounds_]), unit="ns/step",
                                            note=f"load average at the end: {os.getloadavg()[0]:.1f} "
                                            f"on {os.cpu_count()} CPUs")

    step("host loop", host_loop, needs_agent=True)

    def callgrind():
        valgrind = shutil.which("valgrind")
        if valgrind is None:
            raise Failure("valgrind not installed (apt-get install valgrind)")
        keep = args.keep_callgrind or os.path.join(tmp, "callgrind")
        os.makedirs(keep, exist_ok=True)
        cg_steps = 100 if smoke else args.callgrind_steps
        variants = host_variants(os.path.join(tmp, "cg"), loop_steps=cg_steps, warmup_steps=CG_WARMUP_STEPS)

        def run_host_loop(tag, env, steps, warmup, no_dump_hint):
            """host_loop under callgrind, its dumps as callgrind.<tag>.<pid>[.<n>] in keep (earlier ones of the
            tag removed): the process and the loop's dump (.1)."""
            out = os.path.join(keep, f"callgrind.{tag}")
            for old in os.listdir(keep):
                if old.startswith(f"callgrind.{tag}."):
                    os.remove(os.path.join(keep, old))
            p = subprocess.run([valgrind, "--tool=callgrind", f"--callgrind-out-file={out}.%p", host,
                                "--steps", str(steps), "--warmup-steps", str(warmup)],
                               env=env, capture_output=True, text=True)
            if p.returncode != 0:
                raise Failure(f"callgrind {tag} exited {p.returncode}: {p.stderr.strip()[-400:]}")
            parts = [f for f in os.listdir(keep) if f.startswith(f"callgrind.{tag}.") and f.endswith(".1")]
            if len(parts) != 1:
                raise Failure(f"callgrind {tag}: no loop dump{no_dump_hint}")
            return p, os.path.join(keep, parts[0])

        ir, hub = {}, {}
        for n in CG_VARIANTS:
            _, loop_dump = run_host_loop(n, variants[n], cg_steps, CG_WARMUP_STEPS,
                                         " (host_loop built without valgrind/callgrind.h?)")
            total, spin = callgrind_loop_ir(loop_dump)
            ir[n] = (total - spin) / cg_steps
            # The simulated CUPTI's per-call work while libprof is subscribed
            # (the hub's API enter/exit, inclusive, minus libprof's own
            # callback under it): the simulator standing in for NVIDIA's
            # CUPTI, whose cost cannot be measured here; reported apart.
            hub_enter, hub_exit, cb = "hub.cpp:simhub_api_enter ", "hub.cpp:simhub_api_exit ", "CallbackTrampoline("
            found = callgrind_inclusive(loop_dump, [hub_enter, hub_exit, cb])
            hub[n] = (found[hub_enter] + found[hub_exit] - found[cb]) / cg_steps
            out_dir = variants[n].get("PROF_OUTPUT_DIR", "/nonexistent")
            if n == "record" and os.path.isdir(out_dir):
                # The writer's cost per window, whole run (the loop's dump and
                # the rest: windows still queued at the loop's end are sealed
                # after it): repeatable, unlike the in-loop share.
                windows, _ = trace_losses(out_dir)
                collect, export = "CollectWindowImpl(", "WriteWindowFiles(prof::Window const&, prof::OutputOptions const&, prof::FileSystem&"
                writer = "prof::WriterThread::EnsureThread()::{lambda()#1}> > >::_M_run()"
                per = {collect: 0, export: 0, writer: 0}
                for dump in os.listdir(keep):
                    if dump.startswith(f"callgrind.{n}."):
                        for k, v in callgrind_inclusive(os.path.join(keep, dump), list(per)).items():
                            per[k] += v
                if windows:
                    launches = 4 * (cg_steps + CG_WARMUP_STEPS) / windows  # host_loop: 4 launches per step
                    total = (per[collect] + per[export]) / windows
                    INFO["cg_record_window_ir"] = "callgrind: record, writer Ir per window (collect + export, whole run)"
                    figures["cg_record_window_ir"] = dict(
                        stats([total]), unit="Ir/window",
                        note=f"{windows} windows of ~{launches:.0f} launches: {total / launches:.0f} Ir/launch; collect "
                        f"(CUPTI records, launch registry) {per[collect] / windows:.0f}, export (trace + summary "
                        f"files) {per[export] / windows:.0f} per window")
                    # Everything the writer thread did, per window: the above
                    # plus sealing (host events, NVTX ranges, allocation
                    # samples, strings, thread names) and the queue.
                    INFO["cg_record_writer_window_ir"] = "callgrind: record, writer thread Ir per window (all of it, whole run)"
                    figures["cg_record_writer_window_ir"] = dict(
                        stats([per[writer] / windows]), unit="Ir/window",
                        note=f"{per[writer] / launches / windows:.0f} Ir/launch; beyond collect + export: "
                        f"{(per[writer] - per[collect] - per[export]) / windows:.0f} per window")
            if n == "record_loop":
                check_loop_window(out_dir, CG_WARMUP_STEPS, cg_steps)
            shutil.rmtree(out_dir, ignore_errors=True)
        # Detection only: bare and auto on a loop of CG_DETECT_WARMUP +
        # CG_DETECT_STEPS iterations; the run whose log shows a decision
        # inside the measured steps is said so in the note.
        detect = {}
        decided = "not decided before the loop ended"
        for n in ("bare", "wait_auto"):
            p, loop_dump = run_host_loop(f"detect_{n}", variants[n], CG_DETECT_STEPS, CG_DETECT_WARMUP, "")
            total, spin = callgrind_loop_ir(loop_dump)
            # The application thread's share, and (auto) the one-time
            # subscription to CUPTI's callbacks the agent thread makes when it
            # first sees CUDA loaded (it falls in these steps or before them).
            inc = callgrind_inclusive(loop_dump, ["???:main [", "prof::Session::WatchCallsIfCuda() ["])
            detect[n] = (total - spin) / CG_DETECT_STEPS
            detect[n + "_main"] = inc["???:main ["] / CG_DETECT_STEPS
            detect[n + "_subscribe"] = inc["prof::Session::WatchCallsIfCuda() ["]
            m = re.search(r"found after (\d+) iterations", p.stderr)
            if n == "wait_auto" and m:
                decided = (f"DECIDED after {m.group(1)} iterations, inside the loop: not a detection-only figure"
                           if int(m.group(1)) <= CG_DETECT_WARMUP + CG_DETECT_STEPS else
                           f"decided after {m.group(1)} iterations, past the loop")
            shutil.rmtree(variants[n].get("PROF_OUTPUT_DIR", "/nonexistent"), ignore_errors=True)
        INFO["cg_wait_auto_detecting_ir"] = "callgrind: PROF_STEP=auto still detecting, Ir/step"
        steady = detect["wait_auto"] - detect["wait_auto_subscribe"] / CG_DETECT_STEPS
        figures["cg_wait_auto_detecting_ir"] = dict(
            stats([steady]), unit="Ir/step",
            note=f"{steady / detect['bare']:.4f} x bare ({detect['bare']:.0f} Ir/step on the same {CG_DETECT_STEPS} "
            f"steps after {CG_DETECT_WARMUP} warm-up steps), all threads less the one-time CUPTI subscription "
            f"({detect['wait_auto_subscribe']:.0f} Ir, on the agent thread; with it: "
            f"{detect['wait_auto'] / detect['bare']:.4f} x); application thread alone "
            f"{detect['wait_auto_main'] / detect['bare_main']:.4f} x; {decided}")
        for n in CG_VARIANTS:
            key = f"cg_{n}_ir"
            INFO[key] = f"callgrind: {n.replace('_', ' ')}, Ir/step = {ir[n] / ir['bare']:.4f} x bare"
            figures[key] = dict(stats([ir[n]]), unit="Ir/step",
                                note=f"{cg_steps} steps; {ir[n] / ir['bare']:.4f} x bare; "
                                "all threads inside the loop, sim::WaitUntilNs (the simulator's spin-wait) excluded")
            sim_cupti = hub[n] - hub["bare"]
            if (n.startswith("wait_") or n == "record_loop") and sim_cupti > 0.01 * ir["bare"]:
                key = f"cg_{n}_sim_cupti_ir"
                own = ir[n] - sim_cupti
                INFO[key] = f"callgrind: {n.replace('_', ' ')}, of which the simulated CUPTI while subscribed"
                figures[key] = dict(stats([sim_cupti]), unit="Ir/step",
                                    note=f"the simulator's CUPTI per-call work (not NVIDIA's, not measurable here); "
                                    f"without it {own:.0f} Ir/step = {own / ir['bare']:.4f} x bare")

    if args.callgrind or (args.only and "callgrind" in args.only.split(",")):
        step("callgrind", callgrind, needs_agent=True)

    # --- loading libprof.so into a process that makes no CUDA call ---
    def load_cost():
        if not os.path.exists(libprof):
            raise Failure(f"{libprof} not built")
        true = shutil.which("true") or "/bin/true"
        bare_env = {k: v for k, v in base.items() if k != "LD_LIBRARY_PATH"}
        prof_env = dict(bare_env, LD_PRELOAD=libprof, PROF_OUTPUT_DIR=os.path.join(tmp, "load"), PROF_LOG_LEVEL="warn")

        def once(env):
            """Wall ns from spawn to reaped, and the child's CPU ns (user + sys, all its threads)."""
            t0 = time.perf_counter_ns()
            pid = os.posix_spawn(true, [true], env)
            _, _, usage = os.wait4(pid, 0)
            return time.perf_counter_ns() - t0, (usage.ru_utime + usage.ru_stime) * 1e9

        for env in (bare_env, prof_env, bare_env, prof_env):
            once(env)  # page cache, loader cache
        # Interleaved pairs: the machine's drift hits both sides alike.
        bare, cost, cpu = [], [], []
        for _ in range(20 if smoke else 400):
            b = once(bare_env)
            p = once(prof_env)
            bare.append(b[0] / 1e6)
            cost.append((p[0] - b[0]) / 1e6)
            cpu.append((p[1] - b[1]) / 1e6)
        size_mb = os.path.getsize(libprof) / 1e6
        figures["load_cost_ms"] = dict(stats(cost), unit="ms",
                                       note=f"{true} spawned and waited for, bare and with LD_PRELOAD={libprof} "
                                       f"({size_mb:.1f} MB), {len(cost)} interleaved pairs; median of the differences "
                                       "(wall time: on a loaded machine the agent's threads wait for a CPU, see "
                                       "load_cost_cpu_ms)")
        figures["load_cost_cpu_ms"] = dict(stats(cpu), unit="ms")
        figures["load_bare_ms"] = dict(stats(bare), unit="ms")
        figures["load_libprof_mb"] = dict(stats([size_mb]), unit="MB")

    step("load cost", load_cost)

    # --- Python stacks (test/bench/python_stacks.py) ---
    def python_stacks():
        sys.path.insert(0, HERE)
        import python_stacks as bench  # noqa: E402
        try:
            figures.update(bench.run(build, rounds=args.rounds or 5, smoke=smoke))
        except RuntimeError as e:
            raise Failure(str(e))

    step("python stacks", python_stacks, needs_agent=True)
    # --- the prof tool on large traces (generated here, deleted after) ---
    def tools():
        gen = os.path.join(bench_bin, "bench_gen_trace")
        tool = os.path.join(build, "tools", "prof", "prof")
        # libprof's own trace of 50,000 steps (22 launches each: ~1 GB) and a
        # Kineto-shaped one of 1 GB; smoke: a few MB.
        shapes = {"libprof": ["libprof", "200" if smoke else "50000", "22"],
                  "kineto": ["kineto", "4" if smoke else "1024"]}
        for kind, gen_args in shapes.items():
            for gz in (False, True):
                path = os.path.join(tmp, f"big_{kind}.pt.trace.json" + (".gz" if gz else ""))
                p = subprocess.run([gen] + gen_args + [path], capture_output=True, text=True)
                if p.returncode != 0:
                    raise Failure(f"bench_gen_trace {' '.join(gen_args)} exited {p.returncode}: {p.stderr[-400:]}")
                info = json.loads(p.stdout.strip().splitlines()[-1])
                json_mb = info["bytes"] / 1e6
                for cmd in ("validate", "summary", "merge"):
                    argv = [tool, cmd, path] + (["-o", os.path.join(tmp, "merged.json")] if cmd == "merge" else [])
                    t0 = time.monotonic()
                    r = subprocess.run([PEAK_RSS] + argv, capture_output=True, text=True)
                    wall = time.monotonic() - t0
                    usage = [json.loads(l) for l in r.stdout.splitlines() if l.startswith('{"peak_rss_kb"')]
                    if r.returncode != 0 or not usage:
                        raise Failure(f"prof {cmd} {os.path.basename(path)} exited {r.returncode}: "
                                      f"{(r.stdout + r.stderr)[-600:]}")
                    cpu_s = usage[-1]["cpu_ns"] / 1e9
                    rss_mb = usage[-1]["peak_rss_kb"] / 1024.0
                    name = f"{kind} {'gzip' if gz else 'plain'}"
                    key = f"tool_{cmd}_{kind}_{'gz' if gz else 'json'}"
                    TARGETS[key + "_mbps"] = (f"prof {cmd}, {name}: MB of JSON per CPU second", ">=", 100.0)
                    TARGETS[key + "_rss_mb"] = (f"prof {cmd}, {name}: peak RSS", "<=", 256.0)
                    note = (f"{json_mb:.0f} MB of JSON ({info['events']} events"
                            + (f", {info['steps']} steps" if "steps" in info else "")
                            + f"), CPU {cpu_s:.2f} s (user+sys), wall {wall:.2f} s on a shared machine")
                    figures[key + "_mbps"] = dict(stats([json_mb / max(cpu_s, 1e-9)]), unit="MB/s", note=note)
                    figures[key + "_rss_mb"] = dict(stats([rss_mb]), unit="MB", note=note)
                os.remove(path)
                if os.path.exists(os.path.join(tmp, "merged.json")):
                    os.remove(os.path.join(tmp, "merged.json"))

    step("tools", tools)

    shutil.rmtree(tmp, ignore_errors=True)
    print_table(figures, smoke)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    for p in skipped:
        print(f"bench: skipped {p}", file=sys.stderr)
    for p in problems:
        print(f"bench: FAILED {p}", file=sys.stderr)
    missing = [k for k in TARGETS if k not in figures] if not args.only else []
    if missing:
        print(f"bench: figures missing: {', '.join(missing)}", file=sys.stderr)
    if skipped and not problems:
        return 0
    return 1 if problems or missing else 0


def fmt(v):
    if v != v:
        return "n/a"
    if abs(v) >= 1e5:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def print_table(figures, smoke):
    rows = [("figure", "value", "p10..p90", "target", "met")]
    for key, (label, cmp, target) in TARGETS.items():
        f = figures.get(key)
        if f is None:
            rows.append((label, "missing", "", "", "NO"))
            continue
        target = f.get("target", target)
        v = f["value"]
        met = (v <= target) if cmp == "<=" else (v >= target)
        verdict = "(smoke)" if smoke else ("yes" if met else "NO")
        rows.append((label, f"{fmt(v)} {f['unit']}", f"{fmt(f['p10'])}..{fmt(f['p90'])}", f"{cmp} {fmt(target)}", verdict))
    for key, label in INFO.items():
        f = figures.get(key)
        if f is not None:
            rows.append((label, f"{fmt(f['value'])} {f['unit']}", f"{fmt(f['p10'])}..{fmt(f['p90'])}", "-", "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for i, r in enumerate(rows):
        print("| " + " | ".join(c.ljust(widths[j]) for j, c in enumerate(r)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print()
    for key in list(TARGETS) + list(INFO):
        f = figures.get(key)
        if f and f.get("note"):
            print(f"- {key}: {f['note']}")


if __name__ == "__main__":
    sys.exit(main())
