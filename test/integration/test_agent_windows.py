"""Windows on the simulated stack, against its truth log: for each step
source the process writes exactly the windows torch.profiler.schedule
implies, each holding exactly its steps, and every intercepted call made in a
window's steps appears in it once, with its result and arguments; none from
outside."""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from test_agent_support import (api_events, expected_windows, need, outermost_calls, run_agent, split_steps,
                                step_spans, truth, validate, workload)

SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz")


class WindowsPerStepSource(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def check_windows(self, run, sched, steps_by_truth, total_steps):
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        want = expected_windows(total_steps, *sched)
        self.assertEqual(run.windows(), want, "\n".join(run.log_lines()))
        for (first, last), (path, trace) in zip(want, run.traces):
            ok, out = validate(path)
            self.assertTrue(ok, out)
            spans = step_spans(trace)
            self.assertEqual([s["name"] for s in spans], [f"ProfilerStep#{s}" for s in range(first, last + 1)])
            self.assertFalse(trace["libprof"]["window"]["partial"])
            expected = [c for s in range(first, last + 1) for c in steps_by_truth.get(s, [])]
            got = api_events(trace)
            self.assertEqual([(e["name"], e["args"].get("result", 0)) for e in got],
                             [(c["name"], c["result"]) for c in expected],
                             f"window {first}-{last}: calls differ from the truth log")
            self.check_args(got, expected)
            self.assertEqual(trace["libprof"]["losses"]["host_events_dropped"], 0)

    def check_args(self, events, calls):
        """Copy/memset sizes against the sim's ops, matched by correlation
        when the window has CUPTI correlation ids."""
        ops = {o["correlation"]: o for o in truth.of_type(self.truth_lines, "memcpy", "memset")}
        for e, c in zip(events, calls):
            corr = e["args"].get("correlation", 0)
            if corr:
                self.assertEqual(corr, c["correlation"], f"{e['name']}: correlation")
            op = ops.get(c["correlation"])
            if op is not None and "bytes" in e["args"]:
                self.assertEqual(e["args"]["bytes"], op["bytes"], f"{e['name']}: bytes")

    def run_loop(self, step_env, steps=12, sched=(1, 2, 1, 2, 2), extra_args=(), **env):
        skip, wait, warmup, active, repeat = sched
        run = run_agent([workload("train_loop"), "--steps", str(steps), *extra_args], PROF_STEP=step_env,
                        PROF_SKIP_FIRST=skip, PROF_WAIT=wait, PROF_WARMUP=warmup, PROF_ACTIVE=active,
                        PROF_REPEAT=repeat, **env)
        self.truth_lines = run.truth
        return run

    def test_manual_steps_follow_prof_step(self):
        run = self.run_loop("manual", extra_args=["--manual-steps"])
        calls = outermost_calls(run.truth)
        # prof_step() right after each iteration's closing stream synchronize.
        steps = split_steps(calls, ends_step=lambda c: c["name"] == "cudaStreamSynchronize")
        self.check_windows(run, (1, 2, 1, 2, 2), steps, 13)

    def test_sync_steps_end_at_each_synchronize(self):
        run = self.run_loop("sync")
        steps = split_steps(outermost_calls(run.truth), ends_step=lambda c: c["name"] in SYNCS)
        self.check_windows(run, (1, 2, 1, 2, 2), steps, max(steps) + 1)

    def test_api_steps_start_at_each_call_of_the_function(self):
        run = self.run_loop("api:cudaMemsetAsync", sched=(0, 1, 1, 3, 2))
        steps = split_steps(outermost_calls(run.truth), starts_step=lambda c: c["name"].startswith("cudaMemsetAsync"))
        self.check_windows(run, (0, 1, 1, 3, 2), steps, max(steps) + 1)

    def test_kernel_steps_start_at_each_matching_launch(self):
        run = self.run_loop("kernel:gemm_tile", extra_args=["--kernels-per-step", "4"], sched=(2, 1, 0, 2, 3))
        # A launch (not the registration, which also names the kernel) marks a step.
        steps = split_steps(outermost_calls(run.truth),
                            starts_step=lambda c: "Launch" in c["name"] and "gemm_tile" in (c.get("symbol") or ""))
        self.check_windows(run, (2, 1, 0, 2, 3), steps, max(steps) + 1)

    def test_nvtx_steps_start_at_each_matching_range(self):
        run = self.run_loop("nvtx:^train_step$", sched=(0, 2, 1, 2, 2), NVTX_INJECTION64_PATH=harness.LIBPROF_SO)
        # The range is pushed just before each iteration's first CUDA call.
        steps = split_steps(outermost_calls(run.truth), starts_step=lambda c: c["name"].startswith("cudaMemsetAsync"))
        self.check_windows(run, (0, 2, 1, 2, 2), steps, max(steps) + 1)
        for _, t in run.traces:
            ranges = [r for r in t["traceEvents"] if r.get("ph") == "X" and r.get("name") == "train_step"
                      and r.get("cat") == "user_annotation"]  # the host range (GPU projections aside)
            self.assertEqual(len(ranges), 2, "the NVTX range of each recorded step is in the window")

    def test_time_steps_are_fixed_slices(self):
        # 40 ms steps; the loop sleeps 10 ms per iteration for ~1.2 s.
        run = self.run_loop("time:40ms", steps=120, sched=(0, 3, 1, 2, 2), extra_args=["--host-sleep-us", "10000"])
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.windows(), [(4, 5), (10, 11)], "\n".join(run.log_lines()))
        for _, trace in run.traces:
            self.assertEqual(len(step_spans(trace)), 2)
            # The window's own step table (agent clock, ns): exact slices, back to back.
            steps = trace["libprof"]["steps"]
            for step, start, end in steps:
                self.assertEqual(end - start, 40_000_000, f"step {step} is exactly one slice")
            self.assertEqual(steps[0][2], steps[1][1])
            self.assertGreater(len(api_events(trace)), 0)

    def test_default_repeat_zero_keeps_writing_windows(self):
        run = self.run_loop("manual", steps=12, sched=(0, 1, 0, 1, 0), extra_args=["--manual-steps"])
        self.assertEqual(run.windows(), [(s, s) for s in range(1, 13, 2)])


class TriggerFile(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_the_schedule_starts_only_when_the_trigger_file_appears(self):
        tmp = tempfile.mkdtemp(prefix="libprof-trigger-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        trigger = os.path.join(tmp, "go")
        env = harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1,
                              PROF_ACTIVE=2, PROF_TRIGGER_FILE=trigger,
                              PROF_OUTPUT_DIR=os.path.join(os.path.dirname(trigger), "traces"))
        # Line-buffered stdout (stdbuf keeps libprof in LD_PRELOAD) so the
        # trigger appears after step 3 has run however slowly the loaded
        # machine starts the process, not after a guessed sleep.
        proc = subprocess.Popen(["stdbuf", "-oL", workload("train_loop"), "--steps", "60", "--manual-steps",
                                 "--host-sleep-us", "20000"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line.startswith("train step 3 "):
                break
        open(trigger, "w").close()
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        traces = [json.load(open(p)) for p in glob.glob(os.path.join(os.path.dirname(trigger), "traces", "*.pt.trace.json"))]
        self.assertEqual(len(traces), 1, err)
        window = traces[0]["libprof"]["window"]
        self.assertGreater(window["first_step"], 2, "nothing is recorded before the trigger")
        self.assertEqual(window["last_step"] - window["first_step"], 1)
        self.assertIn("PROF_TRIGGER_FILE", err)


class OnlyWindowCallsAreRecorded(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_setup_and_teardown_calls_are_outside_every_window(self):
        run = run_agent([workload("train_loop"), "--steps", "6", "--manual-steps"], PROF_STEP="manual",
                        PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=1)
        self.assertEqual(run.windows(), [(3, 4)])
        names = {e["name"] for e in api_events(run.traces[0][1])}
        self.assertNotIn("cudaMalloc", names)
        self.assertNotIn("cudaFree", names)
        self.assertNotIn("__cudaRegisterFunction", names)
        self.assertNotIn("cudaDeviceSynchronize", names)

    def test_alloc_in_loop_is_tracked_with_sizes(self):
        run = run_agent([workload("train_loop"), "--steps", "6", "--manual-steps", "--alloc-in-loop"],
                        PROF_STEP="manual", PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=1)
        self.assertEqual(run.windows(), [(3, 4)])
        events = api_events(run.traces[0][1])
        mallocs = [e for e in events if e["name"] == "cudaMalloc"]
        self.assertEqual(len(mallocs), 2)
        self.assertTrue(all(e["args"].get("bytes") == 4 << 20 for e in mallocs), mallocs)
        self.assertEqual(len([e for e in events if e["name"] == "cudaFree"]), 2)


if __name__ == "__main__":
    harness.main()
