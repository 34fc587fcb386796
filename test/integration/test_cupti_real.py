"""CUPTI collection against NVIDIA's real libcupti.so.13 and libcudart.so.13
from the toolkit, on a machine without a driver: CUPTI refuses to start
(CUPTI_ERROR_UNKNOWN), and the collector must degrade to interception-only
with one warning naming the cause, never crash, never retry."""
import json
import os
import unittest

from harness import CUDA_HOME, clean_env, main, need, run

PROBE = os.environ.get("CUPTI_PROBE", "")
TOOLKIT = CUDA_HOME or "/usr/local/cuda"
REAL_CUPTI = os.path.join(TOOLKIT, "lib64", "libcupti.so.13")
REAL_CUDART = os.path.join(TOOLKIT, "lib64", "libcudart.so.13")


def has_driver():
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0"))


def probe(**env):
    need(PROBE)
    if not (os.path.exists(REAL_CUPTI) and os.path.exists(REAL_CUDART)):
        raise unittest.SkipTest("no toolkit libcupti/libcudart")
    if has_driver():
        raise unittest.SkipTest("a driver is present: this test is for driverless machines")
    # --no-kernels: NVIDIA's runtime would parse the probe's dummy fat binary.
    proc = run([PROBE, "--no-kernels", "1", "--windows", "2"],
               clean_env(LD_LIBRARY_PATH=os.path.dirname(REAL_CUDART), **env), timeout=120)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    warnings = [l for l in proc.stderr.splitlines() if "[libprof] warning" in l]
    return proc, lines, warnings


class RealLibcupti(unittest.TestCase):
    def check_interception_only(self, proc, lines, warnings, cause):
        self.assertEqual(proc.returncode, 0, proc.stderr)
        windows = [l for l in lines if l["probe"] == "window"]
        self.assertEqual(len(windows), 2)
        for w in windows:
            self.assertTrue(w["mode"].startswith("interception-only ("), w["mode"])
            self.assertIn(cause, w["mode"])
            self.assertEqual(w["has_gpu_timings"], 0)
            self.assertEqual(w["records"], 0)
        self.assertEqual(len([l for l in lines if l["probe"] == "done"]), 1, "the probe ran to its end")
        self.assertEqual(len(warnings), 1, proc.stderr)
        self.assertIn(cause, warnings[0])

    def test_prof_cupti_lib_pointing_at_the_real_library(self):
        proc, lines, warnings = probe(PROF_CUPTI_LIB=REAL_CUPTI)
        self.check_interception_only(proc, lines, warnings, "no CUDA driver")
        self.assertIn("CUPTI_ERROR_UNKNOWN (999)", warnings[0])

    def test_found_beside_the_loaded_libcudart(self):
        proc, lines, warnings = probe()
        self.check_interception_only(proc, lines, warnings, "no CUDA driver")

    def test_a_bad_prof_cupti_lib_names_the_path(self):
        proc, lines, warnings = probe(PROF_CUPTI_LIB="/nonexistent/libcupti.so.13")
        self.check_interception_only(proc, lines, warnings, "/nonexistent/libcupti.so.13")


if __name__ == "__main__":
    main()
