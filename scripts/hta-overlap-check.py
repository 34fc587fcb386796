#!/usr/bin/env python3
"""Compares libprof's communication/compute overlap with Holistic Trace Analysis's.

HTA comes from PyPI into the tests' venv (scripts/setup-deps.sh installs it
there, hash-pinned: test/requirements-nodeps.txt), so run the script with that
venv's python; CTest's hta_overlap test (test/integration/test_hta.py) runs it
on simulated four-rank jobs:

    .deps/venv/bin/python scripts/hta-overlap-check.py TRACE_DIR [--prof build/tools/prof/prof] [--tolerance 1.0]

TRACE_DIR holds one trace per rank (*.pt.trace.json[.gz], as a multi-rank job
writes them). HTA's get_comm_comp_overlap() gives, per rank, the percentage of
communication-kernel time during which compute kernels also ran, over the
whole window (TraceAnalysis(..., include_last_profiler_step=True)); `prof merge` computes the same figure (the per-rank table's
"Comm overlapped (%)" column). The check passes when every rank's two figures
are within --tolerance percentage points. Exit status: 0 agree, 1 disagree,
2 usage or a tool failed, 77 HTA is not importable (not the venv's python).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def prof_overlap(prof, trace_dir):
    """Per-rank overlap from `prof merge`'s job summary."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "job.pt.trace.json")
        r = subprocess.run([prof, "merge", trace_dir, "-o", out], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"prof merge failed ({r.returncode}):\n{r.stderr}")
        text = r.stdout
    lines = text.splitlines()
    try:
        header = next(i for i, l in enumerate(lines) if l.strip().startswith("Rank") and "Comm overlapped" in l)
    except StopIteration:
        sys.exit("prof merge printed no per-rank table")
    overlap = {}
    for line in lines[header + 2:]:
        cells = line.split()
        if not cells or not re.fullmatch(r"\d+", cells[0]):
            break
        if cells[-1] != "-":
            overlap[int(cells[0])] = float(cells[-1].replace(",", ""))
    return overlap


def hta_overlap(trace_dir):
    from hta.trace_analysis import TraceAnalysis  # noqa: imported here so --help works without HTA

    # HTA leaves out the GPU work launched in the last ProfilerStep# unless told
    # otherwise; prof merge counts the whole window, and so must HTA here.
    analyzer = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    df = analyzer.get_comm_comp_overlap(visualize=False)
    return {int(row["rank"]): float(row["comp_comm_overlap_pctg"]) for _, row in df.iterrows()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace_dir")
    ap.add_argument("--prof", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "prof", "prof"))
    ap.add_argument("--tolerance", type=float, default=1.0, help="percentage points (default 1.0)")
    args = ap.parse_args()
    try:
        import hta  # noqa: F401
    except ImportError:
        print("HTA is not importable: run this with .deps/venv/bin/python (scripts/setup-deps.sh); nothing checked",
              file=sys.stderr)
        return 77
    ours = prof_overlap(args.prof, args.trace_dir)
    theirs = hta_overlap(args.trace_dir)
    ok = bool(ours) and set(ours) == set(theirs)
    print(f"{'rank':>4}  {'libprof %':>10}  {'HTA %':>10}")
    for rank in sorted(set(ours) | set(theirs)):
        a, b = ours.get(rank), theirs.get(rank)
        agree = a is not None and b is not None and abs(a - b) <= args.tolerance
        ok = ok and agree
        print(f"{rank:>4}  {a if a is not None else '-':>10}  {b if b is not None else '-':>10}  {'ok' if agree else 'DIFFERENT'}")
    print("agree" if ok else "disagree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
