"""While recording under LD_PRELOAD, a call an interposed wrapper recorded is
shown by the wrapper's host event; CUPTI's RUNTIME record of it (same
correlation id) was written on the application thread, decoded, held and
never shown. libprof tells CUPTI to leave such calls' records out
(cuptiActivityEnableRuntimeApi(cbid, 0)) once a wrapper has recorded a call
of that id and none has gone past the wrappers. What must hold:

- under LD_PRELOAD, with every call through the wrappers, the simulated
  CUPTI writes RUNTIME records of those ids only before libprof saw a
  wrapper record them (the first warmup step), and the windows still show
  every call;
- under CUDA_INJECTION64_PATH no wrapper is on the call path: every call
  keeps its record (and its place in the trace);
- calls of a left-out id that go past the wrappers (a dlopen'ed libcudart
  handle, as a static cudart's calls do) are shown all the same, each once:
  the first ones from records libprof builds from the callbacks, later
  ones from CUPTI's again.

The driver is Python with ctypes against the simulated libcudart: calls
through ctypes.CDLL(None) bind to the global scope (libprof's preloaded
wrappers first), calls through a handle of libcudart.so.13 go to the runtime
itself. PROF_STEP=sync counts the wrapped cudaDeviceSynchronize calls.
"""
import glob
import json
import os
import re
import sys
import unittest

import harness

DRIVER = r"""
import ctypes, os, sys
steps, bypass_from = int(sys.argv[1]), int(sys.argv[2])
cudart = ctypes.CDLL("libcudart.so.13", mode=os.RTLD_GLOBAL)
wrapped = ctypes.CDLL(None)  # the global scope: the preloaded wrappers come first
assert cudart.cudaFree(None) == 0
for step in range(steps):
    lib = cudart if 0 <= bypass_from <= step else wrapped
    for _ in range(3):
        ptr = ctypes.c_void_p()
        assert lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(4096)) == 0
        assert lib.cudaFree(ptr) == 0
    assert wrapped.cudaDeviceSynchronize() == 0  # the step marker
print("done", steps)
"""

# Cycles of 6 steps: warmup 3, recorded 4-5; warmup 9, recorded 10-11.
SCHEDULE = dict(PROF_STEP="sync", PROF_WAIT=3, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=2, PROF_FLUSH_TIMEOUT_MS=3000)
STEPS = 14
CALLS_PER_STEP = 3  # cudaMalloc + cudaFree pairs


def runtime_cbids():
    """name -> callback id, from the toolkit's cupti_runtime_cbid.h."""
    for folder in ("include", os.path.join("extras", "CUPTI", "include")):
        path = os.path.join(harness.CUDA_HOME, folder, "cupti_runtime_cbid.h")
        if os.path.exists(path):
            with open(path) as f:
                return {m.group(1): int(m.group(2))
                        for m in re.finditer(r"CUPTI_RUNTIME_TRACE_CBID_(\w+?)_v\d+\s*=\s*(\d+)", f.read())}
    raise unittest.SkipTest("cupti_runtime_cbid.h not found under " + harness.CUDA_HOME)


class RuntimeRecords(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO)
        cls.cbid = runtime_cbids()

    def run_driver(self, name, bypass_from=-1, mode="LD_PRELOAD"):
        work = harness.scratch_dir(self, "rtrec_" + name)
        out = os.path.join(work, "out")
        truth_path = os.path.join(work, "truth.jsonl")
        env = harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, **SCHEDULE)
        env[mode] = harness.LIBPROF_SO
        proc = harness.run([sys.executable, "-c", DRIVER, str(STEPS), str(bypass_from)], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"done {STEPS}", proc.stdout)
        with open(truth_path) as f:
            truth = [json.loads(line) for line in f if line.strip()]
        state = [t for t in truth if t.get("op") == "cupti_state"]
        self.assertEqual(len(state), 1, "one cupti_state line at exit")
        records = {cbid: n for cbid, n in state[0]["runtime_records_by_cbid"]}
        selections = [t for t in truth if t.get("call") == "cuptiActivityEnableRuntimeApi"]
        windows = {}
        for path in sorted(glob.glob(os.path.join(out, "*.pt.trace.json"))):
            with open(path) as f:
                doc = json.load(f)
            meta = doc["libprof"]["window"]
            calls = {}
            for e in doc["traceEvents"]:
                if e.get("ph") == "X" and e.get("cat") == "cuda_runtime":
                    calls[e["name"]] = calls.get(e["name"], 0) + 1
            windows[(meta["first_step"], meta["last_step"])] = (calls, meta)
        return proc, records, selections, windows

    def assertEveryCallShown(self, windows, proc):
        self.assertEqual(sorted(windows), [(4, 5), (10, 11)], proc.stderr)
        for steps, (calls, meta) in windows.items():
            # Two recorded steps, each CALLS_PER_STEP allocations and frees and
            # the synchronize that ends it; no call twice, none missing.
            self.assertEqual(calls.get("cudaMalloc"), 2 * CALLS_PER_STEP, (steps, calls))
            self.assertEqual(calls.get("cudaFree"), 2 * CALLS_PER_STEP, (steps, calls))
            self.assertEqual(calls.get("cudaDeviceSynchronize"), 2, (steps, calls))
            losses = meta.get("losses", {})
            self.assertEqual(losses.get("device_records_missing", 0), 0, (steps, losses))
            self.assertEqual(losses.get("device_records_dropped", 0), 0, (steps, losses))

    def test_wrapped_calls_leave_no_runtime_records_once_a_wrapper_recorded_them(self):
        proc, records, selections, windows = self.run_driver("preload")
        self.assertEveryCallShown(windows, proc)
        left_out = {t["cbid"] for t in selections if t["enable"] == 0 and t["result"] == 0}
        for name in ("cudaMalloc", "cudaFree", "cudaDeviceSynchronize"):
            self.assertIn(self.cbid[name], left_out, name)
            # Only the first warmup step's (step 3): 24 calls of each were
            # made while the RUNTIME kind was on (steps 3-5, 9-11).
            limit = CALLS_PER_STEP if name != "cudaDeviceSynchronize" else 1
            self.assertLessEqual(records.get(self.cbid[name], 0), limit, (name, records))

    def test_injection_mode_keeps_every_runtime_record(self):
        proc, records, selections, windows = self.run_driver("inject", mode="CUDA_INJECTION64_PATH")
        self.assertEveryCallShown(windows, proc)
        self.assertEqual(selections, [])
        for name in ("cudaMalloc", "cudaFree"):
            self.assertGreaterEqual(records.get(self.cbid[name], 0), 6 * CALLS_PER_STEP, (name, records))
        self.assertGreaterEqual(records.get(self.cbid["cudaDeviceSynchronize"], 0), 6, records)

    def test_calls_past_the_wrappers_of_a_left_out_id_are_still_shown(self):
        # Steps 0-4 through the wrappers (cudaMalloc/cudaFree left out from
        # the first recorded step, 4, on), from step 5 through the handle:
        # the first window's second step reaches no wrapper while the ids are
        # left out (records built from the callbacks), the second window's
        # steps none after they were recorded again (CUPTI's records).
        proc, records, selections, windows = self.run_driver("bypass", bypass_from=5)
        self.assertEveryCallShown(windows, proc)
        for name in ("cudaMalloc", "cudaFree"):
            cbid = self.cbid[name]
            switches = [t["enable"] for t in selections if t["cbid"] == cbid and t["result"] == 0]
            # Left out once, never again: recorded again either by an explicit
            # switch or, when the first window's recording stopped first, by
            # the RUNTIME kind's disable and enable (which of the two depends
            # on when the writer collects that window).
            self.assertEqual(switches[:1], [0], (name, selections))
            self.assertEqual(switches.count(0), 1, (name, selections))
            # CUPTI's own records: step 3 (before anything was left out) and
            # steps 9-11 (recorded again).
            self.assertGreaterEqual(records.get(cbid, 0), 4 * CALLS_PER_STEP, (name, records))


if __name__ == "__main__":
    harness.main()
