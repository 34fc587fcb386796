"""PROF_STEP=auto (the default) on workloads with a known iteration
structure (test/workloads/iter_loop.cu, py_loop.py), with no PROF_* variable
but the output directory. Each workload writes a truth line at the start of
every iteration into the simulated stack's truth log, outside CUDA, so the
truth says which iteration each CUDA call belongs to (the calls between one
iteration line and the next).

Proves, for each loop: one window of exactly PROF_ACTIVE (default 5)
steps, each step holding exactly the launches, copies, memsets and
synchronizes of one true iteration (by correlation, consecutive
iterations; calls auto does not watch, such as allocations made before an
iteration's first launch or copy, may fall in the step before), the per-step table of the summary counting those of one
iteration, the choice stated in the log, the trace's `libprof.step` and the
summary header, and the decision taken on at most 50 iterations. The
loop-less program falls back to time steps after PROF_AUTO_TIMEOUT and says
why. Output and exit status are unchanged.
"""
import glob
import json
import os
import re
import sys
import unittest

import harness

ITER_LOOP = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
PY_LOOP = os.path.join(harness.WORKLOAD_DIR, "py_loop.py")

# The runtime calls auto watches, as the truth log names them.
LAUNCHES = {"cudaLaunchKernel", "__cudaLaunchKernel", "cudaLaunchKernel_ptsz", "__cudaLaunchKernel_ptsz"}
COPIES = {"cudaMemcpyAsync", "cudaMemcpy"}
MEMSETS = {"cudaMemsetAsync", "cudaMemset"}
SYNCS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}
WATCHED = LAUNCHES | COPIES | MEMSETS | SYNCS

LOOPS = {
    "simple": [ITER_LOOP, "--mode", "simple"],
    "two_streams": [ITER_LOOP, "--mode", "two-streams"],
    "accum4": [ITER_LOOP, "--mode", "accum4"],
    "eval10": [ITER_LOOP, "--mode", "eval10"],
    "extra10": [ITER_LOOP, "--mode", "extra10"],
    "varying": [ITER_LOOP, "--mode", "varying"],
    "long_first": [ITER_LOOP, "--mode", "long-first"],
    "python_ctypes": [sys.executable, PY_LOOP, "--iters", "90"],
}


def iterations_of_calls(truth, pid):
    """correlation -> iteration index, for the program's outermost runtime calls."""
    out, current = {}, None
    for line in truth:
        if line.get("pid") != pid:
            continue
        if line["type"] == "iteration":
            current = line["index"]
        elif (line["type"] == "api" and line["domain"] == "runtime" and current is not None
              and line["correlation"] == line["outer_correlation"]):
            out[line["correlation"]] = (current, line["name"])
    return out


def run_loop(test, args, mode="LD_PRELOAD", truth=True, **env):
    """Runs a loop with libprof injected by mode (LD_PRELOAD or CUDA_INJECTION64_PATH)
    in a scratch directory test removes; with truth, the simulated stack logs
    every call (about 350 bytes a call) for the test to read."""
    tmp = harness.scratch_dir(test, "autostep-")
    out = os.path.join(tmp, "out")
    truth_path = os.path.join(tmp, "truth.jsonl")
    if truth:
        env["SIM_TRUTH_FILE"] = truth_path
    run_env = harness.sim_env(NVTX_INJECTION64_PATH=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out, **env)
    run_env[mode] = harness.LIBPROF_SO
    proc = harness.run(args, run_env, timeout=180)
    traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
    summaries = sorted(glob.glob(os.path.join(out, "*.summary.txt")))
    truth = []
    if os.path.exists(truth_path):
        with open(truth_path) as f:
            truth = [json.loads(l) for l in f if l.startswith("{")]
    return proc, traces, summaries, truth


def summary_step_rows(text):
    """The per-step table: {step: (launches, syncs, copies)}."""
    rows, inside = {}, False
    for line in text.splitlines():
        if line.startswith("== Steps =="):
            inside = True
            continue
        if inside:
            if line.startswith("=="):
                break
            m = re.match(r"\s+(\d+)\s+[\d.]+\s+[\d.]+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", line)
            if m:
                rows[int(m.group(1))] = (int(m.group(3)), int(m.group(4)), int(m.group(5)))
    return rows


class AutoStepFindsIterations(unittest.TestCase):
    def setUp(self):
        if not (os.path.exists(harness.LIBPROF_SO) and os.path.exists(ITER_LOOP)):
            self.skipTest("libprof.so or iter_loop not built")

    def check_loop(self, name):
        args = LOOPS[name]
        bare = harness.run(args, harness.sim_env())
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                self.check_loop_in(args, bare, mode)

    def check_loop_in(self, args, bare, mode):
        proc, traces, summaries, truth = run_loop(self, args, mode)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, bare.stdout)
        chosen = [l for l in proc.stderr.splitlines() if "PROF_STEP=auto: step = " in l]
        self.assertEqual(len(chosen), 1, proc.stderr)
        found_after = int(re.search(r"found after (\d+) iterations", chosen[0]).group(1))
        self.assertLessEqual(found_after, 50, chosen[0])
        self.assertEqual(len(traces), 1, proc.stderr)
        with open(traces[0]) as f:
            trace = json.load(f)
        meta = trace["libprof"]
        self.assertTrue(meta["step"].startswith("auto: "), meta.get("step"))
        # A loop found late (the agent thread behind on a loaded machine) adds
        # how its steps are numbered, in a line of its own.
        self.assertIn(meta["step"][len("auto: "):].split("; found after the schedule's first window")[0], chosen[0])
        with open(summaries[0]) as f:
            summary = f.read()
        self.assertIn("step = auto: ", summary.splitlines()[1])

        pid = meta["pid"]
        of_call = iterations_of_calls(truth, pid)
        self.assertGreater(len(of_call), 0, "the workload wrote no iteration lines")
        events = trace["traceEvents"]
        steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                        and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        self.assertEqual(len(steps), 5, [s["name"] for s in steps])
        calls = [e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
        rows = summary_step_rows(summary)
        seen_iterations = []
        for step in steps:
            lo, hi = step["ts"], step["ts"] + step["dur"]
            inside = [c for c in calls if lo - 0.0005 <= c["ts"] < hi - 0.0005]
            # Calls auto does not watch (allocations, stream creation) made
            # before an iteration's first watched call fall in the step before.
            its = {of_call[c["args"]["correlation"]][0] for c in inside
                   if c["args"]["correlation"] in of_call and of_call[c["args"]["correlation"]][1] in WATCHED}
            self.assertEqual(len(its), 1, f"{step['name']} holds calls of iterations {sorted(its)}")
            it = its.pop()
            seen_iterations.append(it)
            want = {c for c, (i, n) in of_call.items() if i == it and n in WATCHED}
            got = {c["args"]["correlation"] for c in inside if c["args"]["correlation"] in want}
            self.assertEqual(got, want, f"{step['name']} (iteration {it}) is missing calls of its iteration")
            names = [n for c, (i, n) in of_call.items() if i == it]
            number = int(step["name"].split("#")[1])
            self.assertEqual(rows.get(number), (sum(n in LAUNCHES for n in names), sum(n in SYNCS for n in names),
                                                sum(n in COPIES for n in names)), f"per-step row {number}")
        self.assertEqual(seen_iterations, list(range(seen_iterations[0], seen_iterations[0] + 5)))

    def test_simple_loop(self):
        self.check_loop("simple")

    def test_two_streams(self):
        self.check_loop("two_streams")

    def test_gradient_accumulation_x4_is_one_optimizer_iteration(self):
        self.check_loop("accum4")

    def test_evaluation_every_10_iterations(self):
        self.check_loop("eval10")

    def test_data_dependent_extra_kernel_in_10_percent(self):
        self.check_loop("extra10")

    def test_per_iteration_varying_launch_counts(self):
        self.check_loop("varying")

    def test_long_and_different_first_iterations(self):
        self.check_loop("long_first")

    def test_python_driven_loop_through_ctypes(self):
        if not os.path.exists(PY_LOOP):
            self.skipTest("py_loop.py not built")
        self.check_loop("python_ctypes")


class AutoStepFallsBack(unittest.TestCase):
    # no-loop mode draws 32 kernels, copies and syncs from splitmix64, which
    # does not repeat: no PROF_AUTO_TIMEOUT is long enough to find a loop.
    def test_a_program_without_a_loop_falls_back_to_time_steps_and_says_why(self):
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                self.check_fallback(mode)

    def check_fallback(self, mode):
        if not (os.path.exists(harness.LIBPROF_SO) and os.path.exists(ITER_LOOP)):
            self.skipTest("libprof.so or iter_loop not built")
        # 4 s: window 0 is written while the time steps run. 200 us between
        # chunks keeps the time steps' window to thousands of calls, not the
        # 135,000 back-to-back chunks give (a 50 MB trace, which a machine
        # loaded by CTest's other tests did not write within the exit budget).
        args = [ITER_LOOP, "--mode", "no-loop", "--seconds", "4", "--iters", "1", "--chunk-gap-us", "200"]
        proc, traces, summaries, truth = run_loop(self, args, mode=mode, truth=False, PROF_AUTO_TIMEOUT="1s", PROF_WAIT=2,
                                                  PROF_WARMUP=1, PROF_ACTIVE=2)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("PROF_STEP=auto: step = ", proc.stderr)
        fallback = [l for l in proc.stderr.splitlines() if "PROF_STEP=auto: no loop found" in l]
        self.assertEqual(len(fallback), 1, proc.stderr)
        self.assertIn("PROF_AUTO_TIMEOUT=1s", fallback[0])
        self.assertIn("no repeating sequence", fallback[0])
        self.assertIn("using time:100ms steps", fallback[0])
        # The run until the fallback or until the provisional window's event
        # limit, whichever came first (step 0, written then), then the time
        # steps' window.
        self.assertEqual(len(traces), 2, proc.stderr)
        loaded = []
        for path in traces:
            with open(path) as f:
                loaded.append(json.load(f))
        loaded.sort(key=lambda t: t["libprof"]["window"]["start_ns"])
        provisional, trace = loaded
        until = r"until (auto gave up|auto had seen \d+ launches, copies and synchronizes \(the most recorded while it looks\))"
        self.assertRegex(provisional["libprof"]["step"],
                         r"^auto: no loop found in \d+\.\d s; this window is the whole run from the first CUDA call " + until + "$")
        self.assertTrue(any(e.get("cat") == "kernel" for e in provisional["traceEvents"]), "no kernel in window 0")
        self.assertRegex(proc.stderr, r"PROF_STEP=auto: window 0 is the (whole )?run from the first CUDA call until auto (gave up|had seen \d+)")
        self.assertLessEqual(provisional["libprof"]["window"]["end_ns"], trace["libprof"]["window"]["start_ns"])
        self.assertTrue(trace["libprof"]["step"].startswith("time:100ms (auto found no loop: no repeating sequence"))
        steps = [e for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
        self.assertEqual(len(steps), 2)
        window = trace["libprof"]["window"]
        self.assertEqual(window["end_ns"] - window["start_ns"], 200_000_000)  # two 100 ms slices


if __name__ == "__main__":
    harness.main()
