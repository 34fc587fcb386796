#!/usr/bin/env python3
"""Runs CUDA programs on the simulated stack under libprof with short windows,
in both injection modes, optionally beside busy loops, and compares every
window with the sim's truth log (SIM_TRUTH_FILE) by correlation: per window
and per kind (kernel, memcpy, memset), which device records of the calls the
window holds are missing, which records it holds that it should not (their
call is not in the window, or the sim never ran them), and whether the
window reported the difference (its trace's `libprof.losses` counters and
its summary's data-loss line). A difference the window does not report is
an unreported discrepancy: the one failure a profiler must never have.

scripts/samples-truth-check.sh builds NVIDIA's cuda-samples and calls this;
test/integration/test_agent_busy_truth.py uses the same comparison
(check_window) on the suite's own workloads. docs/testing.md, "Device
records against the truth, on a busy machine", says what is compared.

    scripts/samples_truth_check.py --build build --bin DIR --programs a,b \\
        [--cwd-root DIR] [--busy N] [--runs N] [--step time:5ms] [--work DIR]

Exit status 1 if any window holds an unreported discrepancy (or a run's
exit status differs from the bare run's), 0 otherwise.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import time

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "test", "sim"))
import sim_truth  # noqa: E402  (the truth log's reader)

DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
KINDS = ("kernel", "memcpy", "memset")
API_CATS = ("cuda_runtime", "cuda_driver")
MODES = ("LD_PRELOAD", "CUDA_INJECTION64_PATH")
def schedule(step, wait, warmup, active):
    """Short windows, repeated until the program ends."""
    return dict(PROF_STEP=step, PROF_WAIT=str(wait), PROF_WARMUP=str(warmup), PROF_ACTIVE=str(active), PROF_REPEAT="0")

# Losses a window counts for its device records (trace `libprof.losses`):
# those split by kind (`<counter>_by_kind`), and those that are not.
DEVICE_LOSS_COUNTERS = ("device_records_missing", "device_records_untimed", "device_records_dropped",
                        "cupti_records_dropped", "device_records_elsewhere")
# Losses of calls (host events): a device record whose call is absent from
# the window is reported by these.
CALL_LOSS_COUNTERS = ("host_events_dropped", "host_events_late", "api_records_missing", "unrecorded_start_ns")


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("PROF_") or k.startswith("SIM_"))
           and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


# What libprof's own threads call (the writer: versions and device
# properties); a thread that calls nothing else is libprof's. Under
# LD_PRELOAD the allocation wrappers ask for the device right after an
# allocation, on the allocating thread.
OWN_THREAD_CALLS = {"cudaRuntimeGetVersion", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
                    "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute"}
ALLOCATIONS = {"cudaMalloc", "cudaMallocManaged", "cudaMallocPitch", "cudaMallocAsync", "cudaMallocAsync_ptsz",
               "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz", "cuMemAlloc_v2"}
DEVICE_QUERIES = {"cudaGetDevice", "cuCtxGetDevice"}
# How far inside a window's edges a call must lie (truth clock) to be
# required in it: libprof reads its clock a few instructions before the sim.
EDGE_SLACK_NS = 500_000


def own_calls(outermost):
    by_thread = collections.defaultdict(list)
    for c in outermost:
        by_thread[c["thread"]].append(c)
    own = set()
    for calls in by_thread.values():
        if all(c["name"] in OWN_THREAD_CALLS for c in calls):
            own.update(c["correlation"] for c in calls)
            continue
        own.update(c["correlation"] for prev, c in zip(calls, calls[1:])
                   if c["name"] in DEVICE_QUERIES and prev["name"] in ALLOCATIONS)
    return own


class Truth:
    """A run's truth log: device operations by correlation ({corr: [op]}),
    and the program's outermost runtime calls (libprof's own left out), each
    with `after_ns`, when its thread's previous call returned (libprof times
    a call from its wrapper's entry, which a descheduled thread may reach
    well before the sim's own clock read)."""

    def __init__(self, path):
        outermost, op_lines = sim_truth.read_large(path, KINDS)
        self.ops = collections.defaultdict(list)
        for op in op_lines:
            self.ops[op["correlation"]].append(op)
        own = own_calls(outermost)
        self.calls = [c for c in outermost if c["domain"] == "runtime" and c["correlation"] not in own
                      and c["name"] != "__cudaUnregisterFatBinary"]  # module teardown at exit
        last_end = {}
        for c in sorted(self.calls, key=lambda c: c["start_rep_ns"]):
            c["after_ns"] = last_end.get(c["thread"], c["start_rep_ns"])
            last_end[c["thread"]] = c["end_rep_ns"]

    def kinds(self, corr):
        return [op["type"] for op in self.ops.get(corr, [])]


def clock_offset(windows, truth):
    """Trace time (Unix ns) minus truth time, from a device record (CUPTI
    times it on the agent clock, the instant the truth log's reported clock
    gives), else from a call, to within a few microseconds."""
    for trace, _ in windows:
        base = trace.get("baseTimeNanoseconds", 0)
        for e in trace.get("traceEvents", []):
            if e.get("cat") in DEVICE_CATS:
                for op in truth.ops.get(e.get("args", {}).get("correlation"), []):
                    if op["type"] == DEVICE_CATS[e["cat"]]:
                        return base + round(e["ts"] * 1000) - op["start_rep_ns"]
    by_corr = {c["correlation"]: c for c in truth.calls}
    for trace, _ in windows:
        base = trace.get("baseTimeNanoseconds", 0)
        for e in trace.get("traceEvents", []):
            call = by_corr.get(e.get("args", {}).get("correlation")) if e.get("cat") in API_CATS else None
            if call is not None and e.get("ph") == "X":
                return base + round(e["ts"] * 1000) - call["start_rep_ns"]
    return None


def read_window(trace_path):
    opener = open
    if trace_path.endswith(".gz"):
        import gzip
        opener = gzip.open
    with opener(trace_path, "rt") as f:
        trace = json.load(f)
    stem = re.sub(r"\.pt\.trace\.json(\.gz)?$", "", trace_path)
    summary = ""
    if os.path.exists(stem + ".summary.txt"):
        with open(stem + ".summary.txt") as f:
            summary = f.read()
    return trace, summary


def reported_by_kind(losses):
    """What a window reports lost per kind of device record, and what it
    reports lost without a kind (counters that are not split)."""
    by_kind = collections.Counter()
    unkinded = 0
    for name in DEVICE_LOSS_COUNTERS:
        split = losses.get(name + "_by_kind")
        if isinstance(split, dict):
            for kind, n in split.items():
                by_kind[kind] += n
            unkinded += max(0, losses.get(name, 0) - sum(split.values()))
        else:
            unkinded += losses.get(name, 0)
    return by_kind, unkinded


def data_loss_line(summary):
    """The summary's data-loss finding (its lines), or ""."""
    m = re.search(r"(?ms)^ \[data-loss\].*?(?=^ \[|^==|\Z)", summary)
    return m.group(0) if m else ""


def span_calls(trace, truth, offset):
    """The truth's calls made well inside the window's span (first step's
    start, after the stretch it reports it did not record, to last step's
    end; EDGE_SLACK_NS in from each edge)."""
    if offset is None:
        return []
    w = trace.get("libprof", {}).get("window", {})
    unrecorded = trace.get("libprof", {}).get("losses", {}).get("unrecorded_start_ns", 0)
    lo = w.get("start_ns", 0) - offset + unrecorded + EDGE_SLACK_NS
    hi = w.get("end_ns", 0) - offset - EDGE_SLACK_NS
    return [c for c in truth.calls if c["after_ns"] >= lo and c["end_rep_ns"] <= hi]


def uncovered(missing, orphans, unknown, absent, n_absent_calls, losses):
    """The differences from the truth a window's losses do not cover, per
    kind ({} when all are covered). missing, orphans, unknown, absent:
    Counters by kind; n_absent_calls: calls of its span it lacks."""
    by_kind, unkinded = reported_by_kind(losses)
    lost_calls = sum(losses.get(name, 0) for name in CALL_LOSS_COUNTERS if name != "unrecorded_start_ns")
    # Losses counted without a kind (CUPTI's own drops, records of no kind
    # dropped past the budget) cover device records of any kind first...
    spare = unkinded
    short = {}
    for kind in KINDS:
        lacking = max(0, missing[kind] - by_kind[kind])
        covered = min(lacking, spare)
        spare -= covered
        short[kind] = lacking - covered
    # ...and what is left of them, with the calls the window counts lost (a
    # dropped or late host event, a call's own record that never came),
    # covers the calls of its span it lacks (CUPTI's drops take API records
    # too). A record whose call is absent is covered by any loss of calls.
    calls_short = max(0, n_absent_calls - lost_calls - spare)
    calls_lost = lost_calls or unkinded or losses.get("unrecorded_start_ns", 0)
    unreported = {}
    for kind in KINDS:
        lone = 0 if calls_lost else orphans[kind]
        gone = absent[kind] if calls_short else 0
        if short[kind] or lone or unknown[kind] or gone:
            unreported[kind] = dict(missing=short[kind], orphans=lone, unknown=unknown[kind], absent=gone)
    if calls_short and not unreported:
        unreported["calls"] = dict(absent=calls_short)
    return unreported


def check_window(trace, summary, truth, offset):
    """One window against the truth. Returns a dict: per kind `want`, `got`,
    `missing` (records of the calls the window holds, absent from it),
    `absent` (records of calls the truth has inside the window's span that
    the window does not hold, with the calls: `absent_calls`), `orphans`
    (records whose call the window does not hold), `unknown` (records the
    sim never made); the losses the window reports; and `unreported`: the
    differences those losses do not cover, per kind ({} when the window is
    true or says how it is not)."""
    events = trace.get("traceEvents", [])
    held = {e["args"]["correlation"] for e in events
            if e.get("cat") in API_CATS and e.get("ph") == "X" and "correlation" in e.get("args", {})}
    got = collections.Counter((DEVICE_CATS[e["cat"]], e.get("args", {}).get("correlation")) for e in events
                              if e.get("cat") in DEVICE_CATS)
    want = collections.Counter((kind, c) for c in held for kind in truth.kinds(c))
    truth_all = collections.Counter((op["type"], c) for c, ops in truth.ops.items() for op in ops)
    per_kind = lambda counter: collections.Counter(k for (k, _), n in counter.items() for _ in range(n))
    missing = per_kind(want - got)
    orphans = per_kind(collections.Counter({k: n for k, n in got.items() if k[1] not in held}))
    unknown = per_kind(got - truth_all)
    absent_calls = [c for c in span_calls(trace, truth, offset) if c["correlation"] not in held]
    absent = collections.Counter(kind for c in absent_calls for kind in truth.kinds(c["correlation"]))
    losses = dict(trace.get("libprof", {}).get("losses", {}))
    by_kind, unkinded = reported_by_kind(losses)
    unreported = uncovered(missing, orphans, unknown, absent, len(absent_calls), losses)
    line = data_loss_line(summary)
    lost_calls = sum(losses.get(name, 0) for name in CALL_LOSS_COUNTERS)
    reported_any = bool(sum(by_kind.values()) or unkinded or lost_calls)
    # Counted but not said: the summary must carry the loss.
    line_missing = reported_any and not line
    w = trace.get("libprof", {}).get("window", {})
    return dict(first_step=w.get("first_step"), want=per_kind(want), got=per_kind(got), missing=missing,
                orphans=orphans, unknown=unknown, absent=absent,
                absent_calls=[(c["name"], c["correlation"]) for c in absent_calls[:8]], n_absent_calls=len(absent_calls),
                reported_by_kind=by_kind, reported_unkinded=unkinded, reported_any=reported_any,
                data_loss_line=line, line_missing=line_missing, unreported=unreported,
                losses={k: v for k, v in losses.items() if v})


def duration_ns(text):
    """'5ms' -> 5000000 (PROF_STEP=time:'s forms); 0 if not one."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ns|us|ms|s)", text.strip())
    return int(float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]) if m else 0


def calls_in_no_window(windows, truth, offset, sched):
    """Calls the truth has in an active step of the schedule that no written
    window holds: a window not written at all (or one that lost them without
    a count) would hide them from every per-window check. Steps are
    `time:` slices: the written windows give their length and origin.
    Returns [(step, name, correlation)]."""
    if offset is None or not windows or not sched["PROF_STEP"].startswith("time:"):
        return []
    step_ns = duration_ns(sched["PROF_STEP"][len("time:"):])
    spans = []
    for trace, _ in windows:
        w = trace.get("libprof", {}).get("window", {})
        if "first_step" in w and "last_step" in w:
            spans.append((w["first_step"], w["last_step"], w.get("start_ns", 0), w.get("end_ns", 0)))
    if not spans or not step_ns:
        return []
    # Step k begins at origin + k * step_ns; a window's start is its first
    # step's (the most common estimate: a late agent thread moves none).
    origin = collections.Counter(start - first * step_ns for first, _, start, _ in spans).most_common(1)[0][0]
    written = {k for f, l, _, _ in spans for k in range(f, l + 1)}
    last_written = max(l for _, l, _, _ in spans)
    wait, warmup = int(sched["PROF_WAIT"]), int(sched["PROF_WARMUP"])
    cycle = wait + warmup + int(sched["PROF_ACTIVE"])
    held = set()
    for trace, _ in windows:
        held.update(e["args"]["correlation"] for e in trace.get("traceEvents", [])
                    if e.get("cat") in API_CATS and "correlation" in e.get("args", {}))
    lost = []
    for c in truth.calls:
        if c["correlation"] in held:
            continue
        lo = (c["after_ns"] + offset - origin) / step_ns
        hi = (c["end_rep_ns"] + offset - origin) / step_ns
        k = int(lo)
        # Wholly inside one step, EDGE_SLACK_NS from its edges, before the
        # last window's end (the process may end in a step it never wrote).
        if k != int(hi) or lo - k < EDGE_SLACK_NS / step_ns or int(hi) + 1 - hi < EDGE_SLACK_NS / step_ns:
            continue
        if k < 0 or k > last_written or k % cycle < wait + warmup or k in written:
            continue
        lost.append((k, c["name"], c["correlation"]))
    return lost


def check_run(out_dir, truth_path, sched):
    """Every window of a run against its truth log; and the calls of the
    schedule's active steps that are in no window (`unwritten`)."""
    truth = Truth(truth_path)
    windows = [read_window(p) for p in sorted(glob.glob(os.path.join(out_dir, "*.pt.trace.json*")))]
    offset = clock_offset(windows, truth)
    return [check_window(trace, summary, truth, offset) for trace, summary in windows], \
        calls_in_no_window(windows, truth, offset, sched)


class BusyLoops:
    """n processes spinning beside the programs (each one core's worth)."""

    def __init__(self, n):
        self.procs = [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(n)]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def run_program(cmd, cwd, env, timeout):
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, proc.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def run_checks(programs, sim_lib, libprof, work, sched, runs, busy, timeout=600, log=print, keep_truth=False):
    """programs: [(name, argv, cwd)]. Runs each bare once, then under each
    mode `runs` times with the schedule `sched` (PROF_* and any other
    variables the runs get), beside `busy` busy loops. Returns rows:
    dict(program, mode, run, rc, rc_same, windows=[check_window results],
    unwritten=calls_in_no_window's, out_dir, truth_path). A run's truth log
    is removed when nothing was wrong, unless keep_truth."""
    rows = []
    with BusyLoops(busy):
        for name, argv, cwd in programs:
            base = os.path.join(work, name)
            subprocess.run(["rm", "-rf", base])
            os.makedirs(base)
            bare_rc, _ = run_program(argv, cwd, clean_env({"LD_LIBRARY_PATH": sim_lib}), timeout)
            for r in range(runs):
                for mode in MODES:
                    key = f"{mode}.{r}"
                    out_dir = os.path.join(base, key)
                    truth_path = os.path.join(base, key + ".truth.jsonl")
                    env = clean_env(dict(sched, LD_LIBRARY_PATH=sim_lib, SIM_TRUTH_FILE=truth_path,
                                         PROF_OUTPUT_DIR=out_dir, **{mode: libprof}))
                    began = time.monotonic()
                    rc, stderr = run_program(argv, cwd, env, timeout)
                    windows, unwritten = check_run(out_dir, truth_path, sched)
                    rows.append(dict(program=name, mode=mode, run=r, rc=rc, rc_same=rc == bare_rc, windows=windows,
                                     unwritten=unwritten, seconds=time.monotonic() - began, stderr=stderr,
                                     out_dir=out_dir, truth_path=truth_path))
                    bad = sum(1 for w in windows if w["unreported"] or w["line_missing"])
                    if os.path.exists(truth_path) and not bad and not unwritten and not keep_truth:
                        os.remove(truth_path)  # large; kept where something is wrong
                    log(f"{name:28s} {mode:22s} run {r}: {len(windows):4d} windows, {bad} with unreported "
                        f"discrepancies, {sum(1 for w in windows if w['reported_any'])} reporting a loss"
                        + (f", {len(unwritten)} calls in no window" if unwritten else "")
                        + ("" if rc == bare_rc else f"; exit {rc}, bare {bare_rc}"))
    return rows


def report(rows, busy, sched):
    """Markdown: per program and mode, and totals."""
    lines = [f"Short windows (PROF_STEP={sched['PROF_STEP']}, wait {sched['PROF_WAIT']}, warmup {sched['PROF_WARMUP']}, "
             f"active {sched['PROF_ACTIVE']}, repeat 0), {busy} busy loops beside; "
             f"{os.cpu_count()} cores.", "",
             "| program | mode | runs | windows | kernels want/got | memcpy want/got | memset want/got "
             "| missing (k/c/s) | of absent calls (k/c/s) | without call | not in truth | calls in no window "
             "| windows reporting a loss | unreported |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = collections.OrderedDict()
    for row in rows:
        groups.setdefault((row["program"], row["mode"]), []).append(row)
    totals = collections.Counter()
    for (program, mode), rs in groups.items():
        ws = [w for r in rs for w in r["windows"]]
        want = sum((w["want"] for w in ws), collections.Counter())
        got = sum((w["got"] for w in ws), collections.Counter())
        missing = sum((w["missing"] for w in ws), collections.Counter())
        absent = sum((w["absent"] for w in ws), collections.Counter())
        orphans = sum(sum(w["orphans"].values()) for w in ws)
        unknown = sum(sum(w["unknown"].values()) for w in ws)
        reporting = sum(1 for w in ws if w["reported_any"])
        unreported = sum(1 for w in ws if w["unreported"] or w["line_missing"])
        unwritten = sum(len(r["unwritten"]) for r in rs)
        lines.append(f"| {program} | {mode} | {len(rs)} | {len(ws)} | {want['kernel']}/{got['kernel']} "
                     f"| {want['memcpy']}/{got['memcpy']} | {want['memset']}/{got['memset']} "
                     f"| {missing['kernel']}/{missing['memcpy']}/{missing['memset']} "
                     f"| {absent['kernel']}/{absent['memcpy']}/{absent['memset']} | {orphans} | {unknown} | {unwritten} "
                     f"| {reporting} | {unreported} |")
        totals.update(windows=len(ws), reporting=reporting, unreported=unreported, orphans=orphans,
                      unknown=unknown, missing=sum(missing.values()), absent=sum(absent.values()),
                      reported_records=sum(sum(w["reported_by_kind"].values()) + w["reported_unkinded"] for w in ws),
                      rc_changed=sum(1 for r in rs if not r["rc_same"]), unwritten=unwritten)
    lines += ["", f"Totals: {totals['windows']} windows; {totals['missing']} device records missing, "
              f"{totals['absent']} of calls absent from their window's span, {totals['orphans']} without their call, {totals['unknown']} not in the truth log, "
              f"{totals['unwritten']} calls of active steps in no window; "
              f"{totals['reporting']} windows report a loss ({totals['reported_records']} device records counted "
              f"lost); {totals['unreported']} windows with an unreported discrepancy; "
              f"{totals['rc_changed']} runs whose exit status differs from the bare run's."]
    details = []
    for row in rows:
        for w in row["windows"]:
            if w["unreported"] or w["line_missing"]:
                details.append(f"- {row['program']} {row['mode']} run {row['run']} window {w['first_step']}: "
                               f"unreported {w['unreported']}{' (losses counted, no data-loss line)' if w['line_missing'] else ''}; "
                               f"want {dict(w['want'])} got {dict(w['got'])}; absent calls {w['n_absent_calls']} {w['absent_calls']}; "
                               f"losses {w['losses']}")
    for row in rows:
        if row["unwritten"]:
            details.append(f"- {row['program']} {row['mode']} run {row['run']}: {len(row['unwritten'])} calls in no "
                           f"window (step, call, correlation): {row['unwritten'][:6]}")
    if details:
        lines += ["", "Unreported discrepancies:"] + details[:200]
    return "\n".join(lines), totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="libprof's build directory")
    ap.add_argument("--bin", required=True, help="folder of the built programs")
    ap.add_argument("--programs", required=True, help="comma-separated program names (files in --bin)")
    ap.add_argument("--cwd-root", default="", help="a file <bin>/<name>.cwd names each program's working folder")
    ap.add_argument("--work", required=True, help="where runs, truth logs and report.md go")
    ap.add_argument("--busy", type=int, default=0, help="busy loops beside the programs")
    ap.add_argument("--runs", type=int, default=1, help="runs of each program in each mode")
    ap.add_argument("--step", default="time:5ms", help="PROF_STEP of the short windows")
    ap.add_argument("--schedule", default="0,0,1", help="PROF_WAIT,PROF_WARMUP,PROF_ACTIVE (default 0,0,1: "
                    "one-step windows back to back)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a run may take")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    sim_lib = os.path.join(build, "test/sim/lib")
    libprof = os.path.join(build, "agent/libprof.so")
    programs = []
    for name in [p for p in args.programs.split(",") if p]:
        binary = os.path.abspath(os.path.join(args.bin, name))
        cwd_file = binary + ".cwd"
        cwd = open(cwd_file).read().strip() if os.path.exists(cwd_file) else os.path.dirname(binary)
        programs.append((name, [binary], cwd))
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    wait, warmup, active = (int(x) for x in args.schedule.split(","))
    sched = schedule(args.step, wait, warmup, active)
    rows = run_checks(programs, sim_lib, libprof, os.path.join(work, "runs"), sched, args.runs, args.busy,
                      args.timeout)
    text, totals = report(rows, args.busy, sched)
    with open(os.path.join(work, "report.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 1 if totals["unreported"] or totals["unwritten"] or totals["rc_changed"] else 0


if __name__ == "__main__":
    sys.exit(main())
