"""PyPI's PyTorch, unmodified, on the simulated stack (build/test/sim/simrun)
with CUDA graphs and several devices, checked against the sim's truth log:

  - test/workloads/torch_cuda_graph.py: torch.cuda.graph captures a few ops,
    a branch forked to a side stream and joined back, and a copy into a
    static output; every launch made during a capture becomes a graph node
    inside its own call and runs nothing; each replay runs every captured
    kernel and copy once, in order on the replay stream's timeline, with the
    executable graph's id and distinct node ids (the same on every replay);
    make_graphed_callables captures a forward and (on autograd's thread) a
    backward graph and replays both each training step;
  - test/workloads/torch_set_device.py with SIM_DEVICE_COUNT=4:
    torch.cuda.set_device(1) puts every op on device 1 with device 1's
    context, a tensor made on cuda:2 reaches device 1 by a peer copy, and
    torch.profiler's trace (Kineto on the sim's CUPTI) names device 1 for
    every kernel."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "..", "workloads")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
REPLAYS, TRAIN_STEPS = 5, 3


def run_workload(test_class, python, script, *args, **env):
    """Runs a workload through simrun in a scratch folder the class removes;
    returns (stages printed, truth lines, the folder)."""
    work = tempfile.mkdtemp(prefix="libprof-torch-graphs-")
    test_class.addClassCleanup(shutil.rmtree, work, ignore_errors=True)
    truth_path = os.path.join(work, "truth.jsonl")
    proc = subprocess.run([SIMRUN, python, os.path.join(WORKLOADS, script), *args],
                          env=harness.clean_env(SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1", **env),
                          cwd=work, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"{script} exited {proc.returncode}: {proc.stderr[-4000:]}")
    stages = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return stages, truth.read(truth_path), work


def outermost(lines):
    return [c for c in lines if c["type"] == "api" and c["correlation"] == c["outer_correlation"]]


class TorchCudaGraph(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(SIMRUN)
        cls.python = harness.need_venv("torch")
        cls.stages, cls.lines, _ = run_workload(cls, cls.python, "torch_cuda_graph.py", "--replays", str(REPLAYS),
                                                "--train-steps", str(TRAIN_STEPS))
        cls.calls = outermost(cls.lines)
        cls.by_correlation = {c["correlation"]: c for c in cls.lines if c["type"] == "api"}
        cls.ops = [op for op in cls.lines if op["type"] in truth.DEVICE_OPS]
        begins = [c for c in cls.calls if c["name"] == "cudaStreamBeginCapture"]
        ends = [c for c in cls.calls if c["name"] == "cudaStreamEndCapture"]
        # Capture windows: from each begin to its end, on the capturing thread's clock.
        cls.windows = list(zip(begins, ends))

    def test_the_program_runs_every_stage(self):
        self.assertEqual([s["stage"] for s in self.stages],
                         ["captured"] + ["replay"] * REPLAYS + ["train"] * TRAIN_STEPS + ["done"])

    def test_three_captures_each_ending_in_a_graph(self):
        # torch.cuda.graph, then make_graphed_callables' forward and backward graphs.
        self.assertEqual(len(self.windows), 3)
        for begin, end in self.windows:
            self.assertEqual((begin["result"], end["result"]), (0, 0))
        self.assertEqual(len(truth.of_type(self.lines, "graph_exec")), 3)
        self.assertEqual([c["result"] for c in self.calls if c["name"] == "cudaGraphInstantiateWithFlags"], [0, 0, 0])
        # PyTorch asks how many nodes each graph has (an empty capture warns).
        self.assertEqual([c["result"] for c in self.calls if c["name"] == "cudaGraphGetNodes"], [0, 0, 0])

    def nodes_in(self, window):
        begin, end = window
        return [n for n in truth.of_type(self.lines, "graph_node")
                if begin["start_ns"] <= self.by_correlation[n["correlation"]]["start_ns"] <= end["end_ns"]]

    def test_captured_launches_become_nodes_inside_their_calls_and_run_nothing(self):
        captured = set()
        for window in self.windows:
            nodes = self.nodes_in(window)
            self.assertTrue(nodes)
            for node in nodes:
                call = self.by_correlation[node["correlation"]]
                self.assertIn(node["api"], ("cudaLaunchKernel", "__cudaLaunchKernel", "cudaMemcpyAsync",
                                            "cudaMemsetAsync", "cublasGemmEx", "cublasSgemm_v2"),
                              "a node is made by a launch, copy or memset call")
                self.assertEqual(call["result"], 0)
                captured.add(node["correlation"])
        self.assertFalse(captured & {op["correlation"] for op in self.ops}, "nothing captured ran when captured")

    def test_the_fork_to_the_side_stream_is_captured_and_joined(self):
        begin, end = self.windows[0]
        inside = [c for c in self.calls if c["thread"] == begin["thread"] and begin["start_ns"] <= c["start_ns"]
                  and c["end_ns"] <= end["end_ns"]]
        records = [c for c in inside if c["name"] in ("cudaEventRecord", "cudaEventRecordWithFlags")]
        waits = [c for c in inside if c["name"] == "cudaStreamWaitEvent"]
        self.assertGreaterEqual(len(records), 2, "fork and join each record an event")
        self.assertGreaterEqual(len(waits), 2)
        self.assertTrue(all(c["result"] == 0 for c in records + waits))
        waited = {c["correlation"] for c in waits}
        self.assertFalse([s for s in truth.of_type(self.lines, "sync") if s["correlation"] in waited],
                         "a wait inside a capture is no device synchronization")
        # relu, matmul, mul (the side stream's), matmul, add, and the copy into the static output.
        self.assertEqual(len(self.nodes_in(self.windows[0])), 6)

    def replays_of(self, exec_id):
        launches = [c for c in self.calls if c["name"] == "cudaGraphLaunch"]
        runs = []
        for launch in launches:
            mine = [op for op in self.ops if op["correlation"] == launch["correlation"]]
            if mine and mine[0]["graph_id"] == exec_id:
                runs.append((launch, mine))
        return runs

    def test_each_replay_runs_every_captured_node_in_order_on_the_replay_stream(self):
        execs = [e["graph_id"] for e in truth.of_type(self.lines, "graph_exec")]
        launches = [c for c in self.calls if c["name"] == "cudaGraphLaunch"]
        self.assertEqual(len(launches), REPLAYS + 2 * TRAIN_STEPS)
        self.assertTrue(all(c["result"] == 0 for c in launches))
        expected_runs = [REPLAYS, TRAIN_STEPS, TRAIN_STEPS]
        for window, exec_id, count in zip(self.windows, execs, expected_runs):
            nodes = self.nodes_in(window)
            runs = self.replays_of(exec_id)
            self.assertEqual(len(runs), count)
            first_ids = None
            for launch, ops in runs:
                self.assertEqual(len(ops), len(nodes), "every node once per replay")
                self.assertEqual(collections.Counter(op["type"] for op in ops)["memcpy"],
                                 sum(1 for n in nodes if n["api"] == "cudaMemcpyAsync"))
                self.assertEqual({op["graph_id"] for op in ops}, {exec_id})
                ids = [op["graph_node_id"] for op in ops]
                self.assertEqual(len(set(ids)), len(ids))
                self.assertTrue(all(ids))
                if first_ids is not None:
                    self.assertEqual(ids, first_ids, "the same nodes on every replay")
                first_ids = ids
                self.assertEqual(len({(op["device"], op["stream"]) for op in ops}), 1, "on the replay stream")
                previous_end = launch["start_ns"]
                for op in ops:
                    self.assertGreaterEqual(op["start_ns"], previous_end)
                    previous_end = op["end_ns"]
                for op in ops:
                    if op["type"] == "kernel":
                        self.assertEqual(op["end_ns"] - op["start_ns"], truth.kernel_ns(op))

    def test_the_backward_graph_is_captured_on_autograds_thread(self):
        main_thread = self.windows[0][0]["thread"]
        backward_nodes = self.nodes_in(self.windows[2])
        threads = {self.by_correlation[n["correlation"]]["thread"] for n in backward_nodes}
        self.assertTrue(threads - {main_thread}, "autograd's engine thread launched into the capture")


class TorchSetDevice(unittest.TestCase):
    DEVICE = 1

    @classmethod
    def setUpClass(cls):
        harness.need(SIMRUN)
        cls.python = harness.need_venv("torch")
        cls.stages, cls.lines, work = run_workload(cls, cls.python, "torch_set_device.py", "--trace",
                                                   "trace.json", "--device", str(cls.DEVICE), SIM_DEVICE_COUNT=4)
        with open(os.path.join(work, "trace.json")) as f:
            cls.trace = json.load(f)
        cls.ops = [op for op in cls.lines if op["type"] in truth.DEVICE_OPS]

    def test_the_program_sees_four_devices_and_works_on_device_1(self):
        self.assertEqual(self.stages[0], {"stage": "start", "count": 4})
        self.assertEqual(self.stages[1], {"stage": "ops", "current": 1, "device": "cuda:1"})
        self.assertEqual(self.stages[2], {"stage": "copied", "source": "cuda:2", "destination": "cuda:1"})
        self.assertEqual(self.stages[-1], {"stage": "done", "current": 1})
        set_device = [c for c in outermost(self.lines) if c["name"] == "cudaSetDevice"]
        self.assertTrue(set_device and all(c["result"] == 0 for c in set_device))

    def test_every_kernel_runs_on_its_device_with_its_devices_context(self):
        kernels = [op for op in self.ops if op["type"] == "kernel"]
        devices = collections.Counter(op["device"] for op in kernels)
        self.assertEqual(set(devices), {1, 2}, "device 1's work, and the ones fill on cuda:2")
        self.assertEqual(devices[2], 1)
        self.assertFalse([op for op in self.ops if op["device"] == 0], "nothing ran on device 0")
        contexts = {op["device"]: set() for op in self.ops}
        for op in self.ops:
            contexts[op["device"]].add(op["context"])
        self.assertEqual(len(contexts[1]), 1)
        self.assertNotEqual(contexts[1], contexts[2], "each device's primary context")

    def test_the_tensor_from_cuda_2_arrives_by_a_peer_copy(self):
        peer = [op for op in self.ops if op["type"] == "memcpy" and op["copy_kind"] == truth.PTOP]
        self.assertEqual(len(peer), 1)
        self.assertEqual((peer[0]["src_device"], peer[0]["dst_device"], peer[0]["bytes"]), (2, 1, 4096))
        self.assertEqual(peer[0]["end_ns"] - peer[0]["start_ns"], truth.copy_ns(peer[0]))

    def test_torch_profiler_names_device_1_for_every_kernel(self):
        kernels = [e for e in self.trace["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 6, "three matmuls and three relus")
        self.assertEqual({e["args"]["device"] for e in kernels}, {1})


if __name__ == "__main__":
    harness.main()
