"""Memory stays bounded by PROF_BUFFER_MB under NVTX name and thread churn
(name_churn: every range name new, as PyTorch's emit_nvtx makes them, from a
fresh set of threads each step, with start/end ranges and newly registered
domain strings), and the names a window recorded are still the right ones
after the name table has been emptied and refilled window after window."""
import json
import os
import re
import unittest

import harness
from test_agent_support import need, run_agent, step_spans, validate, workload

NVTX_STEPS = {"PROF_STEP": "nvtx:^step$", "PROF_WAIT": "5", "PROF_WARMUP": "1", "PROF_ACTIVE": "3",
              "PROF_REPEAT": "3"}
DROPPED = "[name dropped: PROF_BUFFER_MB]"
# Ranges pushed in the workload's domain are named `name_churn@<name>` (README, "Capture ranges").
CHURN_NAME = re.compile(r"(?:name_churn@)?s(\d+)_t(\d+)_(\d+)(_se|_reg)?$")
# Peak RSS libprof may add with PROF_BUFFER_MB=4: the budget, the thread
# slots, libprof's own code and the sim's CUPTI. Before NVTX names were
# bounded the 2 million names of the churn below took about 300 MB.
BOUND_KB = 48 * 1024


def churn(steps, threads, names):
    return [workload("name_churn"), "--steps", str(steps), "--threads", str(threads), "--names", str(names)]


def rss(stdout):
    values = dict(re.findall(r"^(\w+_peak_rss_kb|peak_rss_kb)=(\d+)$", stdout, re.M))
    return int(values["baseline_peak_rss_kb"]), int(values["peak_rss_kb"])


class NameChurn(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("name_churn"))

    def run_churn(self, steps, threads, names, buffer_mb):
        return run_agent(churn(steps, threads, names), NVTX_INJECTION64_PATH=harness.LIBPROF_SO,
                         PROF_BUFFER_MB=buffer_mb, **NVTX_STEPS)

    def window_names(self, path, trace):
        """(profiler step -> names of the churn's ranges in it), checking each
        range lies inside the step its name says it was pushed in."""
        ok, out = validate(path)
        self.assertTrue(ok, out)
        spans = {int(s["name"].split("#")[1]): (s["ts"], s["ts"] + s["dur"]) for s in step_spans(trace)}
        by_step = {}
        for e in trace["traceEvents"]:
            if e.get("cat") != "user_annotation" or e["name"].startswith("ProfilerStep#") or e["name"] in (
                    "step", DROPPED):
                continue
            m = CHURN_NAME.match(e["name"])
            self.assertIsNotNone(m, e["name"])
            # The first `step` push ends profiler step 0: the churn's step k is profiler step k + 1.
            step = int(m.group(1)) + 1
            self.assertIn(step, spans, f"{e['name']} in window {sorted(spans)}")
            begin, end = spans[step]
            self.assertTrue(begin <= e["ts"] <= end, f"{e['name']} at {e['ts']} outside step {step} {spans[step]}")
            by_step.setdefault(step, set()).add(e["name"])
        return by_step

    @unittest.skipIf(harness.SANITIZED, "ASan's allocator and shadow memory make RSS no measure of libprof's")
    def test_two_million_new_names_from_2000_threads_stay_within_the_budget(self):
        run = self.run_churn(steps=250, threads=8, names=1000, buffer_mb=4)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr[-2000:])
        baseline, peak = rss(run.proc.stdout)
        self.assertLessEqual(peak - baseline, BOUND_KB, f"peak RSS grew {peak - baseline} KB under libprof")
        self.assertEqual([t["libprof"]["window"]["first_step"] for _, t in run.traces], [6, 15, 24])
        for i, (path, trace) in enumerate(run.traces):
            by_step = self.window_names(path, trace)
            # The first window has the whole name budget; a later one shares it
            # with the window before while the writer still seals that one.
            if i == 0:
                self.assertTrue(by_step, "the first window's names fit in part")
            losses = trace["libprof"]["losses"]
            shown_dropped = sum(1 for e in trace["traceEvents"] if e.get("name") == DROPPED)
            self.assertGreater(losses["nvtx_names_dropped"], 0)
            self.assertGreater(losses["nvtx_ranges_dropped"], 0)
            self.assertLessEqual(shown_dropped, losses["nvtx_names_dropped"])
        self.assertTrue(any("NVTX names past the name budget" in l for l in run.log_lines()), run.log_lines())

    def test_each_window_holds_exactly_its_own_names_after_the_table_was_recycled(self):
        run = self.run_churn(steps=30, threads=4, names=100, buffer_mb=64)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr[-2000:])
        self.assertEqual(len(run.traces), 3)
        for path, trace in run.traces:
            window = trace["libprof"]["window"]
            self.assertEqual(trace["libprof"]["losses"]["nvtx_names_dropped"], 0)
            by_step = self.window_names(path, trace)
            steps = range(window["first_step"], window["last_step"] + 1)
            for step in steps:
                k = step - 1
                expected = {f"s{k}_t{t}_{i}" for t in range(4) for i in range(100)}
                expected |= {f"s{k}_t{t}_{i}_se" for t in range(4) for i in range(0, 100, 8)}
                expected |= {f"name_churn@s{k}_t{t}_{i}_reg" for t in range(4) for i in range(0, 100, 16)}
                self.assertEqual(by_step.get(step, set()), expected, f"step {step}")


if __name__ == "__main__":
    harness.main()
