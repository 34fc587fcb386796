"""`prof summary` and `prof validate` hold little per event of a large trace.

summary: the calls and GPU records compact (40 and 48 bytes,
exporters/common/compact_window.h) in chunks that never double. On libprof's own
trace of the benchmark's launch-bound window (bench_gen_trace: 22 launches,
a copy, a synchronize, a malloc and a free per step) it peaks at about 76
bytes per window event above a tiny trace's peak, records and the summary's
own work (its index, the sorted durations) together; holding the agent's 64-
and 128-byte records in doubling vectors took about 200. Bound: 120 bytes,
which keeps a 1 GB trace (2.5 M events) well under docs/performance.md's
256 MB target.

validate: a track whose slices arrive in order (libprof writes them so) is
checked as it streams, holding only the slices enclosing the latest one;
what remains is about 56 bytes per flow start and finish. About 54 bytes per
window event here; holding 24 bytes per slice took about 85. Bound: 70.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

GEN_TRACE = os.environ.get("GEN_TRACE", "")
PEAK_RSS = os.environ.get("PEAK_RSS", "")


def generate(path, steps):
    r = subprocess.run([GEN_TRACE, "libprof", str(steps), "22", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"bench_gen_trace exited {r.returncode}: {r.stderr[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["events"]


def peak_kb(command, path):
    """Peak RSS (KiB) of `prof COMMAND PATH`, under test/bench's peak_rss (a
    small C++ parent: a child forked from Python would carry the interpreter's
    RSS as its high-water mark)."""
    r = subprocess.run([PEAK_RSS, harness.PROF_TOOL, command, path], capture_output=True, text=True, timeout=300)
    usage = [json.loads(line) for line in r.stdout.splitlines() if line.startswith('{"peak_rss_kb"')]
    if r.returncode != 0 or not usage:
        raise AssertionError(f"prof {command} exited {r.returncode}: {r.stdout[-300:]} {r.stderr[-300:]}")
    return usage[-1]["peak_rss_kb"], r.stdout


@unittest.skipUnless(GEN_TRACE and PEAK_RSS, "needs test/bench's bench_gen_trace and bench_peak_rss (LIBPROF_BUILD_BENCH)")
class MemoryPerEvent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="prof-memory-")
        cls.small = os.path.join(cls.tmp, "small.pt.trace.json")
        cls.large = os.path.join(cls.tmp, "large.pt.trace.json")
        cls.small_events = generate(cls.small, 10)
        cls.large_events = generate(cls.large, 4000)  # 78 MB of JSON, 200,000 window events

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def per_event(self, command):
        base_kb, _ = peak_kb(command, self.small)
        peak, out = peak_kb(command, self.large)
        per_event = (peak - base_kb) * 1024 / (self.large_events - self.small_events)
        print(f"prof {command}: peak RSS {peak} KiB on {self.large_events} events, {base_kb} KiB on "
              f"{self.small_events}: {per_event:.1f} bytes per event")
        return per_event, out

    def test_summary_holds_a_large_trace_in_under_120_bytes_per_event(self):
        per_event, out = self.per_event("summary")
        self.assertIn("cuda_gpu_kern_sum", out)
        self.assertLessEqual(per_event, 120)

    def test_validate_holds_a_large_trace_in_under_70_bytes_per_event(self):
        per_event, out = self.per_event("validate")
        self.assertIn(": OK (", out)
        self.assertLessEqual(per_event, 70)


if __name__ == "__main__":
    unittest.main()
