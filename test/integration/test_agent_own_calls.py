"""Every call appears once, with its correlation (issue 9, item 4, first
part): under LD_PRELOAD libprof's __cudaRegisterFunction wrapper records the
call and CUPTI writes a RUNTIME record of it too; the wrapper's event used to
carry correlation 0, so nothing matched the two and each registration
appeared twice (the API summary doubled its count).

train_loop runs with a window open from its start (wait 0, warmup 0), so
its module registration is inside the window. Checked against the sim's
truth log: the window's __cudaRegisterFunction count equals the calls the
program made, and no runtime call in the trace has correlation 0 or the
same correlation twice. Under CUDA_INJECTION64_PATH the same holds for what
the window holds (registration there runs before libprof is loaded).
Not covered yet: libprof's own cudaGetDevice after allocations.
"""
import collections
import glob
import json
import os
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
ARGS = [TRAIN_LOOP, "--steps", "3", "--manual-steps"]
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=2, PROF_REPEAT=1,
                PROF_FLUSH_TIMEOUT_MS=2000)


class EveryCallOnce(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (os.path.exists(harness.LIBPROF_SO) and os.path.exists(TRAIN_LOOP)):
            raise unittest.SkipTest("libprof.so or train_loop not built")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {}
        for mode, (proc, out, truth_path) in harness.run_in_each_mode(ARGS, cls.tmp.name, **SCHEDULE).items():
            traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
            cls.runs[mode] = (proc, traces, truth.read(truth_path))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def calls(self, path):
        with open(path) as f:
            trace = json.load(f)
        return [(e["name"], e.get("args", {}).get("correlation", 0)) for e in trace["traceEvents"]
                if e.get("cat") == "cuda_runtime" and e.get("ph") == "X"]

    def test_registration_appears_once_per_call_under_ld_preload(self):
        proc, traces, lines = self.runs["LD_PRELOAD"]
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(traces), 1, proc.stderr)
        made = len(truth.api(lines, "__cudaRegisterFunction", "runtime"))
        self.assertGreater(made, 0, "the program registers its kernels")
        shown = [c for n, c in self.calls(traces[0]) if n == "__cudaRegisterFunction"]
        self.assertEqual(len(shown), made, shown)
        truth_ids = sorted(l["correlation"] for l in truth.api(lines, "__cudaRegisterFunction", "runtime"))
        self.assertEqual(sorted(shown), truth_ids)

    def test_no_call_twice_nor_without_correlation(self):
        for mode, (proc, traces, _) in self.runs.items():
            with self.subTest(mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(len(traces), 1, proc.stderr)
                calls = self.calls(traces[0])
                self.assertTrue(calls)
                self.assertEqual([c for c in calls if c[1] == 0], [], "a call without correlation")
                twice = [c for c, k in collections.Counter(c for _, c in calls).items() if k > 1]
                self.assertEqual(twice, [], "a correlation shown twice")


if __name__ == "__main__":
    unittest.main()
