"""Thread churn: 20,000 short-lived threads over one run (multithread
--waves: 20 threads at a time, each making a few CUDA calls, then the next
20), with windows repeating all along (PROF_STEP=time:20ms, wait 1, warmup
1, active 2, repeat 0). Each window is compared with the sim's truth log:

- every call made inside the window's span, by whichever thread, is in the
  window, also long after the 8,192nd thread (the agent's thread slots) and
  after the threads that have existed outnumber the event pool's chunks,
  however late the writer seals windows (exited threads' slots are freed by
  the agent thread, their events parked until their window is sealed);
- with PROF_BUFFER_MB=1 (too few chunks for 64 live threads), the calls a
  window lacks are counted as dropped in that very window: a window never
  reports 0 dropped while calls of its span are absent, and no window is
  charged drops of calls made outside its span.
"""
import collections
import glob
import os
import tempfile
import unittest

import harness
import test_agent_short_windows as short

SCHEDULE = dict(PROF_STEP="time:20ms", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=0,
                PROF_FLUSH_TIMEOUT_MS=3000)


def run(name, threads, waves, **prof):
    path = os.path.join(harness.WORKLOAD_DIR, "multithread")
    if not (os.path.exists(harness.LIBPROF_SO) and os.path.exists(path)):
        raise unittest.SkipTest("libprof.so or multithread not built")
    tmp = tempfile.TemporaryDirectory()
    out = os.path.join(tmp.name, "out")
    truth_path = os.path.join(tmp.name, "truth.jsonl")
    env = harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, LD_PRELOAD=harness.LIBPROF_SO,
                          **dict(SCHEDULE, **prof))
    proc = harness.run([path, "--threads", str(threads), "--launches", "2", "--waves", str(waves)], env, timeout=600)
    windows = [short.read_window(p) for p in sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))]
    ops, calls = short.load_truth(truth_path)
    return tmp, proc, windows, ops, calls


def absent_calls(trace, calls, offset):
    held = short.window_calls(trace)
    return [c for c in short.calls_in_span(trace, calls, offset) if c["correlation"] not in held]


class TwentyThousandShortLivedThreads(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.proc, cls.windows, cls.ops, cls.calls = run("churn", threads=20, waves=1000)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_program_ran_its_threads_and_windows_repeated(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertIn("threads=20 launches=2 waves=1000 failures=0", self.proc.stdout)
        threads = {c["thread"] for c in self.calls}
        self.assertGreaterEqual(len(threads), 20000)
        self.assertGreaterEqual(len(self.windows), 5, self.proc.stderr)

    def test_every_window_holds_every_call_of_its_span_from_every_thread(self):
        offset = short.clock_offset(self.windows, self.ops)
        self.assertIsNotNone(offset, "no device record to align the clocks")
        # The order in which threads first made a call: a window's calls
        # must come from threads past the 8,192nd, not only the early ones.
        order = {}
        for c in sorted(self.calls, key=lambda c: c["start_rep_ns"]):
            order.setdefault(c["thread"], len(order))
        late_threads_seen = 0
        required = 0
        wrapped = {e["name"] for trace, _ in self.windows for e in trace["traceEvents"]
                   if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("source") != "cupti"}
        self.assertIn("__cudaLaunchKernel", wrapped)
        for trace, summary in self.windows:
            w = trace["libprof"]["window"]
            losses = {k: v for k, v in trace["libprof"]["losses"].items() if v}
            span = short.calls_in_span(trace, self.calls, offset)
            required += len(span)
            held = short.window_calls(trace)
            # Every call a wrapper records (a host event of its thread) is
            # kept. Calls known only from CUPTI's own records are what the
            # short-window check covers (their edges); here the threads.
            absent = [(c["name"], c["thread"], order.get(c["thread"])) for c in span
                      if c["correlation"] not in held and c["name"] in wrapped]
            self.assertEqual(trace["libprof"]["losses"]["host_events_dropped"], 0, f"window {w['first_step']}")
            self.assertEqual(absent, [], f"window {w['first_step']} (losses {losses}): calls of its span absent "
                                         f"(name, thread, nth thread)")
            late_threads_seen += sum(1 for c in span if order.get(c["thread"], 0) >= 8192)
        self.assertGreater(required, 0, "no window span held a call")
        self.assertGreater(late_threads_seen, 0, "no window held calls of threads past the 8,192nd")


class ThreadsPastTheBudgetAreCountedWhereTheyHappened(unittest.TestCase):
    # 1 MiB: 24 chunks of host events, fewer than the 64 threads alive at once.
    @classmethod
    def setUpClass(cls):
        cls.tmp, cls.proc, cls.windows, cls.ops, cls.calls = run("budget", threads=64, waves=30, PROF_BUFFER_MB=1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_a_window_that_lacks_calls_counts_them_as_dropped(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        offset = short.clock_offset(self.windows, self.ops)
        self.assertIsNotNone(offset, "no device record to align the clocks")
        # The calls a wrapper records (a host event each); the others are
        # known from CUPTI's records, which the 1 MiB budget also drops.
        wrapped = {e["name"] for trace, _ in self.windows for e in trace["traceEvents"]
                   if e.get("cat") == "cuda_runtime" and e.get("args", {}).get("source") != "cupti"}
        self.assertTrue(wrapped)
        absent_total = counted_total = absent_wrapped_total = 0
        for trace, summary in self.windows:
            w = trace["libprof"]["window"]
            losses = trace["libprof"]["losses"]
            dropped = losses["host_events_dropped"]
            absent = absent_calls(trace, self.calls, offset)
            absent_wrapped = [c for c in absent if c["name"] in wrapped]
            absent_total += len(absent)
            absent_wrapped_total += len(absent_wrapped)
            counted_total += sum(losses[k] for k in ("host_events_dropped", "cupti_records_dropped",
                                                     "device_records_dropped"))
            # An absent recorded call is a dropped host event of this very
            # window (or, rarely, a kept one whose CUPTI side, correlation
            # included, the budget dropped); a dropped event may also be a
            # call within 0.5 ms of the span's edges, which calls_in_span
            # does not require. Never "0 dropped" with calls absent.
            window_counted = dropped + losses["cupti_records_dropped"] + losses["device_records_dropped"]
            self.assertGreaterEqual(window_counted, len(absent_wrapped), f"window {w['first_step']}: absent calls not counted")
            if absent_wrapped:
                self.assertGreater(dropped, 0, f"window {w['first_step']}: calls absent, 0 host events dropped")
            if absent:
                self.assertRegex(summary, r"(?m)^ \[data-loss\]", f"window {w['first_step']}: loss not reported")
            # Drops are charged only for calls that started in the span.
            w_calls = [c for c in self.calls
                       if w["start_ns"] - offset <= c["start_rep_ns"] < w["end_ns"] - offset]
            self.assertLessEqual(dropped, len(w_calls), f"window {w['first_step']}: charged drops of other windows")
        self.assertGreater(absent_wrapped_total, 0, "the budget held every thread: this test proved nothing")
        # Calls known only from CUPTI: its drop count is one process-wide
        # number read as a window is collected, so over the run.
        self.assertGreaterEqual(counted_total, absent_total, "absent calls not counted")


if __name__ == "__main__":
    harness.main()
