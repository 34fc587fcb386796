"""Many short windows on copy-heavy and sync-heavy workloads, in both modes:
at every window edge a call may be in flight, so every rule of a window is
checked at many edges.

Schedule: PROF_STEP=time:2ms, wait 1, warmup 1, active 3, repeat 0 (a
window of three 2 ms steps every 10 ms, about 20-40 windows a run). Each run
is compared, window by window, with the sim's truth log by correlation:

- device records: exactly the kernels, copies and memsets the truth log has
  for the calls the window holds (none missing: a blocking cudaMemcpy, a
  pageable cudaMemcpyAsync or a cudaMemset whose device work is enqueued
  after the last step's nominal end keeps its record), and none whose call
  the window does not hold (a copy whose call began in a wait step);
- calls: every outermost runtime call the program made between the
  window's first step's start and its last step's end (as the truth log
  times it, 0.5 ms in from each edge: the wrapper's clock and the sim's are
  read a few instructions apart) is in the window;
- losses: 0 device records missing, nothing dropped, and no `data-loss`
  finding in the summary, since nothing was lost.

A second class makes a window that cannot hold its calls (PROF_BUFFER_MB=1
with thousands of launches a step) and checks that what it could not hold
is counted and reported: every call of the window's span that is absent
from it is covered by the drop counts, and the summary says data was lost.
"""
import collections
import glob
import json
import os
import re
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

SCHEDULE = dict(PROF_STEP="time:2ms", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=0,
                PROF_FLUSH_TIMEOUT_MS=3000)
DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
API_CATS = ("cuda_runtime", "cuda_driver")
# How far inside a window's edges a call must lie (truth clock) to be
# required in it: the wrapper reads the agent clock a few instructions before
# the sim reads its own, so a call right at an edge may be on either side.
EDGE_SLACK_NS = 500_000

WORKLOADS = {
    # Blocking copies (a 4-byte cudaMemcpy D2H mid-step), pageable
    # cudaMemcpyAsync (the host waits for the copy), a synchronous cudaMemset,
    # cudaMalloc/cudaFree (which synchronizes) inside every step, zero-byte
    # copies and memsets.
    "copies": ["train_loop", "--steps", "100", "--pageable", "--d2h-mid-step", "--alloc-in-loop",
               "--sync-memset", "--zero-bytes"],
    # Many small launches between stream synchronizes.
    "syncs": ["train_loop", "--steps", "60", "--tiny", "--kernels-per-step", "40", "--sync-memset"],
    # Eight threads launching into and synchronizing their own streams:
    # calls with no callback (cudaGetLastError, the launch configuration
    # calls) among launches that keep the GPU busy.
    "threads": ["multithread", "--threads", "8", "--launches", "3000"],
    # 2D/3D and symbol copies, host functions, graphs, managed memory,
    # pools: each family's synchronizing calls.
    "families": ["api_families", "--iterations", "60"],
}


def load_truth(path):
    """Device operations by correlation, and the outermost runtime calls the
    program made (libprof's own calls, which the truth log also has, left out:
    harness.own_calls)."""
    # read_large: json.loads on every line of a run's log cost most of this
    # test's time on a loaded machine.
    outermost, op_lines = truth.read_large(path, DEVICE_CATS.values())
    ops = collections.defaultdict(list)
    for line in op_lines:
        ops[line["correlation"]].append(line)
    own = {c["correlation"] for c in harness.own_calls(outermost)}
    calls = [l for l in outermost if l["domain"] == "runtime" and l["correlation"] not in own]
    # after_ns: when the thread's previous call returned (its first: its own start).
    last_end = {}
    for c in sorted(calls, key=lambda c: c["start_rep_ns"]):
        c["after_ns"] = last_end.get(c["thread"], c["start_rep_ns"])
        last_end[c["thread"]] = c["end_rep_ns"]
    return ops, calls


def read_window(path):
    with open(path) as f:
        trace = json.load(f)
    with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
        summary = f.read()
    return trace, summary


def window_calls(trace):
    return {e["args"]["correlation"] for e in trace["traceEvents"]
            if e.get("cat") in API_CATS and e.get("ph") == "X" and "correlation" in e.get("args", {})}


def device_records(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") in DEVICE_CATS]


def clock_offset(windows, ops, calls=()):
    """Trace time (Unix ns) minus truth time, from a device record: CUPTI
    times it on the agent clock (timestamp callback), the same instant the
    truth log's reported clock gives. Windows whose budget dropped every
    device record: from a call instead, to within the few microseconds
    between the wrapper's clock read and the sim's (calls given)."""
    for trace, _ in windows:
        base = trace["baseTimeNanoseconds"]
        for e in device_records(trace):
            for op in ops.get(e["args"].get("correlation"), []):
                if op["type"] == DEVICE_CATS[e["cat"]]:
                    return base + round(e["ts"] * 1000) - op["start_rep_ns"]
    by_corr = {c["correlation"]: c for c in calls}
    for trace, _ in windows:
        base = trace["baseTimeNanoseconds"]
        for e in trace["traceEvents"]:
            call = by_corr.get(e.get("args", {}).get("correlation")) if e.get("cat") in API_CATS else None
            if call is not None and e.get("ph") == "X":
                return base + round(e["ts"] * 1000) - call["start_rep_ns"]
    return None


def calls_in_span(trace, calls, offset):
    """Truth calls made well inside the window's span [first step's start,
    last step's end), after the stretch the window reports it did not record
    (its agent thread turned recording on late: losses.unrecorded_start_ns).
    A call's start is taken as its thread's previous return: libprof times a
    call from its wrapper's entry, and a thread preempted between that and
    the sim's own clock read enters the call earlier than the truth log says.
    Module teardown at exit (__cudaUnregisterFatBinary) is not required."""
    start, end = span_bounds(trace, offset)
    return [c for c in calls if c["after_ns"] >= start and c["end_rep_ns"] <= end
            and c["name"] != "__cudaUnregisterFatBinary"]


def span_bounds(trace, offset):
    """calls_in_span's bounds on the truth clock: a call is required if its
    after_ns >= start and its end_rep_ns <= end."""
    w = trace["libprof"]["window"]
    unrecorded = trace["libprof"]["losses"].get("unrecorded_start_ns", 0)
    return (w["start_ns"] - offset + unrecorded + EDGE_SLACK_NS, w["end_ns"] - offset - EDGE_SLACK_NS)


def recording_edge_calls(trace, calls, offset):
    """In a window that reports an unrecorded start, the calls made right
    where recording came on: a call whose wrapper ran just before (so it has
    no host event) may reach CUPTI's callback just after, and its device
    record then lands in the window without it (or the reverse). Those are
    not checked: the window reports that stretch as lost."""
    unrecorded = trace["libprof"]["losses"].get("unrecorded_start_ns", 0)
    if not unrecorded or offset is None:
        return set()
    on = trace["libprof"]["window"]["start_ns"] - offset + unrecorded
    return {c["correlation"] for c in calls if abs(c["start_rep_ns"] - on) < EDGE_SLACK_NS}


def run_workloads(test_class, workloads, **prof):
    test_class.tmp = tempfile.TemporaryDirectory()
    test_class.runs = {}
    for name, (binary, *args) in workloads.items():
        path = os.path.join(harness.WORKLOAD_DIR, binary)
        harness.need(harness.LIBPROF_SO, path)
        work = os.path.join(test_class.tmp.name, name)
        os.makedirs(work)
        for mode, (proc, out, truth_path) in harness.run_in_each_mode([path, *args], work, **prof).items():
            windows = [read_window(p) for p in sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))]
            ops, calls = load_truth(truth_path)
            test_class.runs[(name, mode)] = (proc, windows, ops, calls)


class ShortWindowsKeepEveryRecordOfTheirCalls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        run_workloads(cls, WORKLOADS, **SCHEDULE)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_run_writes_many_windows(self):
        for (name, mode), (proc, windows, _, _) in sorted(self.runs.items()):
            with self.subTest(workload=name, mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                # Short windows only test edges if there are many of them.
                self.assertGreaterEqual(len(windows), 3, proc.stderr)

    def test_device_records_are_exactly_those_of_the_window_calls(self):
        for (name, mode), (_, windows, ops, calls) in sorted(self.runs.items()):
          with self.subTest(workload=name, mode=mode):
            offset = clock_offset(windows, ops)
            by_corr = {c["correlation"]: c for c in calls}
            for trace, _ in windows:
                first = trace["libprof"]["window"]["first_step"]
                held = window_calls(trace)
                edge = recording_edge_calls(trace, calls, offset)
                got = collections.Counter((DEVICE_CATS[e["cat"]], e["args"].get("correlation"))
                                          for e in device_records(trace))
                want = collections.Counter((op["type"], c) for c in held for op in ops.get(c, []))
                without_call = {k: n for k, n in got.items() if k[1] not in held and k[1] not in edge}
                def where(keys):
                    """Where the calls of these records were made, relative to the window (ms)."""
                    w = trace["libprof"]["window"]
                    out = []
                    for _, c in list(keys)[:4]:
                        call = by_corr.get(c)
                        op = ops.get(c, [{}])[0]
                        out.append((call and call["name"], call and round((call["after_ns"] + offset - w["start_ns"]) / 1e6, 3),
                                    call and round((call["start_rep_ns"] + offset - w["start_ns"]) / 1e6, 3),
                                    op.get("start_rep_ns") and round((op["start_rep_ns"] + offset - w["start_ns"]) / 1e6, 3)))
                    return f"window {first} ({(w['end_ns'] - w['start_ns']) / 1e6} ms, losses " \
                           f"{ {k: v for k, v in trace['libprof']['losses'].items() if v} }): (call, after, start, op) ms {out}"
                self.assertEqual(without_call, {}, "device records without their call: " + where(without_call))
                missing = {k: n for k, n in (want - got).items() if k[1] not in edge}
                self.assertEqual(missing, {}, "device records missing: " + where(missing))
                extra = {k: n for k, n in (got - want).items() if k[1] not in edge}
                self.assertEqual(extra, {}, f"window {first}: device records the truth log lacks")
                # Per kind, the counts the truth log gives for these calls.
                kinds = lambda c: collections.Counter(k for (k, cc), n in c.items() for _ in range(n) if cc not in edge)
                self.assertEqual(kinds(got), kinds(want), f"window {first}")

    def test_every_call_of_the_window_span_is_in_the_window(self):
        for (name, mode), (_, windows, ops, calls) in sorted(self.runs.items()):
          with self.subTest(workload=name, mode=mode):
            offset = clock_offset(windows, ops)
            self.assertIsNotNone(offset, "no device record to align the clocks")
            required = 0
            for trace, _ in windows:
                held = window_calls(trace)
                span = calls_in_span(trace, calls, offset)
                required += len(span)
                w = trace["libprof"]["window"]
                absent = [(c["name"], c["correlation"], round((c["after_ns"] + offset - w["start_ns"]) / 1e6, 3),
                           round((c["start_rep_ns"] + offset - w["start_ns"]) / 1e6, 3))
                          for c in span if c["correlation"] not in held]
                self.assertEqual(absent, [], f"window {w['first_step']} ({(w['end_ns'] - w['start_ns']) / 1e6} ms, "
                                             f"losses { {k: v for k, v in trace['libprof']['losses'].items() if v} }): "
                                             f"calls made inside its span are not in it (name, corr, after, start ms)")
            self.assertGreater(required, 0, "no window span held a call")

    def test_nothing_lost_and_no_data_loss_finding(self):
        for (name, mode), (proc, windows, _, _) in sorted(self.runs.items()):
          with self.subTest(workload=name, mode=mode):
            # No record of a call came after its window was written.
            self.assertNotIn("came after its window was written", proc.stderr)
            late = 0
            for trace, summary in windows:
                first = trace["libprof"]["window"]["first_step"]
                losses = dict(trace["libprof"]["losses"])
                if losses.pop("unrecorded_start_ns", 0):
                    # A loaded machine ran the agent thread late: reported as lost.
                    late += 1
                    self.assertRegex(summary, r"(?m)^ \[data-loss\]", f"window {first}")
                    self.assertRegex(summary, r"first [0-9.]+ ms not recorded", f"window {first}")
                    continue
                self.assertEqual({k: v for k, v in losses.items() if v}, {}, f"window {first}: losses")
                self.assertNotIn("never delivered", summary, f"window {first}")
                self.assertEqual(re.findall(r"^ \[data-loss\].*", summary, re.M), [], f"window {first}")
            self.assertLess(late, len(windows), "every window started late: nothing was checked")


# Thousands of launches a step into a 1 MiB budget: windows cannot hold
# their calls.
OVERFLOW = {"overflow": ["train_loop", "--steps", "12", "--tiny", "--kernels-per-step", "3000"]}


class WhatAWindowCannotHoldIsCountedAndReported(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        run_workloads(cls, OVERFLOW, **dict(SCHEDULE, PROF_STEP="time:20ms", PROF_BUFFER_MB=1))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_calls_absent_from_a_window_are_counted_as_lost(self):
        for (name, mode), (proc, windows, ops, calls) in sorted(self.runs.items()):
            with self.subTest(mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertGreaterEqual(len(windows), 1, proc.stderr)
                offset = clock_offset(windows, ops, calls)
                self.assertIsNotNone(offset, "no device record or call to align the clocks")
                absent_total = counted_total = 0
                by_key = collections.Counter()  # every loss count, for the failure's message
                for trace, summary in windows:
                    first = trace["libprof"]["window"]["first_step"]
                    held = window_calls(trace)
                    absent = [c for c in calls_in_span(trace, calls, offset) if c["correlation"] not in held]
                    losses = trace["libprof"]["losses"]
                    absent_total += len(absent)
                    # Calls lost as samples_truth_check counts them (dropped,
                    # late: written after the writer stopped waiting, or a
                    # call whose own CUPTI record never came) and records.
                    counted_total += sum(losses.get(k, 0) for k in (
                        "host_events_dropped", "host_events_late", "api_records_missing", "cupti_records_dropped",
                        "device_records_dropped", "device_records_missing"))
                    by_key.update({k: v for k, v in losses.items() if isinstance(v, int) and v})
                    if absent:
                        self.assertRegex(summary, r"(?m)^ \[data-loss\]", f"window {first}: loss not reported")
                self.assertGreater(absent_total, 0, "the budget held everything: this test proved nothing")
                # What the windows lack is counted. Over the run, not per
                # window: CUPTI's drop count is one process-wide number read
                # when a window is collected, so a drop near an edge may be
                # charged to the neighbouring window; and a dropped call
                # usually loses its device record too (counted twice).
                self.assertGreaterEqual(counted_total, absent_total,
                                        f"absent calls not counted; {len(windows)} windows, losses: {dict(by_key)}")


if __name__ == "__main__":
    harness.main()
