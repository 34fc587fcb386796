"""Nothing lost silently on a busy machine: the suite's workloads run with
5 ms windows back to back (PROF_STEP=time:5ms, wait 0, warmup 0, active 1:
each window's collection overlaps the next window's recording) in both
injection modes beside two busy loops (both cores of a 2-core machine
taken), and every window is compared with the sim's truth log, per kind of
device record, by scripts/samples_truth_check.py (the check
scripts/samples-truth-check.sh runs on NVIDIA's cuda-samples; docs/testing.md,
"Device records against the truth, on a busy machine"):

- device records of the calls a window holds that it lacks (missing), and
  records it holds whose call it does not, or that the sim never made;
- calls the truth has well inside a window's span that the window lacks;
- calls of the schedule's steps that are in no window at all;

each must be covered by a loss the window counts (by kind, for device
records) and says in its summary's data-loss finding. A second class drops
every record in CUPTI (SIM_CUPTI_NULL_BUFFERS): each window must then count
exactly the records its calls made, kernels, copies and memsets apart. A
third removes a record from a written window and checks that the comparison
finds it, so the first class can fail.
"""
import collections
import copy
import glob
import os
import sys
import tempfile
import time
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import samples_truth_check as check  # noqa: E402

BACK_TO_BACK = check.schedule("time:5ms", 0, 0, 1)
BUSY_LOOPS = 2
# Copies of every flavour (blocking, pageable, zero-byte, allocations that
# synchronize), launches from several threads, the API families' 2D/3D
# copies, memsets and graphs: about 15 s in all beside two busy loops on 2
# cores (about 200 windows).
WORKLOADS = {
    "copies": ["train_loop", "--steps", "60", "--pageable", "--d2h-mid-step", "--alloc-in-loop", "--sync-memset",
               "--zero-bytes"],
    "threads": ["multithread", "--threads", "4", "--launches", "2000"],
    "families": ["api_families", "--iterations", "30"],
    "graphs": ["graph_loop", "--steps", "800", "--kernels", "8"],
}


def programs(workloads):
    out = []
    for name, (binary, *args) in workloads.items():
        path = os.path.join(harness.WORKLOAD_DIR, binary)
        harness.need(harness.LIBPROF_SO, path)
        out.append((name, [path, *args], harness.WORKLOAD_DIR))
    return out


def run(test_class, workloads, sched, busy, **extra):
    """Runs the workloads in both modes (extra: more variables for the runs);
    test_class.rows as run_checks gives them."""
    test_class.tmp = tempfile.TemporaryDirectory(prefix="busy-truth-")
    test_class.rows = check.run_checks(programs(workloads), harness.SIM_LIB_DIR, harness.LIBPROF_SO,
                                       test_class.tmp.name, dict(sched, **{k: str(v) for k, v in extra.items()}),
                                       runs=1, busy=busy, timeout=120, log=lambda line: print(line, file=sys.stderr))


class ShortWindowsBesideBusyLoopsLoseNothingSilently(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        began = time.monotonic()
        run(cls, WORKLOADS, BACK_TO_BACK, BUSY_LOOPS)
        cls.seconds = time.monotonic() - began

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_run_ends_as_it_would_and_writes_many_windows(self):
        for row in self.rows:
            with self.subTest(workload=row["program"], mode=row["mode"]):
                self.assertEqual(row["rc"], 0, row["stderr"][-2000:])
                # Short windows only test edges if there are many of them.
                self.assertGreaterEqual(len(row["windows"]), 5, row["stderr"][-2000:])

    def test_every_difference_from_the_truth_is_counted_by_the_window_that_has_it(self):
        checked = collections.Counter()
        for row in self.rows:
            with self.subTest(workload=row["program"], mode=row["mode"]):
                for w in row["windows"]:
                    checked.update(w["want"])
                    self.assertEqual(w["unreported"], {},
                                     f"window {w['first_step']}: want {dict(w['want'])} got {dict(w['got'])}, "
                                     f"absent calls {w['absent_calls']}, losses {w['losses']}")
                    self.assertFalse(w["line_missing"], f"window {w['first_step']}: losses {w['losses']} counted "
                                                        "but the summary has no data-loss finding")
                self.assertEqual(row["unwritten"], [], "calls of the schedule's steps in no window")
        # The check held something of each kind against the truth.
        for kind in check.KINDS:
            self.assertGreater(checked[kind], 0, f"no {kind} was checked")

    def test_the_run_is_bounded(self):
        self.assertLess(self.seconds, 90)


class EveryRecordCuptiDropsIsCountedByKind(unittest.TestCase):
    """CUPTI gets no buffer (SIM_CUPTI_NULL_BUFFERS): nothing is delivered,
    and each window counts what its calls made, kind by kind."""

    @classmethod
    def setUpClass(cls):
        run(cls, {"copies": ["train_loop", "--steps", "40", "--pageable", "--d2h-mid-step", "--sync-memset"]}, check.schedule("time:20ms", 0, 0, 1), 0,
            SIM_CUPTI_NULL_BUFFERS=1, PROF_FLUSH_TIMEOUT_MS=150)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_missing_records_are_counted_by_kind_and_said(self):
        counted = collections.Counter()
        for row in self.rows:
            with self.subTest(mode=row["mode"]):
                self.assertEqual(row["rc"], 0, row["stderr"][-2000:])
                # Several, so CUPTI's drop count (one process-wide number) is
                # charged window by window.
                self.assertGreaterEqual(len(row["windows"]), 2)
                for w in row["windows"]:
                    self.assertEqual(sum(w["got"].values()), 0)
                    self.assertEqual(w["unreported"], {}, f"window {w['first_step']}: {w['losses']}")
                    # Exactly the records its calls made, by kind.
                    self.assertEqual(dict(w["reported_by_kind"]) if w["reported_by_kind"] else {},
                                     {k: n for k, n in w["want"].items() if n}, f"window {w['first_step']}")
                    counted.update(w["reported_by_kind"])
                    words = {"kernel": "kernel", "memcpy": "cop", "memset": "memset"}
                    for kind, n in w["want"].items():
                        if n:
                            self.assertRegex(w["data_loss_line"], rf"{n} {words[kind]}",
                                             f"window {w['first_step']}: the finding names the {kind}s")
        for kind in check.KINDS:
            self.assertGreater(counted[kind], 0, f"no {kind} was counted lost: the test proved nothing for it")


class TheComparisonFindsARecordAWindowLacks(unittest.TestCase):
    """A window written by libprof, then one record taken out of it: the
    comparison must see an unreported discrepancy of that kind (the first
    class relies on it)."""

    def test_a_removed_record_is_an_unreported_discrepancy(self):
        tmp = harness.scratch_dir(self, "busy-truth-self-")
        rows = check.run_checks(programs({"copies": ["train_loop", "--steps", "6", "--d2h-mid-step"]}), harness.SIM_LIB_DIR,
                                harness.LIBPROF_SO, tmp, check.schedule("time:20ms", 0, 0, 1), runs=1, busy=0,
                                log=lambda line: None, keep_truth=True)
        row = rows[0]
        self.assertEqual(row["rc"], 0, row["stderr"])
        truth = check.Truth(row["truth_path"])
        windows = [check.read_window(p) for p in sorted(glob.glob(os.path.join(row["out_dir"], "*.pt.trace.json")))]
        offset = check.clock_offset(windows, truth)
        for trace, summary in windows:
            if not any(e.get("cat") == "gpu_memcpy" for e in trace["traceEvents"]):
                continue
            self.assertEqual(check.check_window(trace, summary, truth, offset)["unreported"], {})
            lacking = copy.deepcopy(trace)
            lacking["traceEvents"].remove(next(e for e in lacking["traceEvents"] if e.get("cat") == "gpu_memcpy"))
            found = check.check_window(lacking, summary, truth, offset)
            self.assertEqual(found["unreported"].get("memcpy", {}).get("missing"), 1, found)
            return
        self.fail("no window held a copy")


if __name__ == "__main__":
    harness.main()
