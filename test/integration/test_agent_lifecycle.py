"""The injected agent's lifecycle on the simulated stack: exit, SIGTERM and
SIGINT during a window each leave one complete window marked partial and
the host's own exit status; a fork mid-window leaves the parent's window
intact and the child clean; exec'd children profile themselves; one agent
per process however it was loaded; 64 threads lose nothing below the buffer
cap and count every drop above it; a process that ends before its first
window says so in one line."""
import glob
import os
import re
import signal
import subprocess
import unittest

import harness
from test_agent_support import (api_events, need, outermost_calls, run_agent, step_spans, truth, validate,
                                workload)

MANUAL = dict(PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=4, PROF_REPEAT=1)


def loop(*args):
    return [workload("train_loop"), "--steps", "10", "--manual-steps", *args]


class EndsMidWindow(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def check_partial(self, run, reason, last_step):
        self.assertEqual(len(run.traces), 1, "\n".join(run.log_lines()))
        path, trace = run.traces[0]
        ok, out = validate(path)
        self.assertTrue(ok, out)
        window = trace["libprof"]["window"]
        self.assertTrue(window["partial"])
        self.assertIn(reason, window["partial_reason"])
        self.assertEqual((window["first_step"], window["last_step"]), (2, last_step))
        self.assertEqual([s["name"] for s in step_spans(trace)],
                         [f"ProfilerStep#{s}" for s in range(2, last_step + 1)])
        # Everything the process did in steps 2..last_step is there.
        calls = [c for c in outermost_calls(run.truth) if c["name"] != "__cudaRegisterFunction"]
        syncs = [i for i, c in enumerate(calls) if c["name"] == "cudaStreamSynchronize"]
        in_window = calls[syncs[1] + 1:]  # after step 1's closing synchronize
        self.assertEqual([e["name"] for e in api_events(trace)], [c["name"] for c in in_window])

    def test_exit_mid_window_writes_it_partial_and_keeps_the_exit_status(self):
        run = run_agent(loop("--exit-at", "4"), **MANUAL)
        bare = harness.run(loop("--exit-at", "4"), harness.sim_env())
        self.assertEqual(run.proc.returncode, 3)
        self.assertEqual(run.proc.stdout, bare.stdout)
        self.check_partial(run, "exit", 4)

    def test_sigterm_mid_window_writes_it_partial_and_dies_by_the_signal(self):
        run = run_agent(loop("--raise-at", "4:TERM"), **MANUAL)
        bare = harness.run(loop("--raise-at", "4:TERM"), harness.sim_env())
        self.assertEqual(bare.returncode, -signal.SIGTERM)
        self.assertEqual(run.proc.returncode, bare.returncode)
        self.assertEqual(run.proc.stdout, bare.stdout)
        self.check_partial(run, "SIGTERM", 4)

    def test_sigint_mid_window_writes_it_partial_and_dies_by_the_signal(self):
        run = run_agent(loop("--raise-at", "3:INT"), **MANUAL)
        bare = harness.run(loop("--raise-at", "3:INT"), harness.sim_env())
        self.assertEqual(run.proc.returncode, bare.returncode)
        self.assertEqual(run.proc.returncode, -signal.SIGINT)
        self.check_partial(run, "SIGINT", 3)

    def test_host_sigterm_handler_installed_later_still_runs(self):
        # Python's own SIGTERM handler, installed after libprof's, decides the exit.
        code = ("import os, signal, sys, subprocess\n"
                "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(42))\n"
                "os.kill(os.getpid(), signal.SIGTERM)\n")
        run = run_agent(["python3", "-c", code], PROF_STEP="manual")
        self.assertEqual(run.proc.returncode, 42)

    def test_end_before_the_first_window_is_one_line_naming_the_variables(self):
        run = run_agent(loop(), PROF_STEP="manual", PROF_WAIT=30)
        self.assertEqual(run.proc.returncode, 0)
        self.assertEqual(run.traces, [])
        lines = [l for l in run.log_lines() if "before the first window" in l]
        self.assertEqual(len(lines), 1, run.proc.stderr)
        self.assertIn("step 10", lines[0])
        self.assertIn("PROF_WAIT", lines[0])


class ForkAndExec(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_fork_mid_window_leaves_the_parent_window_intact_and_the_child_clean(self):
        run = run_agent(loop("--fork-at", "3"), timeout=60, **MANUAL)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("child exited 0", run.proc.stdout)
        pids = {t["libprof"]["pid"] for _, t in run.traces}
        self.assertEqual(len(run.traces), 1, f"only the parent writes a window: {pids}")
        trace = run.traces[0][1]
        self.assertFalse(trace["libprof"]["window"]["partial"])
        self.assertEqual(run.windows(), [(2, 5)])
        # The child's calls (another pid) are not in the parent's window.
        child_pids = {c["pid"] for c in truth.api(run.truth)} - {trace["libprof"]["pid"]}
        self.assertEqual(len(child_pids), 1)
        tids = {e["tid"] for e in api_events(trace)}
        self.assertNotIn(next(iter(child_pids)), tids)

    def test_fork_from_a_python_child_with_threads_running_does_not_deadlock(self):
        # The parent has the agent's threads running (time steps) when it forks
        # repeatedly; each child restarts the agent and leaves through os._exit.
        code = ("import os\n"
                "for _ in range(20):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        os._exit(7)\n"
                "    _, status = os.waitpid(pid, 0)\n"
                "    assert os.WEXITSTATUS(status) == 7\n"
                "print('forked 20')\n")
        run = run_agent(["python3", "-c", code], PROF_STEP="time:1ms", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=1,
                        PROF_REPEAT=0, timeout=60)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("forked 20", run.proc.stdout)

    def test_exec_with_inherited_preload_profiles_the_new_program(self):
        run = run_agent(["/bin/sh", "-c", f"exec {workload('train_loop')} --steps 6 --manual-steps"], **MANUAL)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.windows(), [(2, 5)])
        self.assertTrue(all(not t["libprof"]["window"]["partial"] for _, t in run.traces))

    def test_one_agent_when_loaded_both_ways(self):
        run = run_agent(loop(), CUDA_INJECTION64_PATH=harness.LIBPROF_SO, **MANUAL)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.windows(), [(2, 5)])

    def test_a_shell_without_cuda_writes_nothing_and_says_nothing(self):
        run = run_agent(["/bin/sh", "-c", "true"], PROF_STEP="time:10ms", PROF_WAIT=0, PROF_WARMUP=0,
                        PROF_ACTIVE=1)
        self.assertEqual(run.proc.returncode, 0)
        self.assertEqual(run.traces, [])
        self.assertEqual(run.log_lines(), [])


class ManyThreads(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("multithread"))

    def run_threads(self, launches, buffer_mb):
        # One long time step: the whole run is one window, ended at exit.
        return run_agent([workload("multithread"), "--threads", "64", "--launches", str(launches)],
                         PROF_STEP="time:60s", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=1, PROF_BUFFER_MB=buffer_mb,
                         timeout=240)

    # The window opens at start (wait=0), before the module's kernels are
    # registered; registrations are left out on both sides.
    def intercepted_after_start(self, run):
        return [c for c in outermost_calls(run.truth) if c["name"] != "__cudaRegisterFunction"]

    def events(self, trace):
        return [e for e in api_events(trace) if e["name"] != "__cudaRegisterFunction"]

    def test_64_threads_below_the_cap_lose_nothing(self):
        run = self.run_threads(100, 256)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("failures=0", run.proc.stdout)
        self.assertEqual(len(run.traces), 1)
        trace = run.traces[0][1]
        events = self.events(trace)
        self.assertEqual(trace["libprof"]["losses"]["host_events_dropped"], 0)
        calls = self.intercepted_after_start(run)
        self.assertEqual(len(events), len(calls))
        self.assertEqual(sorted(e["name"] for e in events), sorted(c["name"] for c in calls))
        self.assertEqual(len({e["tid"] for e in events}), len({c["thread"] for c in calls}))

    def test_64_threads_above_the_cap_count_every_drop(self):
        run = self.run_threads(2000, 1)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        trace = run.traces[0][1]
        # A call whose host event was dropped may still show up through
        # CUPTI's own runtime record (args.source "cupti", device budget):
        # count the agent's host events only, and check the rest are exactly
        # calls it dropped (no correlation shown twice).
        shown = api_events(trace)
        events = [e for e in shown if e["args"].get("source") != "cupti"]
        from_cupti = [e for e in shown if e["args"].get("source") == "cupti"]
        dropped = trace["libprof"]["losses"]["host_events_dropped"]
        self.assertGreater(dropped, 0)
        self.assertEqual(len(events) + dropped, len(outermost_calls(run.truth)))
        self.assertLessEqual(len(from_cupti), dropped)
        self.assertFalse({e["args"]["correlation"] for e in events} & {e["args"]["correlation"] for e in from_cupti})
        self.assertLessEqual(len(events) * 64, 1 << 20, "kept events fit in PROF_BUFFER_MB")


class RtldLocal(unittest.TestCase):
    """libcudart reached only as a dependency of an RTLD_LOCAL library (as
    PyTorch loads it): dlsym(RTLD_NEXT) cannot see it; the agent must."""

    def setUp(self):
        self.driver = workload("ctypes_driver.py")
        need(harness.LIBPROF_SO, self.driver, workload("libctypes_workload.so"))
        self.schedule = dict(PROF_STEP="sync", PROF_WAIT=0, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=1)

    def test_against_the_simulated_runtime(self):
        run = run_agent(["python3", self.driver, "--steps", "5"], **self.schedule)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("run_steps(5) =", run.proc.stdout)
        self.assertEqual(run.windows(), [(1, 2)])
        events = api_events(run.traces[0][1])
        self.assertEqual([e["name"] for e in events].count("cudaStreamSynchronize"), 2)
        self.assertTrue(all(e["args"].get("result", 0) == 0 for e in events))

    def test_against_the_toolkits_real_runtime_without_a_driver(self):
        if not glob.glob(os.path.join(harness.CUDA_HOME, "lib64", "libcudart.so.13*")):
            self.skipTest("no toolkit libcudart.so.13")
        if glob.glob("/dev/nvidia[0-9]*"):
            self.skipTest("a real GPU is present: the runtime's calls would succeed")
        env = dict(self.schedule, PROF_STEP="api:cudaMemcpyAsync", PROF_WARMUP=0, PROF_ACTIVE=1)
        env["LD_LIBRARY_PATH"] = os.path.join(harness.CUDA_HOME, "lib64")
        bare = harness.run(["python3", self.driver, "--steps", "2"],
                           harness.clean_env(LD_LIBRARY_PATH=env["LD_LIBRARY_PATH"]))
        run = run_agent(["python3", self.driver, "--steps", "2"], sim=False, **env)
        self.assertEqual(run.proc.returncode, bare.returncode)
        self.assertEqual(run.proc.stdout, bare.stdout)
        self.assertIn("= -35", run.proc.stdout, "cudaErrorInsufficientDriver reaches the program unchanged")
        self.assertGreaterEqual(len(run.traces), 1, "\n".join(run.log_lines()))
        # The library's kernels register when ctypes loads it: no result to check there.
        events = [e for e in api_events(run.traces[0][1]) if e["name"] != "__cudaRegisterFunction"]
        self.assertTrue(events, "the wrapper saw the calls")
        self.assertTrue(all(e["args"].get("result") == 35 for e in events), events)


class BadValues(unittest.TestCase):
    """Every bad value of every variable: one line naming it, the host's
    output and exit status unchanged."""

    BAD = {
        "PROF_ENABLE": ["2", "maybe"],
        "PROF_OUTPUT_DIR": ["/proc/nope"],
        "PROF_STEP": ["bogus", "time:100", "time:-1s", "kernel:([", "nvtx:*x", "api:cudaNope"],
        "PROF_SKIP_FIRST": ["-1", "x"],
        "PROF_WAIT": ["abc", "1.5"],
        "PROF_WARMUP": ["-3", "99999999999999999999999"],
        "PROF_ACTIVE": ["0", "two"],
        "PROF_REPEAT": ["-1", "1e3"],
        "PROF_ACTIVITIES": ["kernel,gpu", ""],
        "PROF_FORMATS": ["pdf"],
        "PROF_COMPRESS": ["zip"],
        "PROF_BUFFER_MB": ["0", "-5", "lots"],
        "PROF_TRIGGER_FILE": [""],
        "PROF_NAME": ["a/b", ""],
        "PROF_RANK": ["-2", "first"],
        "PROF_CUPTI_LIB": ["/no/such/libcupti.so"],
        "PROF_FLUSH_TIMEOUT_MS": ["-1", "soon"],
        "PROF_CONFIG_FILE": ["/no/such/file"],
        "PROF_LOG_LEVEL": ["loud"],
        "PROF_LOG_FILE": ["/proc/nope/log"],
    }

    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))
        self.bare = harness.run(loop("--exit-code", "5"), harness.sim_env())

    def test_each_bad_value_gives_one_line_and_changes_nothing_for_the_host(self):
        for var, values in self.BAD.items():
            for value in values:
                with self.subTest(var=var, value=value):
                    run = run_agent(loop("--exit-code", "5"), **{var: value})
                    self.assertEqual(run.proc.returncode, self.bare.returncode)
                    self.assertEqual(run.proc.stdout, self.bare.stdout)
                    lines = [l for l in run.log_lines() if f"{var}='{value}'" in l]
                    self.assertEqual(len(lines), 1, run.proc.stderr)


if __name__ == "__main__":
    harness.main()
