"""CUPTI collection against the simulated libcupti, compared with the sim's
truth log. cupti_probe drives the collector the way the session does
(attach at warmup, BeginRecord, Pause between windows, Finish, CollectWindow)
and prints each window's records; the truth log says what the sim ran.

What these tests prove (issue "CUPTI collection", Done when):
- every op launched inside a window appears exactly once, with the sim's
  reported start/end, stream and correlation; nothing launched outside it;
  zero drops and missing below the cap;
- past the buffer cap the window's drop count equals what was lost;
- faults (another subscriber, init failure, no driver, NULL buffers, late
  records) leave the probe running, with one warning naming the cause;
- after the last window nothing is enabled and the subscriber is released.
"""
import collections
import json
import os
import tempfile
import unittest

from harness import SIM_LIB_DIR, main, need, run, sim_env

PROBE = os.environ.get("CUPTI_PROBE", "")
OP_KINDS = {"kernel": 0, "memcpy": 1, "memset": 2, "sync": 3, "mem_alloc": 4, "mem_free": 5}
RUNTIME_API = 6


def read_jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class ProbeRun:
    """One probe run: its windows/records and the sim's truth."""

    def __init__(self, proc, truth_lines):
        self.proc = proc
        lines = read_jsonl(proc.stdout)
        self.windows = [l for l in lines if l.get("probe") == "window"]
        self.records = collections.defaultdict(list)
        for l in lines:
            if l.get("probe") == "record":
                self.records[l["window"]].append(l)
        self.done = [l for l in lines if l.get("probe") == "done"]
        self.truth = truth_lines
        self.apis = [t for t in truth_lines if t.get("type") == "api" and t.get("domain") == "runtime"]
        self.ops = [t for t in truth_lines if t.get("type") in OP_KINDS]
        self.state = [t for t in truth_lines if t.get("op") == "cupti_state"]
        self.warnings = [l for l in proc.stderr.splitlines() if "[libprof] warning" in l]
        # After cuptiFinalize the sim reports on its own clock again, so
        # reported times of calls that end later are not comparable with the
        # agent's (the truth line is written at the call's exit).
        finalize = [t["sim_ns"] for t in truth_lines if t.get("call") == "cuptiFinalize"]
        self.finalize_sim_ns = min(finalize) if finalize else float("inf")

    def api_in(self, window):
        """Runtime calls the probe made inside the window: by the correlation
        ids the collector stamped on its first and last call (exact, no clock
        involved), else by the reported clock."""
        if window.get("first_correlation"):
            lo, hi = window["first_correlation"], window["last_correlation"]
            return [a for a in self.apis if lo <= a["correlation"] <= hi]
        return [a for a in self.apis
                if a["end_ns"] < self.finalize_sim_ns and window["start_ns"] <= a["start_rep_ns"] < window["end_ns"]]

    def ops_in(self, window):
        launched = {a["correlation"] for a in self.api_in(window)}
        return [o for o in self.ops if o["correlation"] in launched]


def probe(*args, **env):
    need(PROBE, os.path.join(SIM_LIB_DIR, "libcupti.so.13"))
    with tempfile.TemporaryDirectory() as tmp:
        truth_file = os.path.join(tmp, "truth.jsonl")
        proc = run([PROBE, *[str(a) for a in args]], sim_env(SIM_TRUTH_FILE=truth_file, **env), timeout=120)
        truth = []
        if os.path.exists(truth_file):
            with open(truth_file) as f:
                truth = read_jsonl(f.read())
    return ProbeRun(proc, truth)


def device_key(record):
    return (record["kind"], record["correlation"], record["start_ns"], record["end_ns"])


def truth_key(op):
    kind = OP_KINDS[op["type"]]
    # MEMORY2 records are instants at the op's start.
    end = op["start_rep_ns"] if kind in (4, 5) else op["end_rep_ns"]
    return (kind, op["correlation"], op["start_rep_ns"], end)


class WindowContents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_ = probe("--windows", 2, "--launches", 25)

    def test_probe_ran_cleanly_with_gpu_timings(self):
        r = self.run_
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        self.assertEqual(len(r.windows), 2)
        self.assertEqual(r.warnings, [])
        for w in r.windows:
            self.assertEqual(w["mode"], "activity")
            self.assertEqual(w["has_gpu_timings"], 1)

    def test_every_op_launched_in_a_window_appears_exactly_once_with_sim_times(self):
        r = self.run_
        for w in r.windows:
            expected = collections.Counter(truth_key(o) for o in r.ops_in(w))
            got = collections.Counter(device_key(x) for x in r.records[w["index"]] if x["kind"] != RUNTIME_API)
            self.assertGreaterEqual(sum(1 for k in expected if k[0] == 0), 25, "the window's kernels ran")
            self.assertEqual(got, expected, f"window {w['index']}")

    def test_streams_and_names_match_the_sim(self):
        r = self.run_
        for w in r.windows:
            truth = {(OP_KINDS[o["type"]], o["correlation"]): o for o in r.ops_in(w)}
            for x in r.records[w["index"]]:
                if x["kind"] in (0, 1, 2):
                    op = truth[(x["kind"], x["correlation"])]
                    self.assertEqual(x["stream"], op["stream"])
                    self.assertEqual(x["device"], op["device"])
                if x["kind"] == 0:
                    self.assertEqual(x["name"], "_Z13window_kernelv")

    def test_runtime_api_records_are_the_calls_made_in_the_window(self):
        r = self.run_
        for w in r.windows:
            expected = sorted((a["correlation"], a["start_rep_ns"], a["end_rep_ns"], a["name"]) for a in r.api_in(w))
            got = sorted((x["correlation"], x["start_ns"], x["end_ns"], x["name"])
                         for x in r.records[w["index"]] if x["kind"] == RUNTIME_API)
            self.assertEqual(got, expected)

    def test_no_record_of_warmup_or_between_windows_work(self):
        r = self.run_
        names = {x["name"] for recs in r.records.values() for x in recs if x["kind"] == 0}
        self.assertEqual(names, {"_Z13window_kernelv"})

    def test_gpu_work_never_starts_before_the_call_that_launched_it(self):
        r = self.run_
        for w in r.windows:
            api = {x["correlation"]: x for x in r.records[w["index"]] if x["kind"] == RUNTIME_API}
            for x in r.records[w["index"]]:
                if x["kind"] in (0, 1, 2):
                    self.assertGreaterEqual(x["start_ns"], api[x["correlation"]]["start_ns"])

    def test_no_drops_or_missing_below_the_cap(self):
        for w in self.run_.windows:
            self.assertEqual(w["device_records_dropped"], 0)
            self.assertEqual(w["cupti_records_dropped"], 0)
            self.assertEqual(w["device_records_missing"], 0)
            self.assertEqual(w["unknown_activity_kinds"], 0)

    def test_after_the_last_window_nothing_is_enabled_and_the_subscriber_is_released(self):
        state = self.run_.state
        self.assertEqual(len(state), 1)
        self.assertEqual(state[0]["subscribed"], 0)
        self.assertEqual(state[0]["enabled_activity_kinds"], [])
        self.assertEqual(state[0]["enabled_callback_domains"], [])
        self.assertEqual(state[0]["finalized"], 1)
        self.assertEqual(state[0]["records_dropped"], 0)


class BufferCap(unittest.TestCase):
    def test_drop_count_past_the_cap_equals_what_was_lost(self):
        # PROF_BUFFER_MB=1: a 256 KiB pool of 32 KiB buffers, far too small
        # for 4000 kernels plus their API records in one window.
        r = probe("--windows", 1, "--launches", 4000, "--buffer-mb", 1, "--wait-ms", 200)
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        w = r.windows[0]
        truth_in_window = len(r.ops_in(w)) + len(r.api_in(w))
        delivered = len(r.records[0])
        lost = w["cupti_records_dropped"] + w["device_records_dropped"]
        self.assertGreater(lost, 0, "the cap was not reached; the test proves nothing")
        self.assertEqual(delivered + lost, truth_in_window)
        self.assertEqual(w["cupti_records_dropped"], r.state[0]["records_dropped"])


class Faults(unittest.TestCase):
    def assert_interception_only(self, r, cause):
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        self.assertEqual(len(r.windows), 2)
        for w in r.windows:
            self.assertTrue(w["mode"].startswith("interception-only ("), w["mode"])
            self.assertIn(cause, w["mode"])
            self.assertEqual(w["has_gpu_timings"], 0)
            self.assertEqual(w["records"], 0)
        self.assertEqual(len(r.warnings), 1, r.proc.stderr)
        self.assertIn(cause, r.warnings[0])

    def test_another_subscriber_is_named_and_never_retried(self):
        r = probe("--windows", 2, "--launches", 3, SIM_CUPTI_SUBSCRIBER="Nsight Systems")
        self.assert_interception_only(r, "Nsight Systems")
        subscribes = [t for t in r.truth if t.get("call", "").startswith("cuptiSubscribe")]
        self.assertEqual(len(subscribes), 1, "one attempt, no retry loop")
        registered = [t for t in r.truth if t.get("call") in ("cuptiActivityRegisterCallbacks",
                                                               "cuptiActivityRegisterTimestampCallback")]
        self.assertEqual(registered, [], "the holder's buffers and clock are left alone")

    def test_cupti_init_failure(self):
        r = probe("--windows", 2, "--launches", 3, SIM_CUPTI_INIT_FAIL=1)
        self.assert_interception_only(r, "CUPTI_ERROR_NOT_INITIALIZED")

    def test_no_driver(self):
        # The driver library is loaded, CUPTI answers 999: the line names the
        # file and the exact error, and guesses nothing ("no GPU?").
        r = probe("--windows", 2, "--launches", 3, SIM_NO_DRIVER=1)
        self.assert_interception_only(
            r, "cuptiSubscribe_v2 in %s/libcupti.so.13 returned CUPTI_ERROR_UNKNOWN (999)" % SIM_LIB_DIR)
        for w in r.windows:
            self.assertNotIn("GPU?", w["mode"])
            self.assertNotIn("no CUDA driver", w["mode"])

    def test_null_buffers_lose_every_record_and_count_it(self):
        r = probe("--windows", 1, "--launches", 10, "--wait-ms", 100, SIM_CUPTI_NULL_BUFFERS=1)
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        w = r.windows[0]
        self.assertEqual(w["mode"], "activity")
        self.assertEqual(w["records"], 0)
        self.assertEqual(w["cupti_records_dropped"], len(r.ops_in(w)) + len(r.api_in(w)))
        self.assertEqual(w["device_records_missing"], 10 + 2, "10 kernels, a copy and a memset never came")

    def test_late_records_within_the_deadline_are_kept(self):
        r = probe("--windows", 1, "--launches", 10, "--wait-ms", 3000, SIM_CUPTI_LATE_MS=200)
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        w = r.windows[0]
        expected = collections.Counter(truth_key(o) for o in r.ops_in(w))
        got = collections.Counter(device_key(x) for x in r.records[0] if x["kind"] != RUNTIME_API)
        self.assertEqual(got, expected)
        self.assertEqual(w["device_records_missing"], 0)

    # The probe of the test above with records later than the deadline: another scenario.
    def test_records_later_than_the_deadline_are_forced_out_or_missing_never_misplaced(self):
        # CUPTI's worker would hand the buffers over 400 ms late; at the
        # 20 ms deadline the window forces out what CUPTI still holds: each
        # of its operations is then in it or counted missing, never both.
        r = probe("--windows", 2, "--launches", 10, "--wait-ms", 20, SIM_CUPTI_LATE_MS=400)
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        first = r.windows[0]
        expected = collections.Counter(truth_key(o) for o in r.ops_in(first))
        got = collections.Counter(device_key(x) for x in r.records[0] if x["kind"] != RUNTIME_API)
        self.assertLessEqual(got, expected)
        self.assertEqual(sum(got.values()) + first["device_records_missing"] + first.get("device_records_untimed", 0),
                         sum(expected.values()))
        # Window 1's late records must not show up in window 2.
        first_corr = {o["correlation"] for o in r.ops_in(first)}
        self.assertFalse(any(x["correlation"] in first_corr for x in r.records[1]))


if __name__ == "__main__":
    main()
