"""PROF_RANGE: windows from the ranges a program marks (cudaProfilerStart/Stop,
cuProfilerStart/Stop, NVTX push/pop, start/end and domain ranges), under
LD_PRELOAD and under CUDA_INJECTION64_PATH, against the simulated stack's
truth log.

iter_loop (test/workloads/README.md) marks iterations 5-7 of every 20 and
writes a truth line at the start of each iteration, before the region's
begin. Proves, for each kind and mode:
  - one window per range, in order, capped by PROF_REPEAT (default 1, 0 = all);
  - each window holds exactly the program's runtime calls made inside its
    range, by correlation (the start call's return opens it, the stop call's
    entry closes it, so neither edge call is in it), and exactly the kernels
    those calls launched;
  - with PROF_STEP=sync each step is one true iteration (3 per window), also
    with a nested range inside;
  - a range open at exit is written, marked partial, with everything up to
    the exit;
  - a bad PROF_RANGE gives one line and the usual schedule; a range that
    never comes gives the end-of-process line; output and exit status are
    the bare run's.
"""
import glob
import json
import os
import re
import unittest

import harness

ITER_LOOP = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
LAUNCHES = {"cudaLaunchKernel", "__cudaLaunchKernel", "cudaLaunchKernel_ptsz", "__cudaLaunchKernel_ptsz"}
EDGE_CALLS = {"cudaProfilerStart", "cudaProfilerStop"}


def read_truth(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.startswith("{")]


def main_thread_calls(truth, pid):
    """The program's outermost runtime calls on its main thread, in order:
    [(correlation, name, iteration index or None)]."""
    out, current = [], None
    for line in truth:
        if line.get("pid") != pid:
            continue
        if line["type"] == "iteration":
            current = line["index"]
        elif (line["type"] == "api" and line["domain"] == "runtime" and line.get("thread") == pid
              and line["correlation"] == line["outer_correlation"]):
            out.append((line["correlation"], line["name"], current))
    return out


def expected_calls(calls, iterations, edges_removed=True):
    """Correlations of the calls made in a region: its iterations' calls,
    less the start call that opened it (the first) and the stop that closed
    it (the last) when the edges are runtime calls."""
    inside = [(c, n) for c, n, i in calls if i in iterations]
    if edges_removed:
        starts = [k for k, (c, n) in enumerate(inside) if n == "cudaProfilerStart"]
        stops = [k for k, (c, n) in enumerate(inside) if n == "cudaProfilerStop"]
        drop = set()
        if starts:
            drop.add(starts[0])
        if stops:
            drop.add(stops[-1])
        inside = [x for k, x in enumerate(inside) if k not in drop]
    return {c for c, n in inside}, {c for c, n in inside if n in LAUNCHES}


def windows(out):
    """The traces written, ordered by first step."""
    paths = glob.glob(os.path.join(out, "*.pt.trace.json"))
    paths.sort(key=lambda p: int(re.search(r"\.(\d+)\.pt\.trace\.json$", p).group(1)))
    traces = []
    for p in paths:
        with open(p) as f:
            traces.append(json.load(f))
    return traces


def region(start, iters=(5, 6, 7)):
    return {start + i for i in iters}


class CaptureRanges(unittest.TestCase):
    def setUp(self):
        if not (os.path.exists(harness.LIBPROF_SO) and os.path.exists(ITER_LOOP)):
            self.skipTest("libprof.so or iter_loop not built")

    def run_modes(self, args, **prof):
        """Runs iter_loop in both modes; returns {mode: (proc, out, truth)} after
        checking the output and exit status are the bare run's."""
        cmd = [ITER_LOOP] + args
        bare = harness.run(cmd, harness.sim_env())
        self.assertEqual(bare.returncode, 0, bare.stderr)
        runs = harness.run_in_each_mode(cmd, harness.scratch_dir(self, "ranges-"), NVTX_INJECTION64_PATH=harness.LIBPROF_SO,
                                        **prof)
        result = {}
        for mode, (proc, out, truth_path) in runs.items():
            self.assertEqual(proc.returncode, 0, f"{mode}: {proc.stderr}")
            self.assertEqual(proc.stdout, bare.stdout, mode)
            result[mode] = (proc, out, read_truth(truth_path))
        return result

    def check_windows(self, mode, proc, out, truth, regions, edges_removed=True, steps_per_iteration=False,
                      partial_last=False):
        traces = windows(out)
        self.assertEqual(len(traces), len(regions), f"{mode}: {[t['libprof']['window'] for t in traces]}\n{proc.stderr}")
        pid = traces[0]["libprof"]["pid"] if traces else None
        calls = main_thread_calls(truth, pid)
        self.assertTrue(any(i is not None for _, _, i in calls), "the workload wrote no iteration lines")
        for k, (trace, iterations) in enumerate(zip(traces, regions)):
            meta = trace["libprof"]
            where = f"{mode} window {k + 1} (iterations {sorted(iterations)})"
            self.assertIn(f"range {k + 1}", meta.get("range", ""), where)
            self.assertEqual(meta["window"]["partial"], partial_last and k == len(regions) - 1, where)
            want_calls, want_launches = expected_calls(calls, iterations, edges_removed)
            if meta["window"]["partial"]:
                # The runtime's module teardown runs after libprof's exit handler wrote the window.
                want_calls -= {c for c, n, i in calls if n == "__cudaUnregisterFatBinary"}
            events = trace["traceEvents"]
            got_calls = {e["args"]["correlation"] for e in events
                         if e.get("cat") == "cuda_runtime" and e.get("tid") == pid and "correlation" in e.get("args", {})}
            self.assertEqual(sorted(got_calls - want_calls), [], f"{where}: calls from outside the range")
            self.assertEqual(sorted(want_calls - got_calls), [], f"{where}: calls of the range missing")
            kernels = [e["args"]["correlation"] for e in events if e.get("cat") == "kernel"]
            self.assertEqual(sorted(kernels), sorted(want_launches), f"{where}: kernels")
            if steps_per_iteration:
                of_call = {c: i for c, n, i in calls}
                steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                                and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
                self.assertEqual(len(steps), len(iterations), f"{where}: {[s['name'] for s in steps]}")
                runtime = [e for e in events if e.get("cat") == "cuda_runtime" and e.get("tid") == pid
                           and "correlation" in e.get("args", {})]
                seen = []
                for step in steps:
                    lo, hi = step["ts"], step["ts"] + step["dur"]
                    its = {of_call.get(c["args"]["correlation"]) for c in runtime if lo - 0.0005 <= c["ts"] < hi - 0.0005}
                    self.assertEqual(len(its), 1, f"{where}: {step['name']} holds calls of iterations {its}")
                    seen.append(its.pop())
                self.assertEqual(seen, sorted(iterations), where)

    def test_cuda_profiler_api_one_window_per_range_capped_by_prof_repeat(self):
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "70"], PROF_RANGE="cudaProfilerApi",
                              PROF_REPEAT=2, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            self.assertEqual(len([l for l in proc.stderr.splitlines() if "PROF_RANGE=cudaProfilerApi: each range" in l]), 1)
            self.check_windows(mode, proc, out, truth, [region(0), region(20)], steps_per_iteration=True)

    def test_cuda_profiler_api_records_one_range_by_default_and_all_with_repeat_0(self):
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "50"], PROF_RANGE="cudaProfilerApi")
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0)])
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "50"], PROF_RANGE="cudaProfilerApi", PROF_REPEAT=0)
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40)])

    def test_driver_cu_profiler_start_stop(self):
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "50", "--range-api", "driver"],
                              PROF_RANGE="cudaProfilerApi", PROF_REPEAT=0, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            # The edges are driver calls here: every runtime call of the iterations is inside.
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40)], edges_removed=False,
                               steps_per_iteration=True)

    def test_a_second_cuda_profiler_start_inside_a_range_changes_nothing(self):
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "50", "--nested"], PROF_RANGE="cudaProfilerApi",
                              PROF_REPEAT=0, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40)], steps_per_iteration=True)

    def test_a_cuda_profiler_range_open_at_exit_is_written_partial(self):
        runs = self.run_modes(["--mode", "profiler-api", "--iters", "50", "--leave-open"],
                              PROF_RANGE="cudaProfilerApi", PROF_REPEAT=0, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            # The last range runs from iteration 45 to the exit (the final synchronize included).
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40, range(5, 10))],
                               partial_last=True)

    def test_nvtx_push_pop_ranges_by_regex(self):
        runs = self.run_modes(["--mode", "nvtx", "--iters", "70"], PROF_RANGE="nvtx:^profile_region$", PROF_REPEAT=0,
                              PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40), region(60)],
                               edges_removed=False, steps_per_iteration=True)
            for trace in windows(out):
                self.assertIn("NVTX `profile_region`", trace["libprof"]["range"])

    def test_nvtx_start_end_ranges_with_a_nested_range_of_the_same_name(self):
        runs = self.run_modes(["--mode", "nvtx", "--iters", "50", "--nvtx-style", "start-end", "--nested"],
                              PROF_RANGE="nvtx:profile_region", PROF_REPEAT=0, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40)], edges_removed=False,
                               steps_per_iteration=True)

    def test_nvtx_domain_ranges_are_named_domain_at_name(self):
        runs = self.run_modes(["--mode", "nvtx", "--iters", "50", "--nvtx-style", "domain"],
                              PROF_RANGE="nvtx:^train@profile_region$", PROF_REPEAT=2, PROF_STEP="sync")
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20)], edges_removed=False,
                               steps_per_iteration=True)
            for trace in windows(out):
                names = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}
                self.assertIn("train@profile_region", names)
        # The bare name does not match a range in a domain: no window, and the end-of-process line says why.
        runs = self.run_modes(["--mode", "nvtx", "--iters", "30", "--nvtx-style", "domain"],
                              PROF_RANGE="nvtx:^profile_region$")
        for mode, (proc, out, truth) in runs.items():
            self.assertEqual(windows(out), [], mode)
            self.assertIn("no NVTX range matched PROF_RANGE=nvtx:^profile_region$", proc.stderr)

    def test_nvtx_range_open_at_exit_with_default_auto_steps(self):
        runs = self.run_modes(["--mode", "nvtx", "--iters", "50", "--leave-open"], PROF_RANGE="nvtx:profile_region",
                              PROF_REPEAT=0)
        for mode, (proc, out, truth) in runs.items():
            self.check_windows(mode, proc, out, truth, [region(0), region(20), region(40, range(5, 10))],
                               edges_removed=False, partial_last=True)

    def test_bad_prof_range_says_so_once_and_keeps_the_schedule(self):
        for bad in ("cudaProfilerAPIs", "nvtx:([", "nvtx:"):
            runs = self.run_modes(["--mode", "profiler-api", "--iters", "30"], PROF_RANGE=bad, PROF_STEP="sync",
                                  PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3)
            for mode, (proc, out, truth) in runs.items():
                lines = [l for l in proc.stderr.splitlines() if "PROF_RANGE=" in l]
                self.assertEqual(len(lines), 1, f"{mode} {bad}: {proc.stderr}")
                self.assertIn(f"PROF_RANGE='{bad}' is not valid", lines[0])
                self.assertIn("capture ranges off: windows follow the PROF_STEP schedule", lines[0])
                traces = windows(out)
                self.assertEqual(len(traces), 1, f"{mode} {bad}")
                self.assertEqual((traces[0]["libprof"]["window"]["first_step"],
                                  traces[0]["libprof"]["window"]["last_step"]), (3, 5))
                self.assertNotIn("range", traces[0]["libprof"])


if __name__ == "__main__":
    harness.main()
