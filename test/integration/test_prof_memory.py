"""`prof summary`'s memory grows with the window's events, not the JSON's
size, and by little per event: the calls and GPU records are held compact
(40 and 48 bytes, exporters/compact_window.h) in chunks that never double.
On libprof's own trace of the benchmark's launch-bound window (bench_gen_trace:
22 launches, a copy, a synchronize, a malloc and a free per step) it peaks at
about 76 bytes per window event above a tiny trace's peak, records and the
summary's own work (its index, the sorted durations) together; holding the
agent's 64- and 128-byte records in doubling vectors took about 200. The
bound, 120 bytes, is what keeps a 1 GB trace (2.5 M events) well under the
256 MB target of docs/performance.md."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

GEN_TRACE = os.environ.get("GEN_TRACE", "")
PEAK_RSS = os.environ.get("PEAK_RSS", "")
BYTES_PER_EVENT = 120


def generate(path, steps):
    r = subprocess.run([GEN_TRACE, "libprof", str(steps), "22", path], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"bench_gen_trace exited {r.returncode}: {r.stderr[-400:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["events"]


def summary_peak_kb(path):
    """Peak RSS (KiB) of `prof summary PATH`, under test/bench's peak_rss (a
    small C++ parent: a child forked from Python would carry the interpreter's
    RSS as its high-water mark)."""
    r = subprocess.run([PEAK_RSS, harness.PROF_TOOL, "summary", path], capture_output=True, text=True, timeout=300)
    usage = [json.loads(line) for line in r.stdout.splitlines() if line.startswith('{"peak_rss_kb"')]
    if r.returncode != 0 or not usage:
        raise AssertionError(f"prof summary exited {r.returncode}: {r.stderr[-400:]}")
    if "cuda_gpu_kern_sum" not in r.stdout:
        raise AssertionError("prof summary printed no kernel table")
    return usage[-1]["peak_rss_kb"]


@unittest.skipUnless(GEN_TRACE and PEAK_RSS, "needs test/bench's bench_gen_trace and bench_peak_rss (LIBPROF_BUILD_BENCH)")
class SummaryMemory(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="prof-memory-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_summary_holds_a_large_trace_in_under_120_bytes_per_event(self):
        small = os.path.join(self.tmp, "small.pt.trace.json")
        large = os.path.join(self.tmp, "large.pt.trace.json")
        small_events = generate(small, 10)
        large_events = generate(large, 4000)  # 78 MB of JSON, 200,000 window events
        base_kb = summary_peak_kb(small)
        peak_kb = summary_peak_kb(large)
        per_event = (peak_kb - base_kb) * 1024 / (large_events - small_events)
        print(f"prof summary: peak RSS {peak_kb} KiB on {large_events} events, {base_kb} KiB on {small_events}: "
              f"{per_event:.1f} bytes per event (bound {BYTES_PER_EVENT})")
        self.assertLessEqual(per_event, BYTES_PER_EVENT)


if __name__ == "__main__":
    unittest.main()
