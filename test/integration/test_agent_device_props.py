"""The trace's deviceProperties and the kernel occupancy arguments come from
the driver the process loaded (here the simulated H100 of test/sim, whose
properties test/sim/README.md documents), not from a table in libprof.

Proves: one device with the driver's name, SM count, compute capability and
limits; every kernel carries Kineto's "blocks per SM" (= blocks / SMs),
"warps per SM" and an occupancy estimate within (0, 100].
"""
import glob
import json
import os
import tempfile
import unittest

import harness

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=1)


class DeviceProperties(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, TRAIN_LOOP)
        with tempfile.TemporaryDirectory() as out:
            proc = harness.run([TRAIN_LOOP, "--steps", "6", "--manual-steps"],
                               harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out, **SCHEDULE))
            assert proc.returncode == 0, proc.stderr
            traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
            assert len(traces) == 1, proc.stderr
            with open(traces[0]) as f:
                cls.trace = json.load(f)

    def test_device_properties_are_the_drivers(self):
        devices = self.trace["deviceProperties"]
        self.assertEqual(len(devices), 1)
        d = devices[0]
        self.assertEqual(d["id"], 0)
        self.assertIn("(simulated)", d["name"])
        self.assertEqual((d["computeMajor"], d["computeMinor"]), (9, 0))
        self.assertEqual(d["numSms"], 132)
        self.assertEqual(d["warpSize"], 32)
        self.assertEqual(d["maxThreadsPerMultiprocessor"], 2048)
        self.assertGreater(d["totalGlobalMem"], 0)

    def test_kernels_carry_occupancy_arguments(self):
        sms = self.trace["deviceProperties"][0]["numSms"]
        kernels = [e for e in self.trace["traceEvents"] if e.get("cat") == "kernel"]
        self.assertGreater(len(kernels), 0)
        for k in kernels:
            a = k["args"]
            blocks = a["grid"][0] * a["grid"][1] * a["grid"][2]
            warps_per_block = -(-(a["block"][0] * a["block"][1] * a["block"][2]) // 32)
            self.assertAlmostEqual(a["blocks per SM"], blocks / sms, places=6)
            self.assertAlmostEqual(a["warps per SM"], blocks * warps_per_block / sms, places=6)
            self.assertGreater(a["est. achieved occupancy %"], 0)
            self.assertLessEqual(a["est. achieved occupancy %"], 100)


if __name__ == "__main__":
    harness.main()
