#!/usr/bin/env python3
"""What must not change when the agent gets faster: runs fixed simulated
workloads under libprof (LD_PRELOAD and CUDA_INJECTION64_PATH, several step
sources, windows separated by waiting steps) and prints, per window, a
fingerprint of its trace and summary with every timing taken out:

  - the window's first step (the file name) and its loss counts;
  - event counts by (ph, cat, name);
  - the set of fields and of args keys per (ph, cat);
  - the summary with every number replaced by '#' (its rows and findings).

Two builds are compared by diffing their outputs:

  python3 -B test/bench/trace_fingerprint.py --build-dir OLD/build > old.txt
  python3 -B test/bench/trace_fingerprint.py --build-dir NEW/build > new.txt
  diff old.txt new.txt

--keep DIR keeps each case's trace and summary files in DIR/<case>, e.g. to
export the same windows with two builds' exporters and compare the bytes.

Events that depend on timing rather than on the agent (libprof's own
cudaRuntimeGetVersion from its writer thread, args["unclipped dur"] and ["clipped start"] on a
synchronize whose record outlasts its call) are listed separately under
"timing-dependent", so a diff shows them for what they are.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

# name, workload arguments, PROF_* settings, injection mode
CASES = [
    ("sync_preload", ["--steps", "300"], dict(STEP="sync", WAIT=5, WARMUP=1, ACTIVE=3, REPEAT=0), "preload"),
    ("sync_inject", ["--steps", "300"], dict(STEP="sync", WAIT=5, WARMUP=1, ACTIVE=3, REPEAT=0), "inject"),
    ("api_preload", ["--steps", "200"],
     dict(STEP="api:cudaStreamSynchronize", WAIT=4, WARMUP=1, ACTIVE=2, REPEAT=0), "preload"),
    ("api_inject", ["--steps", "200"],
     dict(STEP="api:cudaStreamSynchronize", WAIT=4, WARMUP=1, ACTIVE=2, REPEAT=0), "inject"),
    ("kernel_preload", ["--steps", "200"], dict(STEP="kernel:host_k0", WAIT=4, WARMUP=1, ACTIVE=2, REPEAT=0),
     "preload"),
    ("kernel_inject", ["--steps", "200"], dict(STEP="kernel:host_k0", WAIT=4, WARMUP=1, ACTIVE=2, REPEAT=0),
     "inject"),
    ("nvtx_preload", ["--steps", "200"], dict(STEP="nvtx:host_step", WAIT=4, WARMUP=1, ACTIVE=2, REPEAT=0),
     "preload"),
]

TIMING_NAMES = {"cudaRuntimeGetVersion"}
TIMING_ARGS = {"unclipped dur", "clipped start"}
# Summary sections whose rows come from timing thresholds.
TIMING_SECTIONS = ("Findings", "GPU idle gaps")


def fingerprint_trace(path):
    with open(path) as f:
        doc = json.load(f)
    counts = collections.Counter()
    fields = collections.defaultdict(set)
    args = collections.defaultdict(set)
    timing = collections.Counter()
    for e in doc.get("traceEvents", []):
        ph, cat, name = e.get("ph", ""), e.get("cat", ""), e.get("name", "")
        if name in TIMING_NAMES:
            timing[(ph, cat, name)] += 1
            continue
        if ph == "M":
            counts[(ph, cat, name, json.dumps(e.get("args", {}), sort_keys=True))] += 1
        else:
            counts[(ph, cat, name)] += 1
        fields[(ph, cat)].update(e.keys())
        for k in e.get("args", {}) or {}:
            if k in TIMING_ARGS:
                timing[(ph, cat, "args:" + k)] += 1
            else:
                args[(ph, cat)].add(k)
    meta = doc.get("libprof", {})
    window = meta.get("window", {})
    losses = json.dumps(meta.get("losses", {}), sort_keys=True)
    head = (f"steps {window.get('first_step')}-{window.get('last_step')} partial {window.get('partial')} "
            f"losses {losses}")
    return counts, fields, args, timing, head


def fingerprint_summary(path):
    # Rows are ordered by time and findings fire on timing thresholds (the
    # simulator runs on a loaded machine): the rows as a sorted set, numbers,
    # units and padding taken out, findings left to the trace's counts.
    with open(path) as f:
        text = f.read()
    rows, in_findings = set(), False
    for line in text.splitlines():
        if line.startswith("== "):
            in_findings = any(line.startswith("== " + t) for t in TIMING_SECTIONS)
        if (in_findings and not line.startswith("== ")) or not line.strip(" -"):
            continue
        line = re.sub(r"0x[0-9a-fA-F]+", "#", line)  # addresses
        line = re.sub(r"[\d,]+(\.\d+)?", "#", line)
        line = re.sub(r"#\s*(ns|µs|ms|s|%)\b", "#", line)
        rows.add(" ".join(line.split()))
    return sorted(rows)


def run_case(build, case, out_root):
    name, wargs, prof, mode = case
    libprof = os.path.join(build, "agent", "libprof.so")
    sim_lib = os.path.join(build, "test", "sim", "lib")
    host = os.path.join(build, "test", "bench", "host_loop")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROF_") and k != "LD_PRELOAD"}
    env["LD_LIBRARY_PATH"] = sim_lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIM_KERNEL_NS"] = "host_k=100"
    out = os.path.join(out_root, name)
    env["PROF_OUTPUT_DIR"] = out
    env["PROF_LOG_LEVEL"] = "warn"
    env["NVTX_INJECTION64_PATH"] = libprof
    if mode == "preload":
        env["LD_PRELOAD"] = libprof
    else:
        env["CUDA_INJECTION64_PATH"] = libprof
    for k, v in prof.items():
        env["PROF_" + k] = str(v)
    p = subprocess.run([host] + wargs, env=env, capture_output=True, text=True)
    lines = [f"== {name} exit {p.returncode}"]
    if not os.path.isdir(out):
        return lines + ["   no output"]
    def order(fn):  # <name>.<first step>.<kind>: by window, trace before summary
        parts = fn.split(".")
        return (int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else -1, fn.endswith(".summary.txt"))

    pids = set()
    for fn in os.listdir(out):
        m = re.search(r"_(\d+)\.\d+\.", fn)
        if m:
            pids.add(m.group(1))
    anonymise = (lambda line: re.sub(r"(?<!\d)(%s)(?!\d)" % "|".join(pids), "<pid>", line)) if pids else (lambda line: line)
    for fn in sorted(os.listdir(out), key=order):
        path = os.path.join(out, fn)
        short = fn.split(".", 1)[1] if "." in fn else fn  # without the pid-bearing name
        if fn.endswith(".pt.trace.json"):
            counts, fields, args, timing, head = fingerprint_trace(path)
            lines.append(f"-- {short}: {sum(counts.values())} events, {head}")
            lines.extend(sorted(anonymise(f"   {counts[key]:6d} {' | '.join(key)}") for key in counts))
            for key in sorted(fields):
                lines.append(f"   fields {' | '.join(key)}: {','.join(sorted(fields[key]))}")
            for key in sorted(args):
                lines.append(f"   args {' | '.join(key)}: {','.join(sorted(args[key]))}")
            for key in sorted(timing):
                lines.append(f"   timing-dependent {timing[key]:4d} {' | '.join(key)}")
        elif fn.endswith(".summary.txt"):
            lines.append(f"-- {short}")
            lines.extend("   " + line for line in fingerprint_summary(path))
    return [anonymise(line) for line in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--keep", help="directory to keep the runs' trace and summary files in (one folder per case)")
    args = ap.parse_args()
    build = os.path.abspath(args.build_dir)
    with tempfile.TemporaryDirectory() as tmp:
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            tmp = args.keep
        for case in CASES:
            if args.only and case[0] not in args.only.split(","):
                continue
            print("\n".join(run_case(build, case, tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
