"""On a machine with an NVIDIA GPU: train_loop under libprof on the real
CUDA stack (the toolkit's libcudart and libcupti, the machine's driver).
Skipped (exit 77) where there is no GPU, which is every CI machine.

Proves, on real hardware: the host's output and exit status are unchanged;
the windows the schedule implies are written and validate; CUPTI delivered
GPU timings ("activity" mode) with no loss; every step holds the kernels
train_loop launches (6 per step, four distinct names), each tied to its
launching call and never earlier than it.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import harness

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=1)
KERNELS_PER_STEP = 6


def gpu_present():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    probe = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return probe.returncode == 0 and "GPU" in probe.stdout


def real_env(**extra):
    env = harness.clean_env(**extra)
    lib64 = os.path.join(harness.CUDA_HOME, "lib64")
    env["LD_LIBRARY_PATH"] = lib64 + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


class RealGpu(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        args = [TRAIN_LOOP, "--steps", "10", "--manual-steps"]
        cls.bare = harness.run(args, real_env())
        cls.profiled = harness.run(args, real_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR=cls.tmp.name,
                                                  **SCHEDULE))
        cls.traces = sorted(glob.glob(os.path.join(cls.tmp.name, "*.pt.trace.json")))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_host_unchanged(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stderr)
        self.assertEqual(self.profiled.returncode, 0, self.profiled.stderr)
        self.assertEqual(self.profiled.stdout, self.bare.stdout)

    def test_one_valid_window_with_gpu_timings_and_no_loss(self):
        self.assertEqual(len(self.traces), 1, self.profiled.stderr)
        check = subprocess.run([harness.PROF_TOOL, "validate", self.traces[0]], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        with open(self.traces[0]) as f:
            meta = json.load(f)["libprof"]
        self.assertEqual(meta["cupti_mode"], "activity")
        self.assertTrue(meta["gpu_timings"])
        self.assertEqual(sum(meta["losses"].values()), 0, meta["losses"])

    def test_every_step_holds_its_kernels_tied_to_their_launches(self):
        with open(self.traces[0]) as f:
            events = json.load(f)["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), SCHEDULE["PROF_ACTIVE"] * KERNELS_PER_STEP)
        self.assertEqual(len({k["name"] for k in kernels}), 4)
        calls = {e["args"]["correlation"]: e for e in events
                 if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
        for k in kernels:
            call = calls.get(k["args"]["correlation"])
            self.assertIsNotNone(call, k["name"])
            self.assertGreaterEqual(k["ts"], call["ts"])


if __name__ == "__main__":
    if not gpu_present():
        print("no NVIDIA GPU here (nvidia-smi -L finds none): skipped")
        sys.exit(77)
    harness.main()
