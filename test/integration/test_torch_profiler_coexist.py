"""The program's own torch.profiler and libprof in the same PyTorch process
(issue "torch.profiler in the same process", item 3), on the simulated stack
(build/test/sim/simrun, PyPI's torch from the tests' venv) under both
injection modes and both of the sim CUPTI's subscriber rules
(test/sim/cupti/README.md, "Subscribers"):

  - classic CUPTI 13.0: one client of the process-wide activity API, which
    torch.profiler's Kineto uses without subscribing;
  - SIM_CUPTI_SUBSCRIBERS=multi, CUPTI 13.2: libprof subscribes with
    allowMultipleSubscribers and records through an activity client of its own.

test/workloads/torch_train.py (a small transformer, each iteration ending
with torch.cuda.synchronize() and prof.step()) profiles itself with
--torch-profiler; libprof counts steps with PROF_STEP=api:cudaDeviceSynchronize.
Two orders:

  - torch_first: torch.profiler records iterations 2-4 (wait 1, warmup 1);
    libprof's first window (PROF_WAIT=2) overlaps that session and its
    second (PROF_REPEAT=2) comes after it;
  - libprof_first: libprof's one window is steps 1-2; torch.profiler's warmup
    waits until libprof wrote that window (--torch-profiler-after), then it
    records three iterations.

Held in every case:
  - the program's trace is complete, as without libprof: every kernel, copy
    and memset of its active iterations exactly once (the truth log's,
    iterations told apart by their batch copies), each with the truth's
    duration, no record of a kind it did not ask for (libprof's
    synchronizations), and Kineto never handed a buffer it did not allocate;
  - libprof's windows: where the subscriber rule lets both record, and
    wherever CUPTI was libprof's, every GPU op launched by the window's calls
    is in the window with the truth's duration; where another client held
    CUPTI's activity API during the window (classic, torch_first), the window
    counts the launches whose records went to it (device_records_elsewhere),
    says so in its summary's data-loss finding and in one log line, and under
    LD_PRELOAD its next window, after torch.profiler released CUPTI, is
    complete again; under CUDA_INJECTION64_PATH, where libprof cannot see
    torch.profiler, it senses the other client and leaves CUPTI alone from
    then on, saying so in one warning."""
import collections
import glob
import json
import os
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_train.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
BATCH, SEQ_LEN = 8, 32
MODEL = ["--layers", "1", "--dim", "64", "--seq-len", str(SEQ_LEN), "--batch", str(BATCH)]
RULES = {"classic": {}, "multi": {"SIM_CUPTI_SUBSCRIBERS": "multi"}}
DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
ORDERS = {
    # (torch_train arguments, libprof's schedule)
    "torch_first": (["--steps", "14", "--wait", "1", "--warmup", "1", "--active", "3"],
                    {"PROF_WAIT": 2, "PROF_WARMUP": 1, "PROF_ACTIVE": 2, "PROF_REPEAT": 2}),
    "libprof_first": (["--steps", "10", "--wait", "4", "--warmup", "1", "--active", "3"],
                      {"PROF_WAIT": 0, "PROF_WARMUP": 1, "PROF_ACTIVE": 2, "PROF_REPEAT": 1}),
}


class Run:
    def __init__(self, case, proc, work):
        self.case, self.proc = case, proc
        self.lines = truth.read(os.path.join(work, "truth.jsonl"))
        path = os.path.join(work, "torch.pt.trace.json")
        self.kineto = json.load(open(path)) if os.path.exists(path) else None
        self.windows = []
        for p in sorted(glob.glob(os.path.join(work, "out", "*.pt.trace.json")),
                        key=lambda p: int(p.rsplit(".", 4)[-4])):
            with open(p) as f, open(p.replace(".pt.trace.json", ".summary.txt")) as s:
                self.windows.append((json.load(f), s.read()))


def run(python, case, work):
    mode, rule, order = case
    torch_args, schedule = ORDERS[order]
    out = os.path.join(work, "out")
    os.makedirs(work)
    env = harness.clean_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=os.path.join(work, "truth.jsonl"),
                            PYTHONUNBUFFERED="1", PROF_STEP="api:cudaDeviceSynchronize", **RULES[rule], **schedule)
    env[mode] = harness.LIBPROF_SO
    args = [SIMRUN, python, WORKLOAD, *MODEL, *torch_args, "--torch-profiler", os.path.join(work, "torch.pt.trace.json")]
    if order == "libprof_first":
        args += ["--torch-profiler-after", os.path.join(out, "*.summary.txt")]
    return Run(case, harness.run(args, env, timeout=240), work)


def iterations(lines):
    """The process's pid, and per iteration the correlation id that opens it
    (its batch's first pinned host-to-device copy), with one past the end."""
    pid = next(l["pid"] for l in lines if l["type"] == "api")
    batch = [op["correlation"] for op in truth.of_type(lines, "memcpy")
             if op["pid"] == pid and op["copy_kind"] == truth.HTOD and op["src_kind"] == truth.PINNED
             and op["bytes"] == BATCH * SEQ_LEN * 8]
    return pid, batch[::2] + [float("inf")]


def device_events(trace):
    return [(DEVICE_CATS[e["cat"]], e) for e in trace["traceEvents"] if e.get("cat") in DEVICE_CATS]


class TorchProfilerBesideLibprof(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN)
        python = harness.need_venv("torch")
        cls.tmp = tempfile.mkdtemp(prefix="libprof-torch-coexist-")
        cases = [(mode, rule, order) for mode in harness.INJECTION_MODES for rule in RULES for order in ORDERS]
        # Two at a time: each run is mostly one busy Python thread.
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = pool.map(lambda c: run(python, c, os.path.join(cls.tmp, "-".join(c))), cases)
            cls.runs = dict(zip(cases, runs))

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def each(self, check, **only):
        for case, r in self.runs.items():
            mode, rule, order = case
            if any({"mode": mode, "rule": rule, "order": order}[k] != v for k, v in only.items()):
                continue
            with self.subTest(mode=mode, rule=rule, order=order):
                self.assertEqual(r.proc.returncode, 0, r.proc.stderr[-3000:])
                check(r)

    def test_the_programs_trace_is_complete_as_without_libprof(self):
        def check(r):
            self.assertIsNotNone(r.kineto, r.proc.stderr[-3000:])
            self.assertNotIn("unknown buffer", r.proc.stderr)
            first, last = (int(x) for x in r.proc.stdout.split("torch.profiler: steps ")[1].split()[0].split("-"))
            pid, starts = iterations(r.lines)
            ops = {op["correlation"]: op for op in truth.of_type(r.lines, *truth.DEVICE_OPS)
                   if op["pid"] == pid and starts[first] <= op["correlation"] < starts[last + 1]}
            want = collections.Counter((op["type"], c) for c, op in ops.items())
            got = collections.Counter((kind, e["args"]["correlation"]) for kind, e in device_events(r.kineto))
            self.assertGreater(sum(1 for k in want if k[0] == "kernel"), 200)
            self.assertEqual(want - got, collections.Counter(), "launched in its active steps, not in its trace")
            self.assertEqual(got - want, collections.Counter(), "in its trace, not launched in its active steps")
            for kind, e in device_events(r.kineto):
                op = ops[e["args"]["correlation"]]
                self.assertAlmostEqual(e["dur"] * 1000, op["end_ns"] - op["start_ns"], delta=2, msg=e["name"][:60])
            # Only what it asked for: no synchronization records (libprof's kind).
            self.assertNotIn("cuda_sync", {e.get("cat") for e in r.kineto["traceEvents"]})
        self.each(check)

    def window_is_complete(self, r, trace):
        """Every GPU op the window's calls launched is in it, with the truth's duration."""
        pid, _ = iterations(r.lines)
        calls = {e["args"]["correlation"] for e in trace["traceEvents"]
                 if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
        ops = {op["correlation"]: op for op in truth.of_type(r.lines, *truth.DEVICE_OPS)
               if op["pid"] == pid and op["correlation"] in calls}
        got = collections.Counter((kind, e["args"]["correlation"]) for kind, e in device_events(trace))
        want = collections.Counter((op["type"], c) for c, op in ops.items())
        self.assertGreater(sum(1 for k in want if k[0] == "kernel"), 100)
        self.assertEqual(want - got, collections.Counter(), "launched in the window, not in it")
        self.assertEqual(got - want, collections.Counter(), "in the window, not launched in it")
        for kind, e in device_events(trace):
            op = ops[e["args"]["correlation"]]
            self.assertAlmostEqual(harness.true_dur_ns(e), op["end_ns"] - op["start_ns"], delta=2, msg=e["name"][:60])
        self.assertEqual(trace["libprof"]["losses"].get("device_records_elsewhere", 0), 0)
        self.assertEqual(trace["libprof"]["losses"]["device_records_missing"], 0)

    def says_what_went_elsewhere(self, r, trace, summary):
        lost = trace["libprof"]["losses"].get("device_records_elsewhere", 0)
        self.assertGreater(lost, 50)
        self.assertIn(f"{lost} launches whose GPU records CUPTI wrote for another profiler", summary)
        w = trace["libprof"]["window"]
        self.assertIn(f"window steps {w['first_step']}-{w['last_step']}: {lost} launches have no GPU record",
                      r.proc.stderr)

    def test_both_record_everything_where_cupti_lets_several_subscribers_in(self):
        def check(r):
            self.assertIn("subscribed beside other tools (allowMultipleSubscribers", r.proc.stderr)
            self.assertEqual(len(r.windows), 2 if r.case[2] == "torch_first" else 1)
            for trace, _ in r.windows:
                self.assertEqual(trace["libprof"]["cupti_api_version"], 130202)  # Kernel11 records
                self.window_is_complete(r, trace)
        self.each(check, rule="multi")

    def test_one_client_libprof_first_then_the_program_both_complete(self):
        def check(r):
            self.assertEqual(len(r.windows), 1)
            self.window_is_complete(r, r.windows[0][0])
        self.each(check, rule="classic", order="libprof_first")

    def test_one_client_under_ld_preload_libprof_hands_cupti_over_and_takes_it_back(self):
        def check(r):
            self.assertIn("CUPTI's activity API claimed by libtorch_cpu.so (PyTorch's torch.profiler)", r.proc.stderr)
            self.assertIn("CUPTI's activity API released by libtorch_cpu.so", r.proc.stderr)
            (first, first_summary), (second, _) = r.windows
            self.says_what_went_elsewhere(r, first, first_summary)
            self.window_is_complete(r, second)
        self.each(check, mode="LD_PRELOAD", rule="classic", order="torch_first")

    def test_one_client_under_injection_libprof_senses_the_program_and_leaves_cupti_alone(self):
        def check(r):
            warnings = [l for l in r.proc.stderr.splitlines() if "held by another client libprof cannot see" in l]
            self.assertEqual(len(warnings), 1, r.proc.stderr[-3000:])
            self.assertEqual(len(r.windows), 2)
            for trace, summary in r.windows:
                self.assertEqual(device_events(trace), [])
                self.says_what_went_elsewhere(r, trace, summary)
                # It still records the calls (host events through CUPTI's callbacks).
                self.assertGreater(sum(1 for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime"), 100)
        self.each(check, mode="CUDA_INJECTION64_PATH", rule="classic", order="torch_first")


if __name__ == "__main__":
    harness.main()
