"""A CUDA 12 Python job as pip installs it: a framework library in
site-packages that finds libcudart.so.12 in the nvidia-cuda-runtime-cu12
wheel (RUNPATH $ORIGIN/../../nvidia/cuda_runtime/lib, as torch/lib does),
libcupti.so.12 in the nvidia-cuda-cupti-cu12 wheel, both the sim's CUDA 12
personality, loaded by Python's ctypes with RTLD_LOCAL. Nothing on
LD_LIBRARY_PATH, and CUDA_HOME names the CUDA 13 toolkit, whose
libcupti.so.13 must not be chosen. Under LD_PRELOAD=libprof.so the job gets
GPU activity (not interception-only), the log's info line names the wheel's
libcupti.so.12, the wrappers see the launches (cudaLaunchKernel through the
RTLD_LOCAL runtime), and the trace validates."""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import LIBPROF_SO, PROF_TOOL, run

SIM12 = os.environ.get("SIM12_LIB_DIR", "")
WORKLOAD_LIB = os.path.join(os.environ.get("WORKLOAD_DIR", ""), "cuda12", "libctypes_workload_wheel.so")
STEPS = 8
# PROF_STEP=sync: each cudaStreamSynchronize of run_steps ends a step.
SCHEDULE = dict(PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=1)

DRIVER_SCRIPT = r'''
import ctypes, os, sys
site = sys.argv[1]
lib = ctypes.CDLL(os.path.join(site, "framework", "lib", "libctypes_workload.so"), mode=os.RTLD_LOCAL)
lib.run_steps.restype = ctypes.c_longlong
lib.run_steps.argtypes = [ctypes.c_int]
print("run_steps =", lib.run_steps(int(sys.argv[2])))
'''


def make_site_packages(root):
    """site-packages/{framework/lib, nvidia/cuda_runtime/lib, nvidia/cuda_cupti/lib}."""
    site = os.path.join(os.path.realpath(root), "lib", "python3", "site-packages")
    layout = {
        ("framework", "lib", "libctypes_workload.so"): WORKLOAD_LIB,
        ("nvidia", "cuda_runtime", "lib", "libcudart.so.12"): os.path.join(SIM12, "libcudart.so.12"),
        ("nvidia", "cuda_cupti", "lib", "libcupti.so.12"): os.path.join(SIM12, "libcupti.so.12"),
    }
    for parts, source in layout.items():
        dest = os.path.join(site, *parts)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(source, dest)
    return site


class PipWheelJob(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(LIBPROF_SO, WORKLOAD_LIB, os.path.join(SIM12, "libcupti.so.12"))
        cls.tmp = tempfile.TemporaryDirectory()
        cls.site = make_site_packages(cls.tmp.name)
        script = os.path.join(cls.tmp.name, "job.py")
        with open(script, "w") as f:
            f.write(DRIVER_SCRIPT)
        cls.out = os.path.join(cls.tmp.name, "out")
        env = harness.clean_env(LD_PRELOAD=LIBPROF_SO, PROF_OUTPUT_DIR=cls.out, PROF_LOG_LEVEL="debug",
                                CUDA_HOME=harness.CUDA_HOME, **SCHEDULE)
        env.pop("LD_LIBRARY_PATH", None)
        env.pop("CUDA_PATH", None)
        cls.bare = run(["python3", script, cls.site, str(STEPS)],
                       env={k: v for k, v in env.items() if not k.startswith("PROF_") and k != "LD_PRELOAD"})
        cls.proc = run(["python3", script, cls.site, str(STEPS)], env=env)
        cls.traces = sorted(glob.glob(os.path.join(cls.out, "*.pt.trace.json")))

    # The fixture tail of test_agent_injection.py's: each test file runs its own job.
    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def trace(self):
        with open(self.traces[0]) as f:
            return json.load(f)

    def test_the_job_runs_on_the_wheel_and_its_output_is_unchanged(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stderr)
        self.assertIn("run_steps = ", self.bare.stdout)
        self.assertNotIn("run_steps = -", self.bare.stdout, "the wheel's runtime did not work")
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(self.proc.stdout, self.bare.stdout)

    def test_the_debug_line_names_the_wheels_libcupti(self):
        wheel_cupti = os.path.join(self.site, "nvidia", "cuda_cupti", "lib", "libcupti.so.12")
        infos = [l for l in self.proc.stderr.splitlines() if "debug: CUPTI: " in l]
        self.assertEqual(len(infos), 1, self.proc.stderr)
        self.assertIn(wheel_cupti + " (pip wheel layout beside libcudart.so.12)", infos[0])
        self.assertIn("API version 22 (CUDA 12.4)", infos[0])
        # Each candidate tried, at debug: the runtime's own folder first.
        runtime_dir = os.path.join(self.site, "nvidia", "cuda_runtime", "lib")
        self.assertIn(f"debug: CUPTI search: {runtime_dir}/libcupti.so.12 (beside libcudart.so.12): ",
                      self.proc.stderr)
        self.assertNotIn("libcupti.so.13", self.proc.stderr)
        self.assertNotIn("interception-only", self.proc.stderr)

    def test_gpu_activity_from_the_wheel_not_interception_only(self):
        self.assertEqual(len(self.traces), 1, self.proc.stderr)
        t = self.trace()
        self.assertEqual(t["libprof"]["cupti_mode"], "activity")
        kernels = [e for e in t["traceEvents"] if e.get("cat") == "kernel"]
        copies = [e for e in t["traceEvents"] if e.get("cat") == "gpu_memcpy"]
        # run_steps: per step one kernel and two copies; 3 active steps.
        self.assertEqual(len(kernels), SCHEDULE["PROF_ACTIVE"])
        self.assertEqual(len(copies), 2 * SCHEDULE["PROF_ACTIVE"])
        check = subprocess.run([PROF_TOOL, "validate", self.traces[0]], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_the_wrappers_see_launches_through_the_rtld_local_runtime(self):
        t = self.trace()
        launches = [e for e in t["traceEvents"]
                    if e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]
        self.assertEqual(len(launches), SCHEDULE["PROF_ACTIVE"])
        for e in launches:
            self.assertNotEqual(e["args"].get("source"), "cupti", "seen only by CUPTI, not intercepted")

    def test_the_summary_says_cupti_activity(self):
        with open(glob.glob(os.path.join(self.out, "*.summary.txt"))[0]) as f:
            summary = f.read()
        self.assertIn("CUDA runtime 12040", summary)
        self.assertIn("CUPTI: activity", summary)


DRIVER_ONLY_SCRIPT = r'''
import ctypes, glob, os, sys, time
cuda = ctypes.CDLL("libcuda.so.1")  # the driver, from the system's library path
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuInit(0) == 0
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
open(sys.argv[2], "w").close()  # PROF_TRIGGER_FILE: the schedule starts now
# Work until the window is written (time steps run from the agent's start,
# however long this interpreter took to get here), at most 20 s.
end = time.monotonic() + 20
n = 0
while time.monotonic() < end and not glob.glob(os.path.join(sys.argv[1], "*.pt.trace.json")):
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0
    assert cuda.cuMemsetD8_v2(ptr, ctypes.c_ubyte(0), ctypes.c_size_t(1 << 20)) == 0
    assert cuda.cuCtxSynchronize() == 0
    assert cuda.cuMemFree_v2(ptr) == 0
    n += 1
print("iterations", n > 0)
'''


class DriverOnlyJob(unittest.TestCase):
    """A program that uses the driver API only (no libcudart): the CUPTI of the
    driver's major (cuDriverGetVersion 12040 -> libcupti.so.12) is chosen,
    not the CUDA 13 toolkit's that CUDA_HOME points at."""

    def test_the_cupti_of_the_drivers_major_is_chosen(self):
        harness.need(LIBPROF_SO, os.path.join(SIM12, "libcupti.so.12"))
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "driver_only.py")
            with open(script, "w") as f:
                f.write(DRIVER_ONLY_SCRIPT)
            out = os.path.join(tmp, "out")
            env = harness.clean_env(LD_PRELOAD=LIBPROF_SO, LD_LIBRARY_PATH=SIM12, CUDA_HOME=harness.CUDA_HOME,
                                    PROF_OUTPUT_DIR=out, PROF_LOG_LEVEL="debug", PROF_STEP="time:20ms",
                                    PROF_TRIGGER_FILE=os.path.join(tmp, "go"),
                                    PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=1)
            proc = run(["python3", script, out, os.path.join(tmp, "go")], env=env)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            infos = [l for l in proc.stderr.splitlines() if "debug: CUPTI: " in l]
            self.assertEqual(len(infos), 1, proc.stderr)
            self.assertIn(os.path.join(SIM12, "libcupti.so.12") + " (loader search", infos[0])
            self.assertNotIn("libcupti.so.13", proc.stderr)
            traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
            self.assertEqual(len(traces), 1, proc.stderr)
            with open(traces[0]) as f:
                t = json.load(f)
            self.assertEqual(t["libprof"]["cupti_mode"], "activity")
            self.assertGreater(len([e for e in t["traceEvents"] if e.get("cat") == "gpu_memset"]), 0)


if __name__ == "__main__":
    harness.main()
