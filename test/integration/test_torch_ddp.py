"""PyPI's PyTorch, unmodified, data-parallel on four simulated GPUs:
test/workloads/torch_ddp.py (part 1's transformer under
DistributedDataParallel, the nccl backend on the sim's NCCL,
torch.cuda.set_device(LOCAL_RANK)) started as users start it,
`simrun torchrun --standalone --nproc_per_node=4` with SIM_DEVICE_COUNT=4,
under LD_PRELOAD and under CUDA_INJECTION64_PATH, with no PROF_* variable
(cuBLAS's GEMMs made 6 ms long on the simulated GPU, so that a step is
GPU-bound, see KERNEL_NS). Checked against the sim's truth log:
  - every rank writes one window, the loop's steps 32-36, each step k mostly
    the loop's iteration k (iterations told apart by each batch's copies);
  - every rank's window holds the same collectives by Seq, step by step,
    each NCCL kernel with Kineto's collective arguments equal to the truth
    (the communicator, count, type, group, kernel name and duration);
  - `prof merge` of the four ranks' windows names the rank slowed by a host
    sleep in every step, with each rank's wait per step within 10 % of what
    the truth says it waited; and names none, or the one the truth shows
    holding the others back, when none is slowed;
  - the slowed rank's idle host is in its own window (its Python thread's
    longest gap between CUDA calls in every step is the sleep), and `prof
    merge`'s evidence line says so: its GPU has no work for about the
    sleep in every step, and the work that ends the wait is the batch's
    copy to the GPU, from the loop's line after the sleep."""
import collections
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import harness
from test_multirank_job import CLOCK_BOUND_NS, per_rank_table, prof  # the job summary as that test reads it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_ddp.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
WORLD = 4
STEPS = 40  # the default schedule records steps 32-36
JOB_TIMEOUT_S = 90  # one job takes 20-30 s, up to 70 s beside CTest's other work
SLOW_RANK = 2
SLOW_MS = 100  # the slowed rank's host sleep in every step
# cuBLAS's GEMMs (27 a step) last 6 ms each on the simulated GPU, so a step is
# GPU-bound (~160 ms of GPU work against ~100 ms of host work with four ranks
# on two cores), as a real step of a larger model is: the ranks' hosts wait
# for their GPUs, and only a rank slowed on purpose holds the others back.
# With the model's microsecond kernels the step is all host work, and the
# scheduler alone makes one rank late in most steps (the truth agrees).
KERNEL_NS = "sm90_xmma_gemm=6000000"
BATCH, SEQ_LEN = 8, 128
KINETO_NAMES = {"AllReduce": "allreduce", "Broadcast": "broadcast"}


def module_tree(summary):
    """The summary's "GPU time by module" rows: (depth, path, total GPU ns)."""
    lines = summary.split("== GPU time by module", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    column = lines[0].index("Module")
    rows = []
    for line in lines[2:]:
        if not line.startswith(" ") or line.startswith(" ("):
            break
        cell = line[column:]
        rows.append(((len(cell) - len(cell.lstrip(" "))) // 2, cell.strip(), int(line.split()[1])))
    return rows


class Job:
    """One torchrun job: its process, the ranks' traces (rank order), their
    paths, the launcher's own windows, the truth's lines."""

    def __init__(self, proc, out, lines):
        self.proc, self.out, self.lines = proc, out, lines
        self.paths = [sorted(glob.glob(os.path.join(out, f"*_rank{r}.*.pt.trace.json"))) for r in range(WORLD)]
        self.traces = []
        for paths in self.paths:
            if len(paths) == 1:
                with open(paths[0]) as f:
                    self.traces.append(json.load(f))
        self.others = [p for p in glob.glob(os.path.join(out, "*.pt.trace.json")) if "_rank" not in p]


def read_truth(path):
    """The truth's lines this test reads (collectives, copies), parsed; the
    rest (a million API and kernel lines per job) only scanned."""
    wanted = ('{"type":"nccl"', '{"type":"memcpy"')
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith(wanted)]


def run_job(python, mode, work, slow_rank):
    """Runs the workload as a user would under `mode`; the job's directory is
    its working directory (the default ./prof-traces)."""
    name = f"{mode}-{'slow' if slow_rank >= 0 else 'even'}"
    cwd = os.path.join(work, name)
    os.makedirs(cwd)
    truth_path = os.path.join(work, name + ".truth.jsonl")
    env = harness.clean_env(SIM_DEVICE_COUNT=WORLD, SIM_TRUTH_FILE=truth_path, SIM_NCCL_TIMEOUT_MS=120000,
                            SIM_KERNEL_NS=KERNEL_NS, PYTHONUNBUFFERED="1")
    env.pop("NCCL_PROFILER_PLUGIN", None)  # libprof offers itself
    env[mode] = harness.LIBPROF_SO
    torchrun = os.path.join(os.path.dirname(python), "torchrun")
    cmd = [SIMRUN, torchrun, "--standalone", f"--nproc_per_node={WORLD}", WORKLOAD, "--steps", str(STEPS)]
    if slow_rank >= 0:
        cmd += ["--slow-rank", str(slow_rank), "--slow-ms", str(SLOW_MS)]
    # The job's ranks are torchrun's children: on a hang the whole session is
    # killed (no rank outlives the test) and what the job printed is kept,
    # within CTest's 300 s for the three jobs.
    with subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as running:
        try:
            stdout, stderr = running.communicate(timeout=JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(running.pid, signal.SIGKILL)
            stdout, stderr = running.communicate()
            raise AssertionError(f"{name}: the job did not end within {JOB_TIMEOUT_S} s (its process group was "
                                 f"killed); its output:\n{stdout[-3000:]}\n{stderr[-6000:]}")
    proc = subprocess.CompletedProcess(cmd, running.returncode, stdout, stderr)
    lines = []
    if os.path.exists(truth_path):
        lines = read_truth(truth_path)
        os.remove(truth_path)  # about 300 MB a job
    return Job(proc, os.path.join(cwd, "prof-traces"), lines)


def calls_by_correlation(trace):
    return {e["args"]["correlation"]: e for e in trace["traceEvents"]
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}


def steps_of(trace):
    return sorted((e for e in trace["traceEvents"]
                   if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def collective_kernels(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and "Seq" in e.get("args", {})]


def seqs_by_step(trace):
    """{step number: the Seq of every collective whose NCCL call is in it}."""
    calls = [e for e in trace["traceEvents"]
             if e.get("cat") == "cpu_op" and str(e.get("name", "")).startswith("nccl") and "Seq" in e.get("args", {})]
    out = {}
    for s in steps_of(trace):
        k = int(s["name"].split("#")[1])
        out[k] = sorted(c["args"]["Seq"] for c in calls if s["ts"] <= c["ts"] < s["ts"] + s["dur"])
    return out


def truth_waits_ms(traces, lines):
    """Per rank, ms per step: what the truth says it waited for the last
    rank to arrive (release minus start of its kernel), over the collectives
    in its window."""
    waits = []
    for t in traces:
        rank = t["distributedInfo"]["rank"]
        seqs = {k["args"]["Seq"] for k in collective_kernels(t)}
        total = sum(l["wait_ns"] for l in lines if l["rank"] == rank and l["seq"] in seqs)
        waits.append(total / 1e6 / len(steps_of(t)))
    return waits


def truth_costs_ms(traces, lines):
    """Per rank, from the truth over the collectives in the windows: what
    its lateness cost every other rank per step (ms: the others' waits at the
    collectives it arrived at last, per other rank)."""
    seqs = {k["args"]["Seq"] for k in collective_kernels(traces[0])}
    by_seq = collections.defaultdict(list)
    for l in lines:
        if l["seq"] in seqs:
            by_seq[l["seq"]].append(l)
    cost = [0.0] * WORLD
    for group in by_seq.values():
        if len(group) == WORLD and any(l["wait_ns"] for l in group):
            late = max(group, key=lambda l: l["start_ns"])["rank"]
            cost[late] += sum(l["wait_ns"] for l in group) / 1e6 / (WORLD - 1) / len(steps_of(traces[0]))
    return cost


def median_step_ms(traces):
    durs = sorted(s["dur"] / 1000 for t in traces for s in steps_of(t))
    return durs[len(durs) // 2]


def main_thread_gaps_ms(trace):
    """Per step, the longest gap between the Python thread's CUDA calls (ms)."""
    pid = trace["libprof"]["pid"]
    calls = sorted((e for e in trace["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")
                    and e.get("tid") == pid), key=lambda e: e["ts"])
    gaps = []
    for s in steps_of(trace):
        inside = [c for c in calls if s["ts"] <= c["ts"] < s["ts"] + s["dur"]]
        reach, longest = None, 0.0
        for c in inside:
            if reach is not None:
                longest = max(longest, c["ts"] - reach)
            reach = max(reach or c["ts"], c["ts"] + c["dur"])
        gaps.append(longest / 1000)
    return gaps


class TorchDdpUnderLibprof(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, harness.PROF_TOOL, SIMRUN)
        cls.python = harness.need_venv("torch")
        cls.work = tempfile.mkdtemp(prefix="libprof-ddp-")
        cls.slowed = {mode: run_job(cls.python, mode, cls.work, SLOW_RANK) for mode in harness.INJECTION_MODES}
        cls.even = run_job(cls.python, "LD_PRELOAD", cls.work, -1)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def each_job(self, check):
        jobs = [(f"{mode}, rank {SLOW_RANK} slowed", j) for mode, j in self.slowed.items()]
        jobs.append(("LD_PRELOAD, none slowed", self.even))
        for name, j in jobs:
            with self.subTest(job=name):
                self.assertEqual(j.proc.returncode, 0, j.proc.stderr[-3000:])
                self.assertEqual([len(p) for p in j.paths], [1] * WORLD, os.listdir(j.out))
                check(j)

    def test_every_rank_writes_the_loops_steps_32_to_36(self):
        def check(j):
            for r, t in enumerate(j.traces):
                info = t["distributedInfo"]
                self.assertEqual((info["backend"], info["rank"], info["world_size"]), ("nccl", r, WORLD))
                w = t["libprof"]["window"]
                self.assertEqual((w["first_step"], w["last_step"], w["partial"]), (32, 36, False))
                self.assertEqual([s["name"] for s in steps_of(t)], [f"ProfilerStep#{k}" for k in range(32, 37)])
                # The loop's iterations in this rank's truth: each begins with
                # its batch's first pinned host-to-device copy.
                pid = t["libprof"]["pid"]
                batch = [op for op in truth.of_type(j.lines, "memcpy")
                         if op["pid"] == pid and op["copy_kind"] == truth.HTOD and op["src_kind"] == truth.PINNED
                         and op["bytes"] == BATCH * SEQ_LEN * 8]
                self.assertEqual(len(batch), 2 * STEPS)
                starts = [op["correlation"] for op in batch[::2]]
                calls = calls_by_correlation(t)
                ops = [e for e in t["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
                for s in steps_of(t):
                    k = int(s["name"].split("#")[1])
                    inside = [op["args"]["correlation"] for op in ops if op["args"]["correlation"] in calls
                              and s["ts"] <= calls[op["args"]["correlation"]]["ts"] < s["ts"] + s["dur"]]
                    self.assertGreater(len(inside), 50, s["name"])
                    by_iteration = collections.Counter(sum(1 for c in starts if c <= x) - 1 for x in inside)
                    self.assertGreater(2 * by_iteration[k], len(inside), f"rank {r} {s['name']}: {dict(by_iteration)}")
            # torchrun's own process (under LD_PRELOAD it loads libprof too)
            # makes one CUDA call and writes its run as a window of no GPU work.
            for path in j.others:
                with open(path) as f:
                    other = json.load(f)
                self.assertFalse(other["libprof"]["rank_known"], path)
                self.assertEqual(sum(1 for e in other["traceEvents"] if e.get("cat") == "kernel"), 0, path)
        self.each_job(check)

    def test_every_ranks_module_tree_is_the_models(self):
        # The window's first step starts at a launch inside the model's
        # forward (the embedding's gather), so libprof's module hooks come in
        # during a forward: the modules already under way are still the
        # callers of the ones they call, and their calls belong to the window
        # that holds their end.
        def check(j):
            for r, paths in enumerate(j.paths):
                with open(paths[0].replace(".pt.trace.json", ".summary.txt")) as f:
                    rows = module_tree(f.read())
                roots = [path for depth, path, _ in rows if depth == 0]
                self.assertEqual(roots, ["DistributedDataParallel"], f"rank {r}: {rows}")
                self.assertIn((1, "module", rows[1][2]), rows, f"rank {r}")
                self.assertIn("module.blocks.0.attn", [path for _, path, _ in rows], f"rank {r}")
                for i, (depth, path, total) in enumerate(rows[1:], 1):
                    caller = next(row for row in reversed(rows[:i]) if row[0] == depth - 1)
                    self.assertLessEqual(total, caller[2], f"rank {r}: {path} under {caller[1]}")
        self.each_job(check)

    def test_every_rank_holds_the_same_collectives_with_kinetos_arguments(self):
        def check(j):
            by_step = [seqs_by_step(t) for t in j.traces]
            self.assertTrue(all(by_step[0][k] for k in range(32, 37)), by_step[0])
            for r in range(1, WORLD):
                self.assertEqual(by_step[r], by_step[0], f"rank {r}'s steps hold other collectives than rank 0's")
            for r, t in enumerate(j.traces):
                kernels = collective_kernels(t)
                seqs = sorted(k["args"]["Seq"] for k in kernels)
                self.assertEqual(seqs, sorted(s for k in range(32, 37) for s in by_step[r][k]))
                self.assertEqual(seqs, list(range(seqs[0], seqs[-1] + 1)), "a collective is missing")
                pg = t["distributedInfo"]["pg_config"][0]
                self.assertEqual((pg["pg_size"], pg["ranks"]), (WORLD, list(range(WORLD))))
                mine = {l["seq"]: l for l in j.lines if l["type"] == "nccl" and l["rank"] == r}
                for k in kernels:
                    a, want = k["args"], mine[k["args"]["Seq"]]
                    self.assertEqual(a["Process Group Name"], want["comm"])
                    self.assertEqual(a["Process Group Name"], pg["pg_name"])
                    self.assertEqual(a["Collective name"], KINETO_NAMES[want["coll"]])
                    self.assertEqual((a["In msg nelems"], a["Out msg nelems"]), (want["count"], want["count"]))
                    self.assertEqual((a["dtype"], a["Group size"], a["Process Group Ranks"]),
                                     ("Float", WORLD, "[0, 1, 2, 3]"))
                    self.assertEqual(k["name"], want["kernel"])
                    self.assertEqual(a["device"], r)  # set_device(LOCAL_RANK)
                    dur, true_us = a.get("unclipped dur", k["dur"]), (want["end_ns"] - want["start_ns"]) / 1000
                    self.assertAlmostEqual(dur, true_us, delta=0.005 + 5e-4 * true_us, msg=(k, want))
                    self.assertTrue(want["data"], "the simulated NCCL moved the bytes")
        self.each_job(check)

    def merge(self, j, name):
        merged = os.path.join(self.work, "merged-" + name)
        os.makedirs(merged)
        for paths in j.paths:
            shutil.copy(paths[0], merged)
        out = os.path.join(merged, "job.pt.trace.json")
        r = prof("merge", merged, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(prof("validate", out).returncode, 0)
        with open(out) as f:
            info = json.load(f)["libprof_merge"]
        # One machine, one wall clock: the ranks' clocks agree.
        for i in info["inputs"]:
            self.assertLessEqual(abs(i["clock_offset_ns"]), CLOCK_BOUND_NS, i)
        with open(os.path.join(merged, "job.summary.txt")) as f:
            return f.read()

    def nccl_truth(self, j):
        return [l for l in j.lines if l["type"] == "nccl"]

    def test_merge_names_the_slowed_rank_in_both_modes(self):
        for mode, j in self.slowed.items():
            with self.subTest(mode=mode):
                self.assertEqual(j.proc.returncode, 0, j.proc.stderr[-3000:])
                summary = self.merge(j, mode)
                line = next(l for l in summary.splitlines() if l.startswith("straggler:"))
                self.assertTrue(line.startswith(f"straggler: rank {SLOW_RANK}: arrived last"), summary)
                rows = per_rank_table(summary)
                waits = truth_waits_ms(j.traces, self.nccl_truth(j))
                for r in range(WORLD):
                    self.assertAlmostEqual(rows[r]["Waiting"], waits[r], delta=max(0.1 * waits[r], 0.05),
                                           msg=f"rank {r}'s wait per step (truth {waits[r]:.3f} ms)\n{summary}")
                    if r != SLOW_RANK:
                        self.assertGreaterEqual(waits[r], 0.5 * SLOW_MS, f"rank {r} waited for little of the sleep")
                others = sum(waits[r] for r in range(WORLD) if r != SLOW_RANK) / (WORLD - 1)
                self.assertAlmostEqual(rows[SLOW_RANK]["Others waited for it"], others, delta=0.1 * others, msg=summary)
                # The evidence is in the slowed rank's own window: its Python
                # thread is idle for the sleep in every step, longer than any
                # other rank's in most.
                gaps = [main_thread_gaps_ms(t) for t in j.traces]
                self.assertTrue(all(g >= 0.9 * SLOW_MS for g in gaps[SLOW_RANK]), gaps)

    def test_merge_gives_the_slowed_ranks_idle_host_as_evidence(self):
        # No one thread's gaps show the sleep against the other ranks (in
        # PyTorch autograd's thread makes the most calls, and the loop's
        # thread waits in loss.backward() on every rank), but the slowed
        # rank's GPU has no work while its host sleeps; the work that ends
        # the wait is the batch's copy, made from the loop.
        for mode, j in self.slowed.items():
            with self.subTest(mode=mode):
                summary = self.merge(j, "evidence-" + mode)
                line = next(l for l in summary.splitlines() if l.startswith("straggler:"))
                self.assertTrue(line.startswith(f"straggler: rank {SLOW_RANK}:"), summary)
                evidence = summary.split(line, 1)[1].splitlines()[1]
                self.assertIn("its host is idle longer", evidence, summary)
                with open(WORKLOAD) as f:
                    copy_line = next(i for i, l in enumerate(f, 1) if "tokens = tokens.cuda(" in l)
                self.assertRegex(evidence, rf"before cudaMemcpyAsync at \S*torch_ddp\.py\({copy_line}\): main$",
                                 summary)
                # The facts each rank wrote beside its trace give the same.
                facts = [p for r in range(WORLD) for p in glob.glob(os.path.join(j.out, f"*_rank{r}.*.job.json"))]
                self.assertEqual(len(facts), WORLD, j.out)
                r = prof("merge", "--summary-only", *facts)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(line + "\n  " + evidence.strip(), r.stdout)

    def test_merge_names_no_rank_when_none_is_slowed(self):
        j = self.even
        self.assertEqual(j.proc.returncode, 0, j.proc.stderr[-3000:])
        summary = self.merge(j, "even")
        line = next(l for l in summary.splitlines() if l.startswith("straggler:"))
        # Four ranks share two cores: the scheduler may still hold one back
        # in some steps, and then the truth agrees that it made the others
        # wait. A rank may be named only when the truth shows it cost the
        # others at least 2.5 % of the median step (prof merge's threshold is
        # 5 %), and then it must be that rank.
        cost = truth_costs_ms(j.traces, self.nccl_truth(j))
        worst = max(range(WORLD), key=lambda r: cost[r])
        step = median_step_ms(j.traces)
        if not line.startswith("straggler: none"):
            self.assertGreaterEqual(cost[worst], 0.025 * step, f"truth: costs {cost} ms, step {step:.3f} ms\n{summary}")
            self.assertTrue(line.startswith(f"straggler: rank {worst}:"), f"truth: costs {cost} ms\n{summary}")


if __name__ == "__main__":
    harness.main()
