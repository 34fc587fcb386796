"""While no window warms up or records, a step source that counts calls
(PROF_STEP=sync here) costs the program no CUPTI under LD_PRELOAD once every
call it watches has reached an interposed wrapper: libprof detaches CUPTI
(cuptiFinalize) and counts steps from the wrappers alone. Calls no wrapper
sees must still count:

- a program whose runtime calls bypass the wrappers from the start (calls
  through a dlopen handle of libcudart, as a statically linked cudart's
  calls do): libprof never detaches and counts every synchronize;
- a program that goes quiet on wrapper-fed calls, then loads a library and,
  after libprof's next look (about a second), synchronizes through calls no
  wrapper sees: libprof attaches again and the window falls on the steps
  those calls make (the library is one of the test workloads; what matters
  is that the process loaded something new);
- under CUDA_INJECTION64_PATH no wrapper is on the call path: never detached.

The driver is Python with ctypes against the simulated libcudart: calls
through ctypes.CDLL(None) bind to the global scope (libprof's preloaded
wrappers first), calls through a handle of libcudart.so.13 go to the runtime
itself. The schedule's step numbers are computed from the calls made, so a
synchronize that is not counted moves or removes the window.
"""
import glob
import json
import os
import sys
import tempfile
import unittest

import harness

DRIVER = r"""
import ctypes, os, sys, time
phase_a, phase_b, library = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cudart = ctypes.CDLL("libcudart.so.13", mode=os.RTLD_GLOBAL)
wrapped = ctypes.CDLL(None)  # the global scope: the preloaded wrappers come first
assert cudart.cudaFree(None) == 0
time.sleep(2.5)  # CUDA is loaded: the agent thread's next wake (about 1 s) starts watching calls
for _ in range(phase_a):
    assert wrapped.cudaDeviceSynchronize() == 0
if library:
    ctypes.CDLL(library)  # a library loaded since: libprof looks again at its next wake
    time.sleep(2.5)
for _ in range(phase_b):
    assert cudart.cudaDeviceSynchronize() == 0  # through the handle: no wrapper
print("done", phase_a + phase_b)
"""

# Steps 12-13 recorded (PROF_WAIT=11, warmup step 11).
SCHEDULE = dict(PROF_STEP="sync", PROF_WAIT=11, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=1,
                PROF_LOG_LEVEL="debug", PROF_FLUSH_TIMEOUT_MS=3000)
DETACHED = "CUPTI detached while waiting"


class QuietWaiting(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.library = os.path.join(harness.WORKLOAD_DIR, "libctypes_workload.so")
        harness.need(harness.LIBPROF_SO, cls.library)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_driver(self, name, phase_a, phase_b, reload, mode="LD_PRELOAD"):
        out = os.path.join(self.tmp.name, name)
        env = harness.sim_env(PROF_OUTPUT_DIR=out, **SCHEDULE)
        env[mode] = harness.LIBPROF_SO
        proc = harness.run([sys.executable, "-c", DRIVER, str(phase_a), str(phase_b), self.library if reload else ""], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"done {phase_a + phase_b}", proc.stdout)
        windows = []
        for path in sorted(glob.glob(os.path.join(out, "*.pt.trace.json"))):
            with open(path) as f:
                meta = json.load(f)["libprof"]["window"]
            windows.append((meta["first_step"], meta["last_step"]))
        return proc, windows

    def test_wrapper_fed_calls_detach_cupti_and_still_count_every_step(self):
        proc, windows = self.run_driver("fed", 20, 0, reload=False)
        self.assertIn(DETACHED, proc.stderr)
        self.assertEqual(windows, [(12, 13)], proc.stderr)

    def test_calls_no_wrapper_sees_keep_cupti_and_count(self):
        proc, windows = self.run_driver("unfed", 0, 20, reload=False)
        self.assertNotIn(DETACHED, proc.stderr)
        self.assertEqual(windows, [(12, 13)], proc.stderr)

    def test_a_library_loaded_while_detached_brings_cupti_back_for_its_calls(self):
        # 6 wrapper-fed synchronizes (steps 1-6; detached after the third),
        # then 14 through the handle: steps 7-20, the window on 12-13 only if
        # libprof attached again before them.
        proc, windows = self.run_driver("reload", 6, 14, reload=True)
        self.assertIn(DETACHED, proc.stderr)
        self.assertIn("CUPTI attached again while waiting (libraries loaded)", proc.stderr)
        self.assertEqual(windows, [(12, 13)], proc.stderr)

    def test_injection_mode_never_detaches(self):
        proc, windows = self.run_driver("injection", 0, 20, reload=False, mode="CUDA_INJECTION64_PATH")
        self.assertNotIn(DETACHED, proc.stderr)
        self.assertEqual(windows, [(12, 13)], proc.stderr)


if __name__ == "__main__":
    harness.main()
