"""One event model whatever path a CUDA call takes to libprof. The same
programs run on the simulated stack in each way a program reaches CUDA:

- LD_PRELOAD with the wrappers on the call path (the program calls
  libcudart through the global scope);
- LD_PRELOAD with a static cudart (`<program>_static`: the sim's runtime
  linked in, as nvcc's default `-cudart static` links NVIDIA's);
- LD_PRELOAD with the program calling libcudart through its own dlopen
  handle (Python ctypes, as JAX's and numba's stub loaders do);
- CUDA_INJECTION64_PATH (shared and static cudart, handle and global);

and a driver-API launcher (cuModuleLoadData, cuLaunchKernel and
cuStreamSynchronize per step) under both loaders. Calls no wrapper saw are
recorded from CUPTI's callbacks as the host events a wrapper writes.

Programs: train_loop, graph_loop, iter_loop (auto) and api_families in
four ways each, the driver-API launcher, and the Python ctypes loop.

Proves, per program: the windows are the same (count and step numbers:
a step source counts from the program's first CUDA call on, whichever
path); per window the summaries agree on the findings, the API and kernel
tables' names and counts, the step table's counts, the step line and the
Python call-site table (present in each path for the Python loop), and the
traces agree on every host call's name, category and arguments (bytes,
copy kind, device), every GPU operation's name and size, the flows and the
Python frames; every kernel's launching call is in the trace with its
flow; a call is never shown twice (each correlation id is one host event
or one API record). Path-specific, and so not compared: times, pids and
thread ids, the findings judged on timing (TIMED_FINDINGS), how many
iterations `auto` watched before it decided (its thread looks now and
then), the memory table and `[memory]` samples (allocations are tracked
from the process's start only by the wrappers; CUPTI's callbacks track
them inside windows), and the "via CUPTI callbacks" argument that marks
the calls CUPTI's callbacks recorded (checked to be on exactly those).
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
GRAPH_LOOP = os.path.join(harness.WORKLOAD_DIR, "graph_loop")
ITER_LOOP = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
DRIVER_API = os.path.join(harness.WORKLOAD_DIR, "driver_api")
CUBIN = os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.cubin")
FATBIN = os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.fatbin")
HANDLE_LOOP = os.path.join(harness.WORKLOAD_DIR, "cudart_handle_loop.py")
# PROF_STEP=sync: steps end at each synchronize, whichever path saw it.
SCHEDULE = dict(PROF_STEP="sync", PROF_SKIP_FIRST="0", PROF_WAIT="4", PROF_WARMUP="2", PROF_ACTIVE="4",
                PROF_REPEAT="2")


table = harness.summary_table


# Findings whose evidence is a duration or a share of one (GPU busy, gaps,
# latency), or what one run lost (drops depend on its timing): they answer
# the run, which differs between any two runs on a loaded machine, so they
# are not compared across paths.
TIMED_FINDINGS = {"compute-bound", "idle-gaps", "launch-latency", "overhead-bound", "data-loss"}


def comparable(summary):
    """What every path must agree on in one summary."""
    findings = re.findall(r"^ \[([a-z0-9-]+)\]", summary, re.M)
    out = {"findings": sorted(f for f in findings if f not in TIMED_FINDINGS),
           # The step source, less when auto decided (its thread looks now and
           # then): how many iterations it took, and at which iteration the
           # loop was found when that was after the first window's warm-up.
           "step line": [re.sub(r"; found after [0-9]+ iterations, [0-9.]+ s(?=;|$)|, [0-9.]+ s$", "",
                                re.sub(r" \(iteration [0-9]+\)(?=: steps counted from the loop's discovery)", "", l))
                         for l in re.findall(r"^step = .*$", summary, re.M)]}
    out["kernels"] = sorted((r[-1], r[2]) for r in table(summary, "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)"))
    out["api"] = sorted((r[-1], r[2]) for r in table(summary, "CUDA API Summary (cuda_api_sum)"))
    out["memops"] = sorted((r[-1], r[1]) for r in table(summary, "GPU MemOps Summary by Size (cuda_gpu_mem_size_sum)")) \
        if "cuda_gpu_mem_size_sum" in summary else []
    # Step, then Kernels, Launches, Syncs, Copies, Allocs/frees (not wall or busy).
    out["steps"] = [tuple(r[3:8]) for r in table(summary, "Steps")]
    out["step numbers"] = [r[0] for r in table(summary, "Steps")]
    if "GPU time by Python call site" in summary:
        title = "GPU time by Python call site (innermost frame of your code; PROF_PYTHON_USER)"
        # Kernels, Launches, Syncs, Copies, Allocs/frees, Calls, Call site.
        out["call sites"] = sorted(tuple(r[2:]) for r in table(summary, title))
    return out


# Host-call arguments that name the run (correlation ids, pointers' values)
# or the path (the "via CUPTI callbacks" mark), not the call.
RUN_ARGS = {"correlation", "via CUPTI callbacks", "Python id", "Python parent id", "External id"}


def trace_counts(events):
    """A window's trace less its times and ids: how many of each host call
    (category, name, arguments), GPU operation (category, name, bytes),
    flow and Python frame."""
    out = collections.Counter()
    for e in events:
        ph, cat = e.get("ph"), e.get("cat")
        if ph == "X" and cat in ("cuda_runtime", "cuda_driver"):
            args = tuple(sorted((k, json.dumps(v)) for k, v in e["args"].items() if k not in RUN_ARGS))
            out[(cat, e["name"], args)] += 1
        elif ph == "X" and cat in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"):
            out[(cat, e["name"], e["args"].get("bytes"))] += 1
        elif ph == "X" and cat == "python_function":
            out[(cat, e["name"])] += 1
        elif ph in ("s", "f") and cat == "ac2g":
            out[("flow", ph)] += 1
    return out


class Run:
    def __init__(self, test, name, cmd, loader, **env):
        work = harness.scratch_dir(test, "paths-")
        self.out = os.path.join(work, "out")
        # DEFAULT_SETTINGS: no PROF_* variable but the output folder.
        schedule = {} if env.pop("DEFAULT_SETTINGS", False) else SCHEDULE
        run_env = harness.sim_env(PROF_OUTPUT_DIR=self.out, **dict(schedule, **env))
        run_env[loader] = harness.LIBPROF_SO
        self.name = name
        self.proc = harness.run(cmd, run_env, timeout=300)
        self.traces = sorted(glob.glob(os.path.join(self.out, "*.pt.trace.json")), key=self.step_of)
        self.summaries = sorted(glob.glob(os.path.join(self.out, "*.summary.txt")), key=self.step_of)

    @staticmethod
    def step_of(path):
        """A window's first step, from its file name (<stem>.<step>.<suffix>)."""
        return int(re.search(r"\.([0-9]+)\.(pt\.trace\.json|summary\.txt)$", path).group(1))

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


def static_of(program):
    return program + "_static"


def native_paths(cmd, env=None):
    """The four ways a native program reaches CUDA: its shared cudart under
    each loader (wrappers on the path under LD_PRELOAD), and its static
    cudart under each (no wrapper on the path)."""
    env = env or {}
    static_cmd = [static_of(cmd[0])] + cmd[1:]
    return [("LD_PRELOAD, wrappers", cmd, "LD_PRELOAD", env),
            ("LD_PRELOAD, static cudart", static_cmd, "LD_PRELOAD", env),
            ("injection", cmd, "CUDA_INJECTION64_PATH", env),
            ("injection, static cudart", static_cmd, "CUDA_INJECTION64_PATH", env)]


class SamePathsTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(harness.LIBPROF_SO):
            self.skipTest("libprof.so not built")

    def need(self, *paths):
        for path in paths:
            if not os.path.exists(path):
                self.skipTest(f"{os.path.basename(path)} not built")

    def run_paths(self, paths, windows=2):
        """Runs each (name, cmd, loader, env) and compares every run's
        windows with the first's."""
        runs = [Run(self, name, cmd, loader, **env) for name, cmd, loader, env in paths]
        for r in runs:
            self.assertEqual(r.proc.returncode, 0, f"{r.name}: {r.proc.stdout}{r.proc.stderr}")
        first = runs[0]
        self.assertEqual(len(first.summaries), windows, f"{first.name}: {first.proc.stderr}")
        first_traces = [trace_counts(events) for events in first.trace_events()]
        for r in runs[1:]:
            self.assertEqual([os.path.basename(p).split(".", 1)[1] for p in r.summaries],
                             [os.path.basename(p).split(".", 1)[1] for p in first.summaries],
                             f"windows: {first.name} vs {r.name}\n{r.proc.stderr}")
            for a, b in zip(first.summary_texts(), r.summary_texts()):
                ca, cb = comparable(a), comparable(b)
                self.assertEqual(sorted(ca), sorted(cb), f"sections: {first.name} vs {r.name}\n{a}\n{b}")
                for key in ca:
                    self.assertEqual(ca[key], cb[key], f"{key}: {first.name} vs {r.name}\n{a}\n{b}")
            for window, (a, b) in enumerate(zip(first_traces, (trace_counts(e) for e in r.trace_events()))):
                self.assertEqual(a, b, f"trace of window {window}: {first.name} vs {r.name} "
                                       f"(only in the first: {a - b}; only in the second: {b - a})")
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

    def test_train_loop_in_four_ways(self):
        self.need(TRAIN_LOOP, static_of(TRAIN_LOOP))
        cmd = [TRAIN_LOOP, "--steps", "24", "--pageable", "--d2h-mid-step", "--alloc-in-loop"]
        runs = self.run_paths(native_paths(cmd))
        findings = comparable(runs[0].summary_texts()[0])["findings"]
        for finding in ("d2h-copy-in-step", "pageable-copy", "allocator-churn"):
            self.assertIn(finding, findings)
        self.assert_via_cupti(runs[0], False)
        for r in runs[1:]:
            self.assert_via_cupti(r, True)

    def test_graph_loop_in_four_ways(self):
        self.need(GRAPH_LOOP, static_of(GRAPH_LOOP))
        runs = self.run_paths(native_paths([GRAPH_LOOP, "--steps", "24"]))
        for events in runs[0].trace_events():
            self.assertIn("cudaGraphLaunch", {e.get("name") for e in events if e.get("cat") == "cuda_runtime"})

    def test_api_families_in_four_ways(self):
        """Every family's calls (2D/3D and symbol copies, host functions,
        graphs, managed memory, pools, arrays, ...), steps ended by their
        synchronizes."""
        api_families = os.path.join(harness.WORKLOAD_DIR, "api_families")
        self.need(api_families, static_of(api_families))
        runs = self.run_paths(native_paths([api_families, "--iterations", "30"]))
        for r in runs:
            self.assertIn("failures=0", r.proc.stdout, r.name)

    def test_auto_finds_and_names_the_same_loop_in_four_ways(self):
        """PROF_STEP=auto sees each call with its id, a copy's kind and a
        launch's kernel from CUPTI's callbacks as from the wrappers."""
        self.need(ITER_LOOP, static_of(ITER_LOOP))
        auto = dict(PROF_STEP="auto", PROF_WAIT="2", PROF_WARMUP="1", PROF_ACTIVE="3", PROF_REPEAT="2")
        for mode in ("simple", "accum4"):
            runs = self.run_paths(native_paths([ITER_LOOP, "--iters", "120", "--mode", mode], auto))
            lines = [comparable(r.summary_texts()[0])["step line"] for r in runs]
            self.assertTrue(lines[0] and lines[0][0].startswith("step = auto: `"), lines)
            self.assertNotIn("__cudaLaunchKernel", lines[0][0])

    def test_driver_api_launcher_under_both_loaders(self):
        """cuLaunchKernel from a driver-API program is a host event in
        cuda_driver, with its flow, as Kineto shows it; cuStreamSynchronize
        ends each step."""
        self.need(DRIVER_API)
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
            self.assertEqual(api.get("cuStreamSynchronize"), str(len(steps)), r.name)
            for events in r.trace_events():
                launch = [e for e in events if e.get("name") == "cuLaunchKernel" and e.get("ph") == "X"]
                self.assertTrue(launch and all(e["cat"] == "cuda_driver" for e in launch), r.name)

    def test_python_ctypes_loop_through_a_handle_and_the_global_scope(self):
        """The Python call-site table in every path, the loop's findings, and
        each cuLaunchKernel (through libcuda's handle in every path) with
        the Python frame that made it."""
        self.need(HANDLE_LOOP)
        loop = [sys.executable, HANDLE_LOOP, "--iters", "60"]
        runs = self.run_paths([
            ("LD_PRELOAD, global scope (wrappers)", loop + ["--via", "global"], "LD_PRELOAD", {}),
            ("LD_PRELOAD, dlopen handle", loop + ["--via", "handle"], "LD_PRELOAD", {}),
            ("injection, dlopen handle", loop + ["--via", "handle"], "CUDA_INJECTION64_PATH", {}),
            ("injection, global scope", loop + ["--via", "global"], "CUDA_INJECTION64_PATH", {}),
        ])
        for r in runs:
            summary = r.summary_texts()[0]
            self.assertIn("GPU time by Python call site", summary, r.name)
            sites = comparable(summary)["call sites"]
            self.assertTrue(any("train_step" in row[-1] for row in sites), f"{r.name}\n{summary}")
            # Kernels, Launches of the frame that calls cuLaunchKernel: two per step.
            launch_site = [row for row in sites if "in main.<locals>.launch" in row[-1]]
            self.assertEqual([row[1] for row in launch_site], [str(2 * len(table(summary, "Steps")))],
                             f"{r.name}\n{summary}")
            findings = comparable(summary)["findings"]
            # (PROF_STEP=sync: the synchronize ends the step, it is not in it.)
            for finding in ("d2h-copy-in-step", "allocator-churn", "pageable-copy"):
                self.assertIn(finding, findings, r.name)
        self.assert_via_cupti(runs[0], False, runtime_only=True)
        for r in runs[1:]:
            self.assert_via_cupti(r, True)

    def test_python_ctypes_loop_with_default_settings(self):
        """No PROF_* set: the loop through a handle gets the window, findings
        and call sites the same loop gets through the wrappers."""
        self.need(HANDLE_LOOP)
        # auto decides on its own thread: 3 ms of host work per iteration
        # keeps a loaded machine's late decision well before the window
        # (steps are counted from the decision, on every path alike).
        loop = [sys.executable, HANDLE_LOOP, "--iters", "200", "--host-ms", "3"]
        default = {"DEFAULT_SETTINGS": True}
        runs = self.run_paths([
            ("LD_PRELOAD, global scope (wrappers)", loop + ["--via", "global"], "LD_PRELOAD", default),
            ("LD_PRELOAD, dlopen handle", loop + ["--via", "handle"], "LD_PRELOAD", default),
            ("injection, dlopen handle", loop + ["--via", "handle"], "CUDA_INJECTION64_PATH", default),
        ], windows=1)
        findings = comparable(runs[0].summary_texts()[0])["findings"]
        for finding in ("sync-in-step", "d2h-copy-in-step"):
            self.assertIn(finding, findings)


class InheritedOfferTest(unittest.TestCase):
    def test_a_child_started_without_libprof_is_not_profiled_through_the_inherited_injection_variable(self):
        """Under LD_PRELOAD libprof sets CUDA_INJECTION64_PATH to itself; a
        child started without LD_PRELOAD on purpose (`env -u LD_PRELOAD`
        under a preloaded shell) inherits it, the driver loads libprof there,
        and libprof stays idle: the child runs as without it and writes
        nothing. The same child with LD_PRELOAD kept is profiled."""
        if not os.path.exists(harness.LIBPROF_SO) or not os.path.exists(TRAIN_LOOP):
            self.skipTest("libprof.so or train_loop not built")
        for keep, expect_windows in ((False, 0), (True, 1)):
            out = os.path.join(harness.scratch_dir(self, "paths-child-"), "out")
            env = harness.sim_env(PROF_OUTPUT_DIR=out, PROF_STEP="sync", PROF_WAIT="2", PROF_WARMUP="1",
                                  PROF_ACTIVE="2", PROF_LOG_LEVEL="debug")
            env["LD_PRELOAD"] = harness.LIBPROF_SO
            child = [TRAIN_LOOP, "--steps", "12"]
            cmd = ["sh", "-c", 'exec "$0" "$@"' if keep else 'exec env -u LD_PRELOAD "$0" "$@"'] + child
            proc = harness.run(cmd, env)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("done steps=12", proc.stdout)
            traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
            self.assertEqual(len(traces), expect_windows, proc.stderr[-3000:])
            idle = "loaded by the driver through CUDA_INJECTION64_PATH as a profiled parent offered it"
            if keep:
                self.assertNotIn(idle, proc.stderr)
            else:
                self.assertIn(idle, proc.stderr)


if __name__ == "__main__":
    harness.main()
