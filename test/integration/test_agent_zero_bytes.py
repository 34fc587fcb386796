"""No false losses: a copy or memset of zero bytes enqueues nothing on the
device, so a window holding such calls must not wait for their records nor
count them missing.

train_loop --zero-bytes makes, every step, two zero-byte cudaMemcpy, one
zero-byte cudaMemcpyAsync, one zero-byte cudaMemset and one zero-byte
cudaMemsetAsync besides its real work, and 2D/3D boxes with one zero extent
(cudaMemcpy2D 0 bytes wide, cudaMemcpy2DAsync and cudaMemset2D of 0 rows,
cudaMemcpy3D of 0 slices: the runtime reference defines them as height rows
of width bytes, and a 3D copy by its extent, so none moves a byte). Under LD_PRELOAD and under
CUDA_INJECTION64_PATH: each window holds those calls (so the test sees
them), the sim's truth log has no device operation for them, every window
reports 0 device records missing and its summary no data-loss finding, and
the window's copies and memsets are exactly the real ones of its steps.
"""
import glob
import json
import os
import re
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
STEPS = 12
ARGS = [TRAIN_LOOP, "--steps", str(STEPS), "--manual-steps", "--zero-bytes"]
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=2,
                PROF_FLUSH_TIMEOUT_MS=1000)
COPY_CALLS = ("cudaMemcpy", "cudaMemcpyAsync", "cudaMemset", "cudaMemsetAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync",
              "cudaMemset2D", "cudaMemcpy3D")


# test_agent_own_calls.py's runs, checked for other things: each file its own scenario.
class ZeroByteCallsAreNotLosses(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, TRAIN_LOOP)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {}
        for mode, (proc, out, truth_path) in harness.run_in_each_mode(ARGS, cls.tmp.name, **SCHEDULE).items():
            traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
            summaries = sorted(glob.glob(os.path.join(out, "*.summary.txt")))
            cls.runs[mode] = (proc, traces, summaries, truth.read(truth_path))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_sim_enqueues_nothing_for_zero_bytes(self):
        for mode, (proc, _, _, lines) in self.runs.items():
            with self.subTest(mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                memset_calls = [l for l in truth.api(lines, domain="runtime")
                              if l["name"] in ("cudaMemset", "cudaMemsetAsync")]
                # One real cudaMemsetAsync and two zero-byte memsets a step.
                self.assertEqual(len(memset_calls), 3 * STEPS, "the zero-byte memsets were made")
                ops = truth.of_type(lines, "memcpy", "memset")
                self.assertTrue(ops, "the real copies and memsets are in the truth log")
                self.assertEqual([o for o in ops if o["bytes"] == 0], [], "no device operation of zero bytes")

    def test_no_window_counts_zero_byte_calls_missing(self):
        for mode, (proc, traces, summaries, lines) in self.runs.items():
            with self.subTest(mode=mode):
                with_work = {o["correlation"] for o in truth.of_type(lines, "memcpy", "memset")}
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(len(traces), 2, f"two windows: {traces} {proc.stderr}")
                self.assertEqual(len(summaries), 2, summaries)
                for path in traces:
                    with open(path) as f:
                        trace = json.load(f)
                    self.assertEqual(trace["libprof"]["losses"]["device_records_missing"], 0, path)
                    # Whether a call moved bytes, from the truth log: the
                    # correlations the sim put device work under.
                    calls = {e["args"]["correlation"] for e in trace["traceEvents"]
                             if e.get("cat") == "cuda_runtime" and e.get("ph") == "X" and e["name"] in COPY_CALLS}
                    moving, empty = calls & with_work, calls - with_work
                    # The window holds zero-byte calls (two copies, one async
                    # copy and two memsets a step, and the four 2D/3D ones) ...
                    self.assertGreaterEqual(len(empty), 9, path)
                    # ... and exactly one device record for each call that moves bytes.
                    device = [e["args"]["correlation"] for e in trace["traceEvents"]
                              if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
                    self.assertEqual(sorted(device), sorted(moving), path)
                for path in summaries:
                    with open(path) as f:
                        text = f.read()
                    self.assertNotIn("never delivered", text, path)
                    self.assertEqual(re.findall(r"^ \[data-loss\]", text, re.M), [], path)


if __name__ == "__main__":
    unittest.main()
