"""Signals and exit under stress: signals at random
moments, including during and after exit, on a multi-threaded workload whose
threads take the session's lock at every launch; every trial leaves exactly
one whole window (marked partial, with the reason), no temporary file, the
signal's own exit status, and no multi-second stall. A fault or abort leaves
one line and no temporary file. An exit never waits on a slow CUPTI beyond
its budget."""
import glob
import json
import os
import random
import resource
import signal
import subprocess
import tempfile
import time
import unittest

import harness
from test_agent_support import need, run_agent, validate, workload

SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT]
# PROF_FLUSH_TIMEOUT_MS=500: the exit budget is 0.5 s + 3 s.
BUDGET_S = 3.5


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def handler_installed(pid, sig):
    """True once the process catches sig (SigCgt in /proc/<pid>/status):
    libprof's constructor has run."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


class SignalStorm(unittest.TestCase):
    TRIALS = int(os.environ.get("LIBPROF_STORM_TRIALS", "20"))

    def setUp(self):
        need(harness.LIBPROF_SO, workload("multithread"))

    def one_trial(self, rng, out_dir, run_s, send=True, launches=6000):
        # Every launch is a step (Session::mu_ on 8 threads); the window opens
        # at the first step and stays open to the end.
        env = harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out_dir,
                              PROF_STEP="api:cudaLaunchKernel", PROF_WAIT=0, PROF_WARMUP=0,
                              PROF_ACTIVE=1_000_000, PROF_FLUSH_TIMEOUT_MS=500, PROF_LOG_LEVEL="debug",
                              PROF_BUFFER_MB=8)  # bounded windows: written well within the exit budget
        proc = subprocess.Popen([workload("multithread"), "--threads", "8", "--launches", str(launches)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
        sigs = [rng.choice(SIGNALS)]
        if rng.random() < 0.3:
            sigs.append(rng.choice(SIGNALS))  # a second one, often during the first's exit work
        start = time.monotonic()
        while not handler_installed(proc.pid, signal.SIGTERM) and proc.poll() is None:
            if time.monotonic() - start > 30:
                break
            time.sleep(0.001)
        time.sleep(rng.uniform(*run_s) if isinstance(run_s, tuple) else rng.uniform(0.0, run_s))
        sent = []
        for sig in sigs if send else []:
            try:
                os.kill(proc.pid, sig)
                sent.append((sig, time.monotonic()))
            except ProcessLookupError:
                break
            time.sleep(rng.uniform(0.0, 0.05))
        _, err = proc.communicate(timeout=60)
        end = time.monotonic()
        return proc.returncode, sent, end, err

    def test_random_signals_never_lose_or_cut_a_window(self):
        rng = random.Random(int(os.environ.get("LIBPROF_STORM_SEED", "14")))
        # How long one run takes on this machine now (loaded or not): the
        # signals land anywhere from start to a little past its end.
        out_dir = tempfile.mkdtemp(prefix="libprof-storm-")
        t0 = time.monotonic()
        self.one_trial(random.Random(0), out_dir, 0, send=False)
        run_s = (time.monotonic() - t0) * 1.1
        subprocess.run(["rm", "-rf", out_dir])
        outcomes = []
        for trial in range(self.TRIALS):
            out_dir = tempfile.mkdtemp(prefix="libprof-storm-")
            # Even trials: a run far longer than the signal's delay (it lands
            # mid-window, threads taking the session's lock at every launch).
            # Odd trials: around the end of a short run (during the exit work).
            mid_run = trial % 2 == 0
            if mid_run:
                code, sent, end, err = self.one_trial(rng, out_dir, (0.0, 0.5), launches=10_000_000)
            else:
                code, sent, end, err = self.one_trial(rng, out_dir, (0.5 * run_s, 1.2 * run_s))
            what = f"trial {trial}: sent {[(s.name) for s, _ in sent]}, exit {code}\n{err[-2000:]}"
            names = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
            self.assertFalse([n for n in names if n.startswith(".")], f"temporary left: {names} {what}")
            traces = [n for n in names if n.endswith(".pt.trace.json")]
            if not traces and "nothing was recorded in it" in err:
                # Killed before its first launch: an empty window writes no files.
                outcomes.append("empty")
                continue
            self.assertEqual(len(traces), 1, f"{names} {what}")
            self.assertEqual(len([n for n in names if n.endswith(".summary.txt")]), 1, f"{names} {what}")
            path = os.path.join(out_dir, traces[0])
            ok, out = validate(path)
            self.assertTrue(ok, f"{out} {what}")
            with open(path) as f:
                window = json.load(f)["libprof"]["window"]
            self.assertTrue(window["partial"], what)
            if sent and code < 0:
                # Died by a signal we sent, after the window was written for it
                # (or for the exit already under way).
                self.assertIn(-code, [s for s, _ in sent], what)
                self.assertIn(window["partial_reason"], [s.name for s, _ in sent] + ["exit"], what)
                # No stall: the exit work took well under its budget.
                self.assertLess(end - sent[0][1], BUDGET_S - 0.5, what)
            else:
                self.assertEqual(code, 0, what)  # every signal came after the process was gone
            outcomes.append(window["partial_reason"])
            if mid_run:
                self.assertTrue(sent and code < 0 and window["partial_reason"].startswith("SIG"), what)
            subprocess.run(["rm", "-rf", out_dir])
        print("outcomes:", outcomes)


class FatalSignals(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_a_crash_or_abort_leaves_one_line_and_no_temporary(self):
        for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
            with self.subTest(sig=sig.name):
                run = run_agent([workload("train_loop"), "--steps", "10", "--manual-steps", "--raise-at",
                                 f"4:{int(sig)}"], PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=4)
                self.assertEqual(run.proc.returncode, -sig)
                lines = [l for l in run.log_lines() if sig.name in l]
                self.assertEqual(len(lines), 1, run.proc.stderr)
                self.assertIn("not written", lines[0])
                names = os.listdir(run.out_dir) if os.path.isdir(run.out_dir) else []
                self.assertFalse([n for n in names if n.startswith(".")], names)


class SlowCupti(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_exit_never_waits_on_cupti_beyond_its_budget(self):
        # The sim's CUPTI delivers every buffer 60 s late; a forced flush
        # blocks until then. The host's exit must not.
        start = time.monotonic()
        run = run_agent([workload("train_loop"), "--steps", "10", "--manual-steps", "--exit-at", "4"],
                        timeout=90, SIM_CUPTI_LATE_MS=60000, PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1,
                        PROF_ACTIVE=4)
        elapsed = time.monotonic() - start
        self.assertEqual(run.proc.returncode, 3, run.proc.stderr)
        self.assertLess(elapsed, BUDGET_S + 5, run.proc.stderr)
        names = os.listdir(run.out_dir) if os.path.isdir(run.out_dir) else []
        self.assertFalse([n for n in names if n.startswith(".")], names)


if __name__ == "__main__":
    harness.main()
