"""One event model whatever path a CUDA call takes to libprof. The same
programs run on the simulated stack under LD_PRELOAD with the wrappers on
the call path, under LD_PRELOAD with the program calling libcudart through
its own dlopen handle (Python ctypes, as JAX's and numba's stub loaders do),
and under CUDA_INJECTION64_PATH; a driver-API launcher (cuLaunchKernel and
cuStreamSynchronize per step) runs under both loaders. Calls no wrapper saw
are recorded from CUPTI's callbacks as the host events a wrapper writes.

Proves, per program: the windows are the same (count and steps); the
summaries agree on the findings, the API and kernel tables' names and
counts, the step table's counts, and the Python call-site table (present in
each path for the Python loop); every kernel's launching call is in the
trace with its flow; a call is never shown twice (each correlation id is
one host event or one API record). Path-specific, and so not compared:
times, pids, the findings judged on timing (TIMED_FINDINGS), the memory
table (allocations are tracked from the process's
start only by the wrappers), and the "via CUPTI callbacks" argument that
marks the calls CUPTI's callbacks recorded (checked to be on exactly
those). One difference is documented rather than hidden: under LD_PRELOAD
a program that reaches CUDA only through its own handle is counted from
the agent's first look after CUDA loaded (within a second), so its windows
begin at a later step; that run is compared by content, not step numbers.
"""
import collections
import glob
import json
import os
import re
import sys
import unittest

import harness

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
DRIVER_API = os.path.join(harness.WORKLOAD_DIR, "driver_api")
CUBIN = os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.cubin")
FATBIN = os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.fatbin")
HANDLE_LOOP = os.path.join(harness.WORKLOAD_DIR, "cudart_handle_loop.py")
ITER_LOOP = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
# PROF_STEP=sync: steps end at each synchronize, whichever path saw it.
SCHEDULE = dict(PROF_STEP="sync", PROF_SKIP_FIRST="0", PROF_WAIT="4", PROF_WARMUP="2", PROF_ACTIVE="4",
                PROF_REPEAT="2")


def table(text, title):
    """Rows (lists of cells) of the summary table under `== <title> ==`."""
    lines = text.split("== " + title + " ==\n", 1)[1].split("\n")
    rows = []
    for line in lines[2:]:
        if not line.strip() or line.startswith("=="):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


# Findings whose evidence is a duration or a share of one (GPU busy, gaps,
# latency), or what one run lost (drops depend on its timing): they answer
# the run, which differs between any two runs on a loaded machine, so they
# are not compared across paths.
TIMED_FINDINGS = {"compute-bound", "idle-gaps", "launch-latency", "overhead-bound", "data-loss"}


def comparable(summary):
    """What every path must agree on in one summary."""
    findings = re.findall(r"^ \[([a-z0-9-]+)\]", summary, re.M)
    out = {"findings": sorted(f for f in findings if f not in TIMED_FINDINGS),
           # The step source, less when auto decided (its thread looks now and then).
           "step line": [re.sub(r"; found after [0-9]+ iterations, [0-9.]+ s$|, [0-9.]+ s$", "", l)
                         for l in re.findall(r"^step = .*$", summary, re.M)]}
    out["kernels"] = sorted((r[-1], r[2]) for r in table(summary, "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)"))
    out["api"] = sorted((r[-1], r[2]) for r in table(summary, "CUDA API Summary (cuda_api_sum)"))
    # Step, then Kernels, Launches, Syncs, Copies, Allocs/frees (not wall or busy).
    out["steps"] = [tuple(r[3:8]) for r in table(summary, "Steps")]
    out["step numbers"] = [r[0] for r in table(summary, "Steps")]
    if "GPU time by Python call site" in summary:
        title = "GPU time by Python call site (innermost frame of your code; PROF_PYTHON_USER)"
        # Kernels, Launches, Syncs, Copies, Allocs/frees, Calls, Call site.
        out["call sites"] = sorted(tuple(r[2:]) for r in table(summary, title))
    return out


class Run:
    def __init__(self, test, name, cmd, loader, **env):
        work = harness.scratch_dir(test, "paths-")
        self.out = os.path.join(work, "out")
        run_env = harness.sim_env(PROF_OUTPUT_DIR=self.out, **dict(SCHEDULE, **env))
        run_env[loader] = harness.LIBPROF_SO
        self.name = name
        self.proc = harness.run(cmd, run_env, timeout=300)
        self.traces = sorted(glob.glob(os.path.join(self.out, "*.pt.trace.json")))
        self.summaries = sorted(glob.glob(os.path.join(self.out, "*.summary.txt")))

    def summary_texts(self):
        texts = []
        for path in self.summaries:
            with open(path) as f:
                texts.append(f.read())
        return texts

    def trace_events(self):
        for path in self.traces:
            with open(path) as f:
                yield json.load(f)["traceEvents"]


class SamePathsTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(harness.LIBPROF_SO):
            self.skipTest("libprof.so not built")

    def run_paths(self, paths, late_start=()):
        """Runs each (name, cmd, loader, env) and compares every run's
        windows with the first's; runs named in late_start by content only."""
        runs = [Run(self, name, cmd, loader, **env) for name, cmd, loader, env in paths]
        for r in runs:
            self.assertEqual(r.proc.returncode, 0, f"{r.name}: {r.proc.stdout}{r.proc.stderr}")
        first = runs[0]
        self.assertEqual(len(first.summaries), 2, f"{first.name}: {first.proc.stderr}")
        for r in runs[1:]:
            self.assertEqual(len(r.summaries), len(first.summaries), f"{r.name}: {r.proc.stderr}")
            for a, b in zip(first.summary_texts(), r.summary_texts()):
                ca, cb = comparable(a), comparable(b)
                for key in ca:
                    if r.name in late_start and key == "step numbers":
                        continue
                    self.assertEqual(ca[key], cb.get(key), f"{key}: {first.name} vs {r.name}\n{a}\n{b}")
        for r in runs:
            self.check_trace(r)
        return runs

    def check_trace(self, run):
        """Each kernel's launching call is a host slice with its flow, and no
        correlation id is shown twice."""
        for events in run.trace_events():
            calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
            shown = collections.Counter(e["args"]["correlation"] for e in calls if e["args"].get("correlation"))
            twice = [c for c, n in shown.items() if n > 1]
            self.assertEqual(twice, [], f"{run.name}: correlations shown twice")
            starts = {e["id"] for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
            kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
            self.assertTrue(kernels, run.name)
            for k in kernels:
                c = k["args"]["correlation"]
                self.assertIn(c, shown, f"{run.name}: kernel {k['name']} has no launching call")
                self.assertIn(c, starts, f"{run.name}: kernel {k['name']} has no flow")
            launches = [e for e in calls if e["args"].get("correlation") in {k["args"]["correlation"] for k in kernels}]
            self.assertTrue(all("source" not in e["args"] for e in launches),
                            f"{run.name}: a launch shown only as CUPTI's API record")

    def test_train_loop_under_both_loaders(self):
        cmd = [TRAIN_LOOP, "--steps", "24", "--pageable", "--d2h-mid-step"]
        if not os.path.exists(TRAIN_LOOP):
            self.skipTest("train_loop not built")
        runs = self.run_paths([("LD_PRELOAD", cmd, "LD_PRELOAD", {}),
                               ("injection", cmd, "CUDA_INJECTION64_PATH", {})])
        findings = comparable(runs[0].summary_texts()[0])["findings"]
        self.assertIn("d2h-copy-in-step", findings)
        self.assertIn("pageable-copy", findings)
        self.assert_via_cupti(runs[0], False)
        self.assert_via_cupti(runs[1], True)

    def test_auto_finds_and_names_the_same_loop_under_both_loaders(self):
        """PROF_STEP=auto sees each call with its id, a copy's kind and a
        launch's kernel from CUPTI's callbacks as from the wrappers."""
        if not os.path.exists(ITER_LOOP):
            self.skipTest("iter_loop not built")
        auto = dict(PROF_STEP="auto", PROF_WAIT="2", PROF_WARMUP="1", PROF_ACTIVE="3", PROF_REPEAT="2")
        for mode in ("simple", "accum4"):
            cmd = [ITER_LOOP, "--iters", "120", "--mode", mode]
            runs = self.run_paths([("LD_PRELOAD", cmd, "LD_PRELOAD", auto),
                                   ("injection", cmd, "CUDA_INJECTION64_PATH", auto)])
            lines = [comparable(r.summary_texts()[0])["step line"] for r in runs]
            self.assertTrue(lines[0] and lines[0][0].startswith("step = auto: `"), lines)
            self.assertNotIn("__cudaLaunchKernel", lines[1][0])

    def test_driver_api_launcher_under_both_loaders(self):
        if not os.path.exists(DRIVER_API):
            self.skipTest("driver_api not built")
        cmd = [DRIVER_API, "--cubin", CUBIN, "--fatbin", FATBIN, "--steps", "24"]
        runs = self.run_paths([("LD_PRELOAD", cmd, "LD_PRELOAD", {}),
                               ("injection", cmd, "CUDA_INJECTION64_PATH", {})])
        for r in runs:
            summary = r.summary_texts()[0]
            steps = table(summary, "Steps")
            # Two cuLaunchKernel and one cuStreamSynchronize per step.
            self.assertTrue(steps and all(row[4] == "2" and row[5] == "1" for row in steps), f"{r.name}\n{summary}")
            api = dict((row[-1], row[2]) for row in table(summary, "CUDA API Summary (cuda_api_sum)"))
            self.assertEqual(api.get("cuLaunchKernel"), str(2 * len(steps)), r.name)
            for events in r.trace_events():
                launch = [e for e in events if e.get("name") == "cuLaunchKernel" and e.get("ph") == "X"]
                self.assertTrue(launch and all(e["cat"] == "cuda_driver" for e in launch), r.name)

    def test_python_ctypes_loop_through_a_handle_and_the_global_scope(self):
        if not os.path.exists(HANDLE_LOOP):
            self.skipTest("cudart_handle_loop.py not built")
        # Long enough (about 2 s) for the agent's first look under
        # LD_PRELOAD with the handle (see the module's docstring).
        loop = [sys.executable, HANDLE_LOOP, "--iters", "150", "--host-ms", "12"]
        runs = self.run_paths([
            ("LD_PRELOAD, global scope (wrappers)", loop + ["--via", "global"], "LD_PRELOAD", {}),
            ("LD_PRELOAD, dlopen handle", loop + ["--via", "handle"], "LD_PRELOAD", {}),
            ("injection, dlopen handle", loop + ["--via", "handle"], "CUDA_INJECTION64_PATH", {}),
            ("injection, global scope", loop + ["--via", "global"], "CUDA_INJECTION64_PATH", {}),
        ], late_start=("LD_PRELOAD, dlopen handle",))
        for r in runs:
            summary = r.summary_texts()[0]
            self.assertIn("GPU time by Python call site", summary, r.name)
            sites = comparable(summary)["call sites"]
            self.assertTrue(any("train_step" in row[-1] for row in sites), f"{r.name}\n{summary}")
            findings = comparable(summary)["findings"]
            self.assertIn("d2h-copy-in-step", findings, r.name)
            self.assertIn("allocator-churn", findings, r.name)
        self.assert_via_cupti(runs[0], False, runtime_only=True)
        for r in runs[1:]:
            self.assert_via_cupti(r, True)

    def assert_via_cupti(self, run, expected, runtime_only=False):
        """The path-specific argument: on every recorded call CUPTI's
        callbacks recorded, on none a wrapper did (runtime_only: only the
        runtime's calls are wrapped there; driver launches come from CUPTI)."""
        for events in run.trace_events():
            calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
                     and "source" not in e["args"]]
            if runtime_only:
                calls = [e for e in calls if e["cat"] == "cuda_runtime"]
            self.assertTrue(calls, run.name)
            via = {bool(e["args"].get("via CUPTI callbacks")) for e in calls}
            self.assertEqual(via, {expected}, run.name)


if __name__ == "__main__":
    harness.main()
