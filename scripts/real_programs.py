#!/usr/bin/env python3
"""Runs programs built by scripts/real-programs.sh on the simulated stack,
bare and under libprof (LD_PRELOAD and CUDA_INJECTION64_PATH; one window
over the whole run and many short windows), and compares every window with
the sim's truth log by correlation (docs/real-programs.md), and with no
PROF_* variable set (every program that makes CUDA calls must write at
least one window). Prints a
Markdown report and writes it to <work>/report.md; exit status 1 if any
window misses a device record, holds one whose call it does not hold, holds
one the sim never ran, or a run's exit status differs from the bare run's,
or a run with default settings of a program that made CUDA calls writes no window."""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys

ONE_WINDOW = dict(PROF_STEP="time:60s", PROF_WAIT="0", PROF_WARMUP="0", PROF_ACTIVE="1", PROF_REPEAT="1")
SHORT_WINDOWS = dict(PROF_STEP="time:5ms", PROF_WAIT="1", PROF_WARMUP="1", PROF_ACTIVE="3", PROF_REPEAT="0")
# What a new user runs: no PROF_* but the output directory (PROF_STEP=auto).
DEFAULTS = {}
SCHEDULES = (("one", ONE_WINDOW), ("short", SHORT_WINDOWS), ("default", DEFAULTS))
KEYS = ("preload_one", "inject_one", "preload_short", "inject_short", "preload_default", "inject_default")
DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
API_CATS = ("cuda_runtime", "cuda_driver")


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("PROF_") or k.startswith("SIM_"))
           and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    env.update(extra)
    return env


def run(binary, cwd, env, timeout=300):
    try:
        proc = subprocess.run([binary], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, proc.stdout
    except subprocess.TimeoutExpired:
        return "timeout", ""


def masked(text):
    """Output with numbers masked: samples print their own timings."""
    return re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "#", text)


def load_truth(path):
    ops = collections.Counter()
    by_corr = collections.defaultdict(list)
    if not os.path.exists(path):
        return ops, by_corr
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            t = json.loads(line)
            if t.get("type") == "api":
                ops["api"] += 1
            if t.get("type") in DEVICE_CATS.values():
                ops[t["type"]] += 1
                by_corr[t["correlation"]].append((t["type"], t["end_ns"] - t["start_ns"]))
    return ops, by_corr


def check_window(trace_path, by_corr, prof_tool):
    with open(trace_path) as f:
        events = json.load(f).get("traceEvents", [])
    calls = {e["args"]["correlation"] for e in events
             if e.get("cat") in API_CATS and "correlation" in e.get("args", {})}
    got = collections.Counter((DEVICE_CATS[e["cat"]], e["args"].get("correlation")) for e in events
                              if e.get("cat") in DEVICE_CATS)
    expected = collections.Counter()
    for corr in calls:
        for kind, _ in by_corr.get(corr, []):
            expected[(kind, corr)] += 1
    truth_all = collections.Counter()
    for corr, ops in by_corr.items():
        for kind, _ in ops:
            truth_all[(kind, corr)] += 1
    missing = sum((expected - got).values())
    orphans = sum(n for (kind, corr), n in got.items() if corr not in calls)
    unknown = sum((got - truth_all).values())
    valid = subprocess.run([prof_tool, "validate", trace_path], capture_output=True).returncode == 0
    summary = trace_path.replace(".pt.trace.json", ".summary.txt")
    data_loss = 0
    if os.path.exists(summary):
        with open(summary) as f:
            data_loss = f.read().count("data-loss")
    return dict(records=sum(got.values()), expected=sum(expected.values()), missing=missing, orphans=orphans,
                unknown=unknown, valid=valid, data_loss=data_loss, got=got)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--programs", required=True)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    sim_lib = os.path.join(build, "test/sim/lib")
    libprof = os.path.join(build, "agent/libprof.so")
    prof_tool = os.path.join(build, "tools/prof/prof")
    src = os.path.join(args.work, "src/Samples/0_Introduction")
    rows, failed = [], False
    totals = collections.Counter()
    for name in [p for p in args.programs.split(",") if p]:
        binary = os.path.join(args.work, "bin", name)
        cwd = os.path.join(src, name)
        runs = os.path.join(args.work, "runs", name)
        subprocess.run(["rm", "-rf", runs])
        os.makedirs(runs)
        base = {"LD_LIBRARY_PATH": sim_lib}
        truth_bare = os.path.join(runs, "bare.truth.jsonl")
        bare_rc, bare_out = run(binary, cwd, clean_env(dict(base, SIM_TRUTH_FILE=truth_bare)))
        ops, _ = load_truth(truth_bare)
        row = dict(program=name, bare_rc=bare_rc, api_calls=ops["api"], kernels=ops["kernel"], copies=ops["memcpy"], memsets=ops["memset"])
        for mode, load in (("preload", {"LD_PRELOAD": libprof}), ("inject", {"CUDA_INJECTION64_PATH": libprof})):
            for windows, schedule in SCHEDULES:
                key = f"{mode}_{windows}"
                out_dir = os.path.join(runs, key)
                truth = os.path.join(runs, key + ".truth.jsonl")
                env = clean_env(dict(base, SIM_TRUTH_FILE=truth, PROF_OUTPUT_DIR=out_dir, **load, **schedule))
                rc, out = run(binary, cwd, env)
                _, by_corr = load_truth(truth)
                traces = sorted(glob.glob(os.path.join(out_dir, "*.pt.trace.json")))
                checks = [check_window(t, by_corr, prof_tool) for t in traces]
                result = dict(rc_same=rc == bare_rc, out_same=masked(out) == masked(bare_out), windows=len(traces),
                              missing=sum(c["missing"] for c in checks), orphans=sum(c["orphans"] for c in checks),
                              unknown=sum(c["unknown"] for c in checks), invalid=sum(not c["valid"] for c in checks),
                              data_loss=sum(c["data_loss"] for c in checks),
                              records=sum(c["records"] for c in checks))
                if windows == "one" and checks:
                    # The whole run: every device record the sim made is in the window.
                    all_ops = sum(len(v) for v in by_corr.values())
                    result["whole"] = checks[0]["records"] == all_ops
                row[key] = result
                for k in ("windows", "missing", "orphans", "unknown", "invalid", "data_loss", "records"):
                    totals[f"{k}"] += result[k]
                bad = (not result["rc_same"] or result["missing"] or result["orphans"] or result["unknown"] or
                       result["invalid"] or (windows == "one" and not result.get("whole", False)) or
                       (windows == "default" and ops["api"] > 0 and result["windows"] == 0))
                failed = failed or bool(bad)
        rows.append(row)

    lines = ["| program | bare exit | kernels / copies / memsets (truth) | mode | windows | device records "
             "| missing | without their call | not in truth | invalid traces | data-loss findings "
             "| exit same | output same | one window = whole run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for key in KEYS:
            m = r[key]
            lines.append(f"| {r['program']} | {r['bare_rc']} | {r['kernels']} / {r['copies']} / {r['memsets']} | {key} "
                         f"| {m['windows']} | {m['records']} | {m['missing']} | {m['orphans']} | {m['unknown']} "
                         f"| {m['invalid']} | {m['data_loss']} | {'yes' if m['rc_same'] else 'NO'} "
                         f"| {'yes' if m['out_same'] else 'no'} | {'' if 'whole' not in m else ('yes' if m['whole'] else 'NO')} |")
    lines.append("")
    lines.append(f"Totals over {len(rows)} programs x {len(KEYS)} runs: {totals['windows']} windows, {totals['records']} device "
                 f"records, {totals['missing']} missing, {totals['orphans']} without their call, {totals['unknown']} "
                 f"not in the truth log, {totals['invalid']} invalid traces, {totals['data_loss']} data-loss findings.")
    made_calls = [r for r in rows if r["api_calls"] > 0]
    for mode in ("preload", "inject"):
        wrote = sum(1 for r in made_calls if r[f"{mode}_default"]["windows"] > 0)
        lines.append(f"With no PROF_* set ({mode}): {wrote} of the {len(made_calls)} programs that made CUDA calls "
                     f"wrote at least one window.")
    report = "\n".join(lines)
    with open(os.path.join(args.work, "report.md"), "w") as f:
        f.write(report + "\n")
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
