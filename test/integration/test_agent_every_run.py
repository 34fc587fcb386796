"""With no PROF_* variable but the output directory, a program that ends
before PROF_STEP=auto has found its loop, or has none, still writes one
window: the whole run from the first CUDA call (the provisional window that
auto records while it looks), in both injection modes.

Proves, for a loop too short to be found (iter_loop simple, 8 iterations)
and a loop-less program (iter_loop no-loop, 0.3 s): exactly one trace and
one summary, `prof validate` accepts the trace, the trace holds every kernel
the sim launched for the program (by correlation against the truth log), its
`libprof.step` and the summary header say "no loop found in X s; this window
is the whole run from the first CUDA call", it is not marked partial (it
ends at exit by design), the log says the same, and
output and exit status are the bare run's. A loop that is found still
writes only the schedule's window (the provisional one is dropped), with its
kernels all inside the found steps. A loop-less run that goes on past the
provisional window's event limit (16384 launches, copies and synchronizes,
so that the window can always be written at exit) writes it when the limit
is reached: one window, every kernel up to its end, and it says why. A
program that only queries the device (no launch, copy or synchronize) and
ends at once writes a window holding every runtime call it made after the
first (which initialized CUDA before recording began).
"""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

import harness

ITER_LOOP = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
WHY = re.compile(r"no loop found in \d+\.\d s; this window is the whole run from the first CUDA call to its end \(exit\)")


# Asks the device what it is, through its own handle of libcudart, and ends.
QUERIES = r"""
import ctypes
cudart = ctypes.CDLL("libcudart.so.13")
count = ctypes.c_int()
assert cudart.cudaGetDeviceCount(ctypes.byref(count)) == 0 and count.value > 0
for attribute in range(1, 6):
    value = ctypes.c_int()
    assert cudart.cudaDeviceGetAttribute(ctypes.byref(value), attribute, 0) == 0
    assert cudart.cudaSetDevice(0) == 0
"""


def run(test, args, mode, kind="kernel", **env):
    tmp = harness.scratch_dir(test, "everyrun-")
    out = os.path.join(tmp, "out")
    truth_path = os.path.join(tmp, "truth.jsonl")
    run_env = harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, **env)
    run_env[mode] = harness.LIBPROF_SO
    proc = harness.run(args, run_env, timeout=180)
    with open(truth_path) as f:
        # Only one type is compared (a long run's log holds hundreds of thousands of lines).
        truth = [json.loads(l) for l in f if l.startswith("{") and f'"type":"{kind}"' in l]
    return (proc, sorted(glob.glob(os.path.join(out, "*.pt.trace.json"))),
            sorted(glob.glob(os.path.join(out, "*.summary.txt"))), truth)


def truth_kernels(truth, pid):
    return {l["correlation"] for l in truth if l.get("pid") == pid and l["type"] == "kernel"}


class EveryRunWritesAWindow(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, ITER_LOOP, harness.PROF_TOOL)

    def valid_trace(self, path):
        """The trace at path, once `prof validate` passes it."""
        check = subprocess.run([harness.PROF_TOOL, "validate", path], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        with open(path) as f:
            return json.load(f)

    def check_short(self, args):
        bare = harness.run(args, harness.sim_env())
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                proc, traces, summaries, truth = run(self, args, mode)
                self.assertEqual(proc.returncode, bare.returncode, proc.stderr)
                self.assertEqual(proc.stdout, bare.stdout)
                self.assertEqual(len(traces), 1, proc.stderr)
                self.assertEqual(len(summaries), 1, proc.stderr)
                trace = self.valid_trace(traces[0])
                self.assertRegex(trace["libprof"]["step"], "^auto: " + WHY.pattern + "$")
                # The whole run ends at exit by design: no window the exit cut
                # short (not partial, no partial-window finding, no "(partial)").
                self.assertFalse(trace["libprof"]["window"]["partial"])
                with open(summaries[0]) as f:
                    summary = f.read()
                self.assertRegex(summary, "step = auto: " + WHY.pattern)
                self.assertNotIn("[partial-window]", summary)
                self.assertNotIn("PARTIAL", summary)
                self.assertRegex(proc.stderr, r"window steps 0-0 of pid \d+ written: ")
                self.assertRegex(proc.stderr, r"PROF_STEP=auto: " + WHY.pattern)
                self.assertNotIn("still looking", proc.stderr)
                pid = trace["libprof"]["pid"]
                want = truth_kernels(truth, pid)
                self.assertGreater(len(want), 0)
                got = {e["args"]["correlation"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
                self.assertEqual(got, want)

    def test_a_loop_too_short_to_be_found(self):
        self.check_short([ITER_LOOP, "--mode", "simple", "--iters", "8"])

    def test_a_program_without_a_loop(self):
        # A bounded number of calls (about 14 a chunk), well under what auto
        # records while it looks, however fast the machine makes them.
        self.check_short([ITER_LOOP, "--mode", "no-loop", "--seconds", "0", "--iters", "200"])

    def test_a_program_that_only_asks_the_device_what_it_is(self):
        # Device queries only (no launch, copy or synchronize, which auto
        # watches), through a dlopen handle, ending at once: the window
        # opens at the driver's initialization inside the first call and
        # holds every later call, from CUPTI's records.
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                proc, traces, summaries, truth = run(self, [sys.executable, "-c", QUERIES], mode, kind="api")
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(len(traces), 1, proc.stderr)
                self.assertEqual(len(summaries), 1, proc.stderr)
                self.assertRegex(proc.stderr, r"PROF_STEP=auto: " + WHY.pattern)
                with open(traces[0]) as f:
                    trace = json.load(f)
                got = [(e["name"], e["args"]["correlation"]) for e in trace["traceEvents"]
                       if e.get("cat") == "cuda_runtime"]
                made = [(l["name"], l["correlation"]) for l in sorted(truth, key=lambda l: l["start_ns"])
                        if l["domain"] == "runtime" and l["thread"] == l["pid"]]  # not libprof's threads
                self.assertEqual(made[0][0], "cudaGetDeviceCount")
                self.assertEqual(len(made), 11)
                self.assertEqual(sorted(got, key=lambda c: c[1]), made[1:])

    def test_a_long_run_without_a_loop_writes_window_0_at_its_event_limit(self):
        limit = re.compile(r"no loop found in \d+\.\d s; this window is the whole run from the first CUDA call until auto "
                           r"had seen \d+ launches, copies and synchronizes \(the most recorded while it looks\)")
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                proc, traces, summaries, truth = run(
                    self, [ITER_LOOP, "--mode", "no-loop", "--seconds", "0", "--iters", "1200"], mode)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(len(traces), 1, proc.stderr)
                self.assertRegex(proc.stderr, "PROF_STEP=auto: window 0 is the run from the first CUDA call until auto "
                                              "had seen \\d+ launches")
                self.assertNotIn("not written", proc.stderr)
                trace = self.valid_trace(traces[0])
                self.assertRegex(trace["libprof"]["step"], "^auto: " + limit.pattern + "$")
                self.assertFalse(trace["libprof"]["window"]["partial"])
                # Every kernel the program launched up to the window's last one
                # (a single thread: correlation ids grow with time).
                got = {e["args"]["correlation"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
                self.assertGreater(len(got), 1000)
                want = {c for c in truth_kernels(truth, trace["libprof"]["pid"]) if c <= max(got)}
                self.assertEqual(got, want)
                # The run went on past the window.
                self.assertGreater(len(truth_kernels(truth, trace["libprof"]["pid"])), len(got))

    def test_threads_that_end_with_the_process_leave_their_window_whole(self):
        # Eight threads launching into their own streams: window 0 ends at
        # auto's event limit with thousands of kernels queued, and the
        # process ends right after, while the writer still collects it. The
        # records the exit path's forced flush delivers are the window's:
        # none may be counted missing. No truth log: writing it slows the
        # program enough that the window is collected before the exit.
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                out = os.path.join(harness.scratch_dir(self, "everyrun-"), "out")
                env = harness.sim_env(PROF_OUTPUT_DIR=out)
                env[mode] = harness.LIBPROF_SO
                proc = harness.run([os.path.join(harness.WORKLOAD_DIR, "multithread"), "--threads", "8",
                                    "--launches", "3000"], env, timeout=180)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
                self.assertEqual(len(traces), 1, proc.stderr)
                with open(traces[0]) as f:
                    trace = json.load(f)
                losses = trace["libprof"]["losses"]
                self.assertEqual({k: v for k, v in losses.items() if v and k != "unrecorded_start_ns"}, {})
                self.assertGreater(sum(e.get("cat") == "kernel" for e in trace["traceEvents"]), 1000)

    def test_a_found_loop_writes_only_the_schedules_window(self):
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                proc, traces, summaries, truth = run(self, [ITER_LOOP, "--mode", "simple", "--iters", "200"], mode)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("PROF_STEP=auto: step = ", proc.stderr)
                self.assertNotIn("whole run", proc.stderr)
                self.assertEqual(len(traces), 1, proc.stderr)
                with open(traces[0]) as f:
                    trace = json.load(f)
                self.assertTrue(trace["libprof"]["step"].startswith("auto: "))
                self.assertNotIn("whole run", trace["libprof"]["step"])
                self.assertEqual(trace["libprof"]["window"]["first_step"], 32)


if __name__ == "__main__":
    harness.main()
