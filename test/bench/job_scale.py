#!/usr/bin/env python3
"""Job analysis at scale: `prof merge --summary-only` of a thousand ranks'
facts files, and the merged timeline of a few chosen ranks.

A four-rank data-parallel job (test/workloads ddp_train on the simulated
stack, LD_PRELOAD=libprof.so, rank 2 held 2 ms a step) records STEPS steps
(3,600 give 100 MB windows); its traces and facts files are copied to RANKS
ranks (facts) and TIMELINE ranks (traces), each copy's rank and clock
changed (test/integration/job_copies.py). Prints, measured by
bench_peak_rss: the summary's CPU time and peak RSS, whether it is the text
the traces give on 16 ranks, and the timeline's input MB per CPU second and
peak RSS. Needs a build (BUILD, default build/) and about 2 GB of disk in
WORK per 1,000 ranks at 3,600 steps.

    python3 test/bench/job_scale.py [--build build] [--steps 3600] [--ranks 1024] [--timeline 8] [--work DIR]
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "integration"))
import job_copies  # noqa: E402
import multirank  # noqa: E402


def measured(cmd, **kw):
    """(completed process, peak RSS MB, CPU s) of cmd under bench_peak_rss."""
    p = subprocess.run([PEAK_RSS, *cmd], capture_output=True, text=True, **kw)
    usage = json.loads(p.stdout.strip().splitlines()[-1])
    p.stdout = "\n".join(p.stdout.splitlines()[:-1]) + "\n"
    return p, usage["peak_rss_kb"] / 1024.0, usage["cpu_ns"] / 1e9


def run_job(build, work, steps):
    hosts = [os.path.join(work, f"host{r}") for r in range(4)]
    for h in hosts:
        os.makedirs(h)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "test", "sim", "lib"),
               LD_PRELOAD=os.path.join(build, "agent", "libprof.so"), SIM_NCCL_TIMEOUT_MS="120000",
               SIM_KERNEL_NS="forward_layer=50000,backward_layer=50000", PROF_WAIT="5", PROF_WARMUP="0",
               PROF_ACTIVE=str(steps), PROF_REPEAT="1", PROF_LOG_LEVEL="warn")
    env.pop("NCCL_PROFILER_PLUGIN", None)
    ddp = os.path.join(build, "test", "workloads", "ddp_train")
    results = multirank.launch([ddp, "--steps", str(steps + 10), "--bucket-elems", "262144"], 4, env, timeout=1800,
                               per_rank=lambda r: {"WORKLOAD_SLOW_RANK": 2, "WORKLOAD_SLOW_US": 2000},
                               cwd=lambda r: hosts[r])
    ranks = []
    for r, (res, h) in enumerate(zip(results, hosts)):
        if res.returncode != 0:
            sys.exit(f"rank {r} failed: {res.stderr[-2000:]}")
        trace = glob.glob(os.path.join(h, "prof-traces", "*.pt.trace.json"))[0]
        ranks.append((trace, trace.replace(".pt.trace.json", ".job.json")))
    return ranks


def main():
    global PEAK_RSS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=3600)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--timeline", type=int, default=8)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    PEAK_RSS = os.path.join(build, "test", "bench", "bench_peak_rss")
    prof = os.path.join(build, "tools", "prof", "prof")
    work = args.work or tempfile.mkdtemp(prefix="libprof-job-scale-")
    try:
        ranks = run_job(build, os.path.join(work, "job"), args.steps)
        trace_mb = sum(os.path.getsize(t) for t, _ in ranks) / 4 / 1e6
        facts_mb = sum(os.path.getsize(f) for _, f in ranks) / 4 / 1e6
        print(f"window: {args.steps} steps, trace {trace_mb:.1f} MB, facts {facts_mb:.2f} MB per rank")
        # The same text from facts and from traces, on 16 ranks.
        small = os.path.join(work, "check16")
        job_copies.make_job(ranks, small, 16)
        facts16, traces16 = os.path.join(small, "facts"), os.path.join(small, "traces")
        os.makedirs(facts16)
        os.makedirs(traces16)
        for f in glob.glob(os.path.join(small, "rank*")):
            shutil.move(f, facts16 if f.endswith(".job.json") else traces16)
        a = subprocess.run([prof, "merge", "--summary-only", facts16], capture_output=True, text=True)
        b = subprocess.run([prof, "merge", "--summary-only", traces16], capture_output=True, text=True)
        print(f"16 ranks: the summary from facts {'equals' if a.stdout == b.stdout and a.stdout else 'DIFFERS from'}"
              " the one from traces")
        shutil.rmtree(small)
        # The summary of many ranks from their facts.
        many = os.path.join(work, "facts")
        job_copies.make_job(ranks, many, args.ranks, traces=False)
        p, rss, cpu = measured([prof, "merge", "--summary-only", many])
        print(f"{args.ranks} ranks, summary from facts: {cpu:.1f} s CPU, {rss:.0f} MB peak; "
              f"{p.stdout.splitlines()[0] if p.stdout.strip() else p.stderr.strip()}")
        shutil.rmtree(many)
        # The timeline of a few chosen ranks.
        chosen = os.path.join(work, "timeline")
        job_copies.make_job(ranks, chosen, args.timeline, facts=False)
        size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(chosen, "*"))) / 1e6
        p, rss, cpu = measured([prof, "merge", chosen, "-o", os.path.join(work, "timeline.pt.trace.json")])
        print(f"timeline of {args.timeline} ranks ({size:.0f} MB): {size / cpu:.0f} MB per CPU s ({cpu:.1f} s), "
              f"{rss:.0f} MB peak; exit {p.returncode}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
