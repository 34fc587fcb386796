"""CUDA graphs on the simulated stack (test/sim/driver/graph.h): launches
into a capturing stream become graph nodes, not device work, and are
reported inside the launching call; cudaGraphLaunch runs the executable
graph's nodes in order on its stream, each attributed to the graph launch's
correlation id with the executable graph's id and its own node id."""
import os
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

STEPS, KERNELS = 4, 3


def run_graph_loop(*args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "truth.jsonl")
        proc = harness.run([os.path.join(harness.WORKLOAD_DIR, "graph_loop"), *args],
                           harness.sim_env(SIM_TRUTH_FILE=path))
        return proc, truth.read(path)


class SimGraphsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(os.path.join(harness.WORKLOAD_DIR, "graph_loop"))
        cls.proc, cls.lines = run_graph_loop("--steps", str(STEPS), "--kernels", str(KERNELS), "--recapture-at", "2")

    def api(self, name):
        return [c for c in truth.api(self.lines, name) if c["correlation"] == c["outer_correlation"]]

    def test_the_program_runs_and_sees_its_stream_capturing(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(self.proc.stdout.count(f"captured {KERNELS} kernels (capturing=1)"), 2)
        self.assertIn(f"done steps={STEPS}", self.proc.stdout)

    def test_captured_launches_create_nodes_inside_the_launch_call_and_run_nothing(self):
        nodes = truth.of_type(self.lines, "graph_node")
        self.assertEqual(len(nodes), 2 * KERNELS)
        launches = {c["correlation"]: c for c in self.api("__cudaLaunchKernel")}
        self.assertEqual(len(launches), 2 * KERNELS, "every launch in the program was captured")
        for node in nodes:
            self.assertIn(node["correlation"], launches, "reported inside the launching call")
        kernels = truth.of_type(self.lines, "kernel")
        self.assertFalse({k["correlation"] for k in kernels} & set(launches), "a captured launch ran nothing")

    def test_each_graph_launch_runs_every_node_in_order_under_its_own_correlation(self):
        graph_launches = self.api("cudaGraphLaunch")
        self.assertEqual(len(graph_launches), STEPS)
        kernels = truth.of_type(self.lines, "kernel")
        self.assertEqual(len(kernels), STEPS * KERNELS)
        execs = truth.of_type(self.lines, "graph_exec")
        self.assertEqual(len(execs), 2)
        for launch in graph_launches:
            mine = [k for k in kernels if k["correlation"] == launch["correlation"]]
            self.assertEqual(len(mine), KERNELS)
            self.assertEqual([k["name"] for k in mine][:2], ["_Z10graph_gemmPfi", "_Z10graph_biasPfi"])
            self.assertEqual(len({k["graph_id"] for k in mine}), 1)
            self.assertIn(mine[0]["graph_id"], {e["graph_id"] for e in execs}, "the executable graph's id")
            self.assertEqual(len({k["graph_node_id"] for k in mine}), KERNELS)
            self.assertTrue(all(k["graph_node_id"] > 0 for k in mine))
            previous_end = 0
            for k in mine:
                self.assertGreaterEqual(k["start_ns"], launch["start_ns"], "never before the graph launch")
                self.assertGreaterEqual(k["start_ns"], previous_end, "nodes of a captured chain run in order")
                previous_end = k["end_ns"]
        before, after = graph_launches[1], graph_launches[2]  # recaptured at step 2
        graph_of = lambda launch: {k["graph_id"] for k in kernels if k["correlation"] == launch["correlation"]}
        self.assertNotEqual(graph_of(before), graph_of(after))


if __name__ == "__main__":
    harness.main()
