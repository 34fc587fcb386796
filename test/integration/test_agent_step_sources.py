"""Every PROF_STEP source gives the same windows whether libprof is loaded
with LD_PRELOAD (its wrappers are on the program's call path) or with
CUDA_INJECTION64_PATH alone (they are not: calls reach the marker path
through CUPTI's callbacks).

Proves, for sync, api:<fn>, kernel:<regex>, nvtx:<regex> and manual on the
same train_loop run in both modes: the same windows are written (same first
and last steps), each holds the same work (kernels, copies, memsets and
calls per API name), and a marker is counted once even when both a wrapper
and CUPTI see the call (LD_PRELOAD: a double count would halve the steps and
move every window). The expected step numbers are computed from the
workload's loop, not from a run, so a mode that fires no marker at all (the
defect this guards: no window under injection) fails.
"""
import collections
import glob
import json
import os
import tempfile
import unittest

import harness

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
STEPS = 16
ARGS = [TRAIN_LOOP, "--steps", str(STEPS), "--manual-steps"]
SCHEDULE = dict(PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=2, PROF_FLUSH_TIMEOUT_MS=5000)

# Markers per loop iteration of train_loop (see test/workloads/README.md):
# one cudaStreamSynchronize, one NVTX range train_step, one prof_step(), one
# relu_forward among its 6 kernels, three cudaMemcpyAsync (H2D, D2D, D2H).
SOURCES = {
    "sync": 1,
    "api:cudaStreamSynchronize": 1,
    "api:cudaMemcpyAsync": 3,
    "kernel:relu_forward": 1,
    "nvtx:^train_step$": 1,
    "manual": 1,
}


def windows_expected(per_iteration):
    """(first, last) steps of the two windows: wait 2, warmup 1, active 3, repeat 2."""
    del per_iteration  # the schedule is in steps whatever a step is
    return [(3, 5), (9, 11)]


def window_summary(path):
    with open(path) as f:
        trace = json.load(f)
    meta = trace["libprof"]["window"]
    counts = collections.Counter()
    for e in trace["traceEvents"]:
        cat = e.get("cat")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            counts[cat] += 1
        elif cat == "cuda_runtime" and e.get("ph") == "X":
            counts["call " + e["name"]] += 1
    return meta, counts


class StepSourcesInBothModes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, TRAIN_LOOP)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.bare = harness.run(ARGS, harness.sim_env())
        cls.runs = {}
        for source in SOURCES:
            for mode in ("LD_PRELOAD", "CUDA_INJECTION64_PATH"):
                out = os.path.join(cls.tmp.name, f"{mode}-{len(cls.runs)}")
                env = harness.sim_env(PROF_OUTPUT_DIR=out, PROF_STEP=source, NVTX_INJECTION64_PATH=harness.LIBPROF_SO,
                                      **SCHEDULE)
                env[mode] = harness.LIBPROF_SO
                proc = harness.run(ARGS, env)
                traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
                cls.runs[source, mode] = (proc, [window_summary(t) for t in traces])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_host_output_and_exit_status_unchanged(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stderr)
        for (source, mode), (proc, _) in self.runs.items():
            with self.subTest(source=source, mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout, self.bare.stdout)

    def test_each_source_writes_the_scheduled_windows_in_both_modes(self):
        for (source, mode), (proc, windows) in self.runs.items():
            with self.subTest(source=source, mode=mode):
                got = [(m["first_step"], m["last_step"]) for m, _ in windows]
                self.assertEqual(got, windows_expected(SOURCES[source]), proc.stderr)

    def test_windows_hold_the_same_work_in_both_modes(self):
        for source, per_iteration in SOURCES.items():
            with self.subTest(source=source):
                _, preload = self.runs[source, "LD_PRELOAD"]
                _, injected = self.runs[source, "CUDA_INJECTION64_PATH"]
                self.assertEqual(len(preload), len(injected))
                for (_, a), (_, b) in zip(preload, injected):
                    self.assertEqual(a, b)
                    # A window of 3 steps holds 3 / per_iteration loop
                    # iterations' kernels (6 each) when steps follow the loop.
                    if per_iteration == 1:
                        self.assertEqual(a["kernel"], 3 * 6, a)


if __name__ == "__main__":
    harness.main()
