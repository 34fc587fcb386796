"""CUDA graphs in PyPI's PyTorch under libprof, default settings, both modes
(test/workloads/torch_cuda_graph.py on the sim, checked against the truth
log): the loop PROF_STEP=auto finds replays a graph each step; every op each
replay ran is in the window once, with its graph, its node and the graph
launch that ran it, and with the Python line that captured its node:

  - torch.cuda.graph: the forward's lines (matmul and relu, the side
    stream's multiply, the second matmul and add) and the copy into the
    static output, each replay's ops on the line that captured them;
  - make_graphed_callables: the forward graph on the main thread's line, the
    backward graph (captured on autograd's thread) on the same line through
    the main thread (" (via thread <pid>)").

The summary's call-site table charges each line's replayed work to a row of
its own, and `prof summary` of the trace writes the same table (the trace
carries each node's capture stack)."""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_cuda_graph.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
PROF = os.environ.get("PROF_TOOL", "")
CAPTURED = " (captured; CUDA graph replays)"


def line_of(pattern, nth=0):
    with open(WORKLOAD) as f:
        return [n for n, text in enumerate(f, 1) if re.search(pattern, text)][nth]


RELU_LINE = line_of(r"h = torch\.relu\(x @ w1\)")
SKIP_LINE = line_of(r"skip = x \* 0\.5")
OUT_LINE = line_of(r"return h @ w2 \+ skip")
COPY_LINE = line_of(r"out\.copy_\(forward", nth=1)  # the one inside torch.cuda.graph
GRAPHED_LINE = line_of(r"graphed = torch\.cuda\.make_graphed_callables")


def site(line, function="main"):
    return f"torch_cuda_graph.py:{line} in {function}"


def run(python, mode, work, replays, train_steps):
    out = os.path.join(work, f"{mode}-{replays}-{train_steps}")
    truth_path = out + ".truth.jsonl"
    env = harness.clean_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1")
    env[mode] = harness.LIBPROF_SO
    proc = subprocess.run([SIMRUN, python, WORKLOAD, "--replays", str(replays), "--train-steps", str(train_steps)],
                          env=env, cwd=work, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"{mode}: the workload exited {proc.returncode}: {proc.stderr[-3000:]}")
    traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
    if len(traces) != 1:
        raise AssertionError(f"{mode}: one window expected, got {os.listdir(out)}")
    with open(traces[0]) as f:
        trace = json.load(f)
    with open(traces[0].replace(".pt.trace.json", ".summary.txt")) as f:
        summary = f.read()
    return {"trace_path": traces[0], "trace": trace, "summary": summary, "lines": truth.read(truth_path)}


class GraphLinesUnderLibprof(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN, PROF)
        cls.python = harness.need_venv("torch")
        cls.work = tempfile.mkdtemp(prefix="libprof-graph-lines-")
        cls.addClassCleanup(__import__("shutil").rmtree, cls.work, ignore_errors=True)
        # The replay loop (torch.cuda.graph) and the training loop (make_graphed_callables), each long enough
        # for the default window (steps 32-36 of the loop auto finds), counted from the iteration at which
        # the agent thread acted on its find: on a loaded machine that came at iteration 39 of 50 once.
        cls.replays = {m: run(cls.python, m, cls.work, 100, 2) for m in harness.INJECTION_MODES}
        cls.training = {m: run(cls.python, m, cls.work, 2, 100) for m in harness.INJECTION_MODES}

    def replayed(self, r):
        """(the window's graph ops, the truth's ops of the window's graph launches, the executable graphs'
        ids in instantiation order)."""
        events = r["trace"]["traceEvents"]
        launches = {e["args"]["correlation"] for e in events
                    if e.get("cat") == "cuda_runtime" and e["name"].startswith("cudaGraphLaunch")}
        ops = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "graph id" in e["args"]]
        truth_ops = [op for op in r["lines"] if op["type"] in truth.DEVICE_OPS and op.get("graph_id")
                     and op["correlation"] in launches]
        execs = [e["graph_id"] for e in truth.of_type(r["lines"], "graph_exec")]
        return ops, truth_ops, execs

    def each(self, runs, check):
        for mode, r in runs.items():
            with self.subTest(mode=mode):
                check(r)

    def test_every_replayed_op_is_in_the_window_once_with_its_graph_node_and_launch(self):
        def check(r):
            window = r["trace"]["libprof"]["window"]
            self.assertEqual((window["first_step"], window["last_step"]), (32, 36))
            ops, truth_ops, _ = self.replayed(r)
            self.assertGreaterEqual(len(truth_ops), 5, "the window's steps replay graphs")
            seen = collections.Counter((e["args"]["correlation"], e["args"].get("graph node id")) for e in ops)
            expected = collections.Counter((op["correlation"], op["graph_node_id"]) for op in truth_ops)
            self.assertEqual(seen, expected)
            by_key = {(op["correlation"], op["graph_node_id"]): op for op in truth_ops}
            for e in ops:
                self.assertEqual(e["args"]["graph id"], by_key[(e["args"]["correlation"], e["args"]["graph node id"])]["graph_id"])
        self.each(self.replays, check)
        self.each(self.training, check)

    def test_each_replayed_op_carries_the_line_that_captured_it(self):
        def check(r):
            ops, _, execs = self.replayed(r)
            replays = collections.Counter(e["args"]["correlation"] for e in ops)
            self.assertEqual(len(replays), 5, "one graph replay per step")
            per_line = collections.Counter(e["args"].get("captured at") for e in ops if e["cat"] == "kernel")
            self.assertEqual(per_line, {site(RELU_LINE, "forward"): 2 * 5, site(SKIP_LINE, "forward"): 5,
                                        site(OUT_LINE, "forward"): 2 * 5})
            copies = [e["args"].get("captured at") for e in ops if e["cat"] == "gpu_memcpy"]
            self.assertEqual(copies, [site(COPY_LINE)] * 5)
            self.assertEqual({e["args"]["graph id"] for e in ops}, {execs[0]})
        self.each(self.replays, check)

    def test_graphed_callables_forward_and_backward_carry_the_line_that_made_them(self):
        def check(r):
            ops, _, execs = self.replayed(r)
            forward, backward = execs[1], execs[2]
            pid = r["trace"]["libprof"]["pid"]
            self.assertTrue([e for e in ops if e["args"]["graph id"] == forward])
            self.assertTrue([e for e in ops if e["args"]["graph id"] == backward])
            for e in ops:
                if e["args"]["graph id"] == forward:
                    self.assertEqual(e["args"].get("captured at"), site(GRAPHED_LINE), e)
                else:
                    # Captured on autograd's thread, which has no Python frames: charged to the main thread,
                    # waiting in make_graphed_callables (its thread id is the pid).
                    self.assertEqual(e["args"].get("captured at"), site(GRAPHED_LINE) + f" (via thread {pid})", e)
        self.each(self.training, check)

    def test_the_summary_charges_replayed_work_to_the_capturing_lines(self):
        def check(r):
            ops, _, _ = self.replayed(r)
            rows = harness.summary_table(r["summary"], "GPU time by Python call site (innermost frame of your code; "
                                                       "PROF_PYTHON_USER)")
            captured = {row[-1][:-len(CAPTURED)]: row for row in rows if row[-1].endswith(CAPTURED)}
            kernels = collections.Counter(e["args"]["captured at"] for e in ops if e["cat"] == "kernel")
            work = collections.Counter(e["args"]["captured at"] for e in ops)
            self.assertEqual(set(captured), set(work))
            for line, row in captured.items():
                self.assertEqual(int(row[2]), kernels[line], row)  # Kernels
                self.assertEqual(int(row[-2]), 0, "no call of its own: the graph launch's row keeps the calls")
            # The trace carries the capture stacks: prof reads the same table back.
            prof = subprocess.run([PROF, "summary", r["trace_path"]], capture_output=True, text=True, timeout=120)
            self.assertEqual(prof.returncode, 0, prof.stderr)
            title = "GPU time by Python call site (innermost frame of your code; PROF_PYTHON_USER)"
            self.assertEqual(harness.summary_table(prof.stdout, title), rows)
        self.each(self.replays, check)
        self.each(self.training, check)


if __name__ == "__main__":
    harness.main()
