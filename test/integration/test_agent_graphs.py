"""CUDA graphs through the agent on the simulated stack (graph_loop): a
capture inside a profiled window puts no device work in flight, so the
window neither waits for records that cannot come nor reports them missing
(the host would otherwise stall up to PROF_FLUSH_TIMEOUT_MS at exit), and
every kernel a graph launch runs is in its window, tied to that
cudaGraphLaunch by correlation and carrying the graph's id."""
import os
import time
import unittest

import harness
from test_agent_support import api_events, need, run_agent, workload

STEPS, KERNELS, RECAPTURE_AT = 6, 3, 2
# Steps 1-3 are recorded; the program captures a fresh graph at step 2.
SCHEDULE = dict(PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=0, PROF_ACTIVE=3, PROF_REPEAT=1)
FLUSH_TIMEOUT_S = 5


def run_graph_loop(**env):
    start = time.monotonic()
    run = run_agent([workload("graph_loop"), "--steps", str(STEPS), "--kernels", str(KERNELS),
                     "--recapture-at", str(RECAPTURE_AT)],
                    PROF_FLUSH_TIMEOUT_MS=str(FLUSH_TIMEOUT_S * 1000), **SCHEDULE, **env)
    return run, time.monotonic() - start


class GraphsThroughTheAgent(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("graph_loop"))

    def check_capture_in_window(self, **env):
        run, wall_s = run_graph_loop(**env)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn(f"done steps={STEPS}", run.proc.stdout)
        self.assertEqual(run.windows(), [(1, 3)])
        trace = run.traces[0][1]
        self.assertEqual(trace["libprof"]["losses"]["device_records_missing"], 0)
        self.assertLess(wall_s, FLUSH_TIMEOUT_S / 2, "the window waited for records of captured launches")
        # nvcc 13 host code launches through __cudaLaunchKernel, nvcc 12's
        # through cudaLaunchKernel.
        launch = "cudaLaunchKernel" if harness.SIM_PERSONALITY == "12" else "__cudaLaunchKernel"
        captured = [e for e in api_events(trace) if e["name"] == launch]
        self.assertEqual(len(captured), KERNELS, "the recapture's launches are in the window")
        return trace

    def test_a_capture_in_the_window_neither_stalls_nor_counts_missing_records(self):
        self.check_capture_in_window()

    def test_the_same_with_kernel_records_only(self):
        # Without RUNTIME records nothing but a kernel record could satisfy a
        # launch: the captured ones must be known to put no work in flight.
        self.check_capture_in_window(PROF_ACTIVITIES="kernel")

    def test_every_graph_kernel_is_tied_to_its_graph_launch(self):
        trace = self.check_capture_in_window()
        launches = [e for e in api_events(trace) if e["name"] == "cudaGraphLaunch"]
        self.assertEqual(len(launches), 3)
        kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 3 * KERNELS)
        by_launch = {}
        for k in kernels:
            by_launch.setdefault(k["args"]["correlation"], []).append(k)
        self.assertEqual(sorted(by_launch), sorted(e["args"]["correlation"] for e in launches))
        graph_ids = set()
        for launch in launches:
            mine = by_launch[launch["args"]["correlation"]]
            self.assertEqual(len(mine), KERNELS)
            self.assertTrue(all(k["ts"] >= launch["ts"] for k in mine), "no kernel before its graph launch")
            self.assertEqual(len({k["args"]["graph id"] for k in mine}), 1)
            graph_ids.add(mine[0]["args"]["graph id"])
        self.assertEqual(len(graph_ids), 2, "steps before and after the recapture run different graphs")


if __name__ == "__main__":
    harness.main()
