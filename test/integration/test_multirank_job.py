"""A four-rank data-parallel job on the simulated stack (test/workloads
ddp_train, and ddp_ctypes.py from Python through ctypes), started the way
torchrun starts it (and as mpirun and srun do), each rank in a directory of
its own (no shared file system) and with its own wall clock (libsim_realtime_offset.so), with no
PROF_* variable set: every rank writes one window holding the same
collectives by Seq, in both injection modes and from Python; `prof merge` of
the copied files validates, recovers each rank's clock offset, and names the rank
slowed by a host delay, with each rank's wait per step within 10 % of what
the simulated NCCL's truth log says it waited; with no rank slowed it names
none.

The wait is checked against the truth, not against the injected delay: a
rank's host is late by the delay plus whatever the scheduler adds (on a
loaded test machine, tens of ms in some steps), and the others wait for all
of it. The truth also shows that the delay is what they waited for: every
other rank waits for most of it in each step."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import harness
import multirank

DDP = os.path.join(harness.WORKLOAD_DIR, "ddp_train")
DDP_CTYPES = os.path.join(harness.WORKLOAD_DIR, "ddp_ctypes.py")
OFFSET_SHIM = os.path.join(os.path.dirname(harness.SIM_LIB_DIR.rstrip("/")), "testing", "libsim_realtime_offset.so")
WORLD = 4
SLOW_RANK = 2
DELAY_US = 60000
# Steps of several milliseconds of GPU work (a real step's is longer still);
# the delay is most of a step and large against what the scheduler of a
# loaded test machine adds to a rank's host (a few ms in most steps).
KERNEL_NS = "forward_layer=500000,backward_layer=500000,ctypes_step_kernel=200000"
# Each rank's wall clock error (ns): hosts kept in step by NTP disagree by this much.
CLOCK_NS = [0, 3_000_000, -2_000_000, 700_000]
# How close `prof merge` must find them: a rank's times are mapped to the epoch
# with the narrowest of a few bracketed clock reads at its start (error:
# microseconds); collectives end on every rank at one instant of the
# simulated device.
CLOCK_BOUND_NS = 100_000
STEPS = 40  # the default schedule records job iterations 32-36


def prof(*args):
    return subprocess.run([harness.PROF_TOOL, *args], capture_output=True, text=True, timeout=300,
                          env=harness.clean_env())


def collectives(trace):
    """(group, collective, Seq) of every collective kernel in a trace."""
    out = set()
    for e in trace["traceEvents"]:
        a = e.get("args", {})
        if e.get("cat") == "kernel" and "Seq" in a and "Collective name" in a:
            out.add((a.get("Process Group Name"), a["Collective name"], a["Seq"]))
    return out


def per_rank_table(summary):
    """{rank: {column: value}} from the job summary's per-rank table."""
    lines = summary.splitlines()
    head = next(i for i, l in enumerate(lines) if l.strip().startswith("Rank") and "Others waited" in l)
    names = ["Rank", "Step time", "Compute", "Communication", "Waiting", "Host gap", "Arrived last",
             "Others waited for it", "Comm overlapped (%)"]
    rows = {}
    for l in lines[head + 2:]:
        cells = l.split()
        if len(cells) != len(names):
            break
        rows[int(cells[0])] = {n: (float(c.replace(",", "")) if c != "-" else None) for n, c in zip(names, cells)}
    return rows


# Each multi-rank test reads the truth's waits over the collectives its own job makes.
def truth_waits(traces, truth):
    """Per rank, ms per step: what the truth says the rank waited for the last
    rank to arrive (release minus start of its kernel), over the collectives
    in its window."""
    waits = []
    for t in traces:
        rank = t["distributedInfo"]["rank"]
        seqs = {a["Seq"] for a in (e.get("args", {}) for e in t["traceEvents"] if e.get("cat") == "kernel")
                if "Seq" in a}
        steps = sum(1 for e in t["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
        total = sum(l["wait_ns"] for l in truth if l["rank"] == rank and l["seq"] in seqs)
        waits.append(total / 1e6 / steps)
    return waits


def truth_costs(traces, truth):
    """Per rank, from the truth over the collectives in the windows: what its
    lateness cost every other rank per step (ms: the others' waits at the
    collectives it arrived at last, per other rank), and how often it
    arrived last where a rank waited."""
    seqs = {a["Seq"] for a in (e.get("args", {}) for e in traces[0]["traceEvents"] if e.get("cat") == "kernel")
            if "Seq" in a}
    steps = sum(1 for e in traces[0]["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
    by_seq = {}
    for l in truth:
        if l["seq"] in seqs:
            by_seq.setdefault(l["seq"], []).append(l)
    cost, last = [0.0] * WORLD, [0] * WORLD
    for lines in by_seq.values():
        if len(lines) != WORLD or not any(l["wait_ns"] for l in lines):
            continue
        late = max(lines, key=lambda l: l["start_ns"])["rank"]
        last[late] += 1
        cost[late] += sum(l["wait_ns"] for l in lines) / 1e6 / (WORLD - 1) / steps
    return cost, last


def median_step_ms(traces):
    durs = sorted(e["dur"] / 1000 for t in traces for e in t["traceEvents"]
                  if e.get("name", "").startswith("ProfilerStep#"))
    return durs[len(durs) // 2]


class MultiRankJob(unittest.TestCase):
    def run_job(self, cmd, mode, slow_rank=-1, python=False, launcher="torchrun"):
        """Runs the job; returns (per-rank traces, merge directory, the
        truth's collective lines)."""
        for path in (DDP, harness.LIBPROF_SO, OFFSET_SHIM) + ((DDP_CTYPES,) if python else ()):
            if not os.path.exists(path):
                self.skipTest(f"{path} not built")
        tmp = harness.scratch_dir(self, "multirank-")
        hosts = [os.path.join(tmp, f"host{r}") for r in range(WORLD)]
        for h in hosts:
            os.makedirs(h)
        truth = os.path.join(tmp, "truth.jsonl")
        env = harness.sim_env(SIM_NCCL_TIMEOUT_MS=120000, SIM_KERNEL_NS=KERNEL_NS, SIM_TRUTH_FILE=truth)
        env.pop("NCCL_PROFILER_PLUGIN", None)  # libprof offers itself (the plugin path under injection)
        self.assertFalse([k for k in env if k.startswith("PROF_")], "the job runs with no PROF_* variable")
        if python:
            env["PYTHONPATH"] = harness.WORKLOAD_DIR
        env["LD_PRELOAD"] = OFFSET_SHIM
        if mode == "LD_PRELOAD":
            env["LD_PRELOAD"] += ":" + harness.LIBPROF_SO
        else:
            env["CUDA_INJECTION64_PATH"] = harness.LIBPROF_SO
        per_rank = lambda r: {"SIM_REALTIME_OFFSET_NS": CLOCK_NS[r], "WORKLOAD_SLOW_RANK": slow_rank,
                              "WORKLOAD_SLOW_US": DELAY_US}
        results = multirank.launch(cmd, WORLD, env, timeout=400, per_rank=per_rank, cwd=lambda r: hosts[r],
                                   launcher=launcher)
        for r, res in enumerate(results):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
        # Each rank wrote one window into its own directory; copy them as
        # one would from several nodes.
        merge_dir = os.path.join(tmp, "merged")
        os.makedirs(merge_dir)
        traces = []
        for r, h in enumerate(hosts):
            files = sorted(glob.glob(os.path.join(h, "prof-traces", "*.pt.trace.json")))
            self.assertEqual(len(files), 1, f"rank {r}: {files}\n{results[r].stderr[-3000:]}")
            self.assertIn(f"_rank{r}.", os.path.basename(files[0]))
            shutil.copy(files[0], merge_dir)
            with open(files[0]) as f:
                traces.append(json.load(f))
            info = traces[-1]["distributedInfo"]
            self.assertEqual((info["rank"], info["world_size"]), (r, WORLD))
        with open(truth) as f:
            lines = [json.loads(l) for l in f if '"type":"nccl"' in l]
        return traces, merge_dir, lines

    def check_same_iterations(self, traces):
        sets = [collectives(t) for t in traces]

        def said(r):
            """What rank r's window says about itself, for a failure's message."""
            lp = traces[r]["libprof"]
            kernels = sum(1 for e in traces[r]["traceEvents"] if e.get("cat") == "kernel")
            losses = {k: v for k, v in lp.get("losses", {}).items() if v}
            return f"rank {r}: window {lp['window']}, {kernels} kernels, losses {losses}"
        self.assertGreater(len(sets[0]), 0, f"no collective kernel with Kineto's arguments in rank 0's window; {said(0)}")
        for r in range(1, WORLD):
            self.assertEqual(sets[r], sets[0], f"rank {r}'s window holds other collectives than rank 0's; {said(r)}; "
                                               f"{said(0)}")
        steps = [sorted(e["name"] for e in t["traceEvents"] if e.get("name", "").startswith("ProfilerStep#"))
                 for t in traces]
        for r in range(1, WORLD):
            self.assertEqual(steps[r], steps[0], f"rank {r}'s steps")

    def merge(self, merge_dir):
        out = os.path.join(merge_dir, "job.pt.trace.json")
        r = prof("merge", merge_dir, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)  # 0: written and valid
        self.assertEqual(prof("validate", out).returncode, 0)
        with open(os.path.join(merge_dir, "job.summary.txt")) as f:
            summary = f.read()
        with open(out) as f:
            merged = json.load(f)
        # The clocks: every rank's offset to the reference as set, within the bound.
        inputs = merged["libprof_merge"]["inputs"]
        ref = merged["libprof_merge"]["clock_alignment"]["reference_rank"]
        for i in inputs:
            want = CLOCK_NS[i["rank"]] - CLOCK_NS[ref]
            self.assertLessEqual(abs(i["clock_offset_ns"] - want), CLOCK_BOUND_NS,
                                 f"rank {i['rank']}: offset {i['clock_offset_ns']} ns, set {want} ns\n{summary}")
        self.assertLessEqual(merged["libprof_merge"]["clock_alignment"]["residual_max_ns"], CLOCK_BOUND_NS, summary)
        return summary

    def check_straggler(self, summary, slow_rank, traces, truth):
        line = next(l for l in summary.splitlines() if l.startswith("straggler:"))
        if slow_rank < 0:
            # No rank was slowed on purpose, but on a loaded machine the
            # scheduler may hold one back in most steps, and then the truth
            # agrees that it made the others wait. Naming a rank is right only
            # when the truth shows it cost the others at least 2.5 % of the
            # median step (prof merge's threshold is 5 %); below that, none
            # may be named.
            cost, _ = truth_costs(traces, truth)
            worst = max(range(WORLD), key=lambda r: cost[r])
            step = median_step_ms(traces)
            if line.startswith("straggler: none") or cost[worst] < 0.025 * step:
                self.assertTrue(line.startswith("straggler: none"),
                                f"truth: costs per step {cost} ms, median step {step:.3f} ms\n{summary}")
            else:
                self.assertTrue(line.startswith(f"straggler: rank {worst}:"),
                                f"truth: costs per step {cost} ms, median step {step:.3f} ms\n{summary}")
            return
        self.assertTrue(line.startswith(f"straggler: rank {slow_rank}: arrived last"), summary)
        rows = per_rank_table(summary)
        waits = truth_waits(traces, truth)
        for r in range(WORLD):
            # What the job summary says rank r waited per step, against the truth.
            self.assertAlmostEqual(rows[r]["Waiting"], waits[r], delta=max(0.1 * waits[r], 0.05),
                                   msg=f"rank {r}'s wait per step (truth {waits[r]:.3f} ms)\n{summary}")
            if r != slow_rank:
                # Mostly for the delay (a rank held back itself waits less).
                self.assertGreaterEqual(waits[r], 0.5 * DELAY_US / 1000, f"rank {r} waited for little of the delay")
        others = sum(waits[r] for r in range(WORLD) if r != slow_rank) / (WORLD - 1)
        self.assertAlmostEqual(rows[slow_rank]["Others waited for it"], others, delta=0.1 * others, msg=summary)
        evidence = summary.split(line, 1)[1].splitlines()[1]
        self.assertIn("its host is idle longer", evidence, summary)
        return evidence

    def test_a_slowed_rank_is_named_in_both_injection_modes(self):
        cmd = [DDP, "--steps", str(STEPS), "--bucket-elems", "262144"]
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                traces, merge_dir, truth = self.run_job(cmd, mode, slow_rank=SLOW_RANK)
                self.check_same_iterations(traces)
                self.check_straggler(self.merge(merge_dir), SLOW_RANK, traces, truth)

    def test_a_job_started_by_mpirun_or_srun_names_the_slowed_rank(self):
        # The ranks know themselves from Open MPI's or Slurm's variables alone
        # (no RANK, WORLD_SIZE).
        cmd = [DDP, "--steps", str(STEPS), "--bucket-elems", "262144"]
        for launcher in ("mpirun", "srun"):
            with self.subTest(launcher=launcher):
                traces, merge_dir, truth = self.run_job(cmd, "LD_PRELOAD", slow_rank=SLOW_RANK, launcher=launcher)
                self.check_same_iterations(traces)
                self.check_straggler(self.merge(merge_dir), SLOW_RANK, traces, truth)

    def test_no_rank_is_named_when_none_is_slowed(self):
        traces, merge_dir, truth = self.run_job([DDP, "--steps", str(STEPS), "--bucket-elems", "262144"],
                                                "LD_PRELOAD")
        self.check_same_iterations(traces)
        self.check_straggler(self.merge(merge_dir), -1, traces, truth)

    def test_a_python_job_names_the_slowed_rank(self):
        cmd = [sys.executable, DDP_CTYPES, "--steps", str(STEPS)]
        traces, merge_dir, truth = self.run_job(cmd, "LD_PRELOAD", slow_rank=SLOW_RANK, python=True)
        self.check_same_iterations(traces)
        self.check_straggler(self.merge(merge_dir), SLOW_RANK, traces, truth)


if __name__ == "__main__":
    harness.main()
