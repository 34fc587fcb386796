"""Python call sites on a real interpreter: Debian's python3 runs
test/workloads/python_model.py, a small model driving the simulated stack
through ctypes, under LD_PRELOAD=libprof.so. The recorded calls must carry
the exact Python stack (file, line, function) of the line that made them,
with the GIL released (ctypes.CDLL) and held (ctypes.PyDLL); the trace's
python_function slices must nest and validate; PROF_PYTHON=0 and a C++-only
workload must look as they did before stacks existed."""
import os
import re
import subprocess
import sys
import unittest

import harness
from test_agent_support import need, run_agent, validate, workload

# CI's interpreter: Debian's python3 (scripts/setup-deps.sh installs it),
# or, with PROF_TEST_PYTHON_VERSION=3.N, Debian sid's CPython 3.N as
# scripts/python-debian.sh unpacked it into PROF_TEST_PYTHON_DEPS.
PYTHON = os.environ.get("PROF_TEST_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                                                 else sys.executable)
VERSION = os.environ.get("PROF_TEST_PYTHON_VERSION")
UNAVAILABLE = None  # why the versioned interpreter is missing, when that is no fault of the build
if VERSION:
    deps = os.environ.get("PROF_TEST_PYTHON_DEPS", "")
    PYTHON = os.path.join(deps, "bin", "python" + VERSION)
    if not os.path.exists(PYTHON):
        marker = os.path.join(deps, "unreachable")
        if not os.path.exists(marker):
            raise SystemExit(f"{PYTHON} is missing: run scripts/python-debian.sh {VERSION}")
        with open(marker) as f:
            UNAVAILABLE = f.read().strip()
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT="1", PROF_WARMUP="1", PROF_ACTIVE="3", PROF_REPEAT="1")


def sites(path):
    """'# site: <name>' comment -> line number."""
    found = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            m = re.search(r"# site: ([\w-]+)", line)
            if m:
                found[m.group(1)] = number
    return found


def x_events(trace, cat):
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat]


def enclosing_python(trace, call):
    """The python_function slices on the call's thread that contain it,
    outermost first, as (name, Python id, Python parent id)."""
    out = []
    for e in x_events(trace, "python_function"):
        if e["tid"] == call["tid"] and e["ts"] <= call["ts"] and call["ts"] + call["dur"] <= e["ts"] + e["dur"] + 1e-3:
            out.append(e)
    out.sort(key=lambda e: (e["ts"], -e["dur"], e["args"]["Python id"]))
    return out


def call_site_table(path):
    """The summary written beside the trace at path, its "GPU time by Python call site" table, and the
    table's rows by site: [share, GPU ns, kernels, launches, syncs, copies, allocs/frees, calls]."""
    with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
        summary = f.read()
    table = summary.split("== GPU time by Python call site")[1].split("\n== ")[0]
    rows = {}
    for line in table.splitlines()[3:]:
        cells = line.split(None, 8)
        rows[cells[8]] = [float(cells[0])] + [int(c) for c in cells[1:8]]
    return summary, table, rows


def only_debian_python(cls):
    """Tests that do not depend on the interpreter's version run once, with
    Debian's python3, not again per versioned interpreter."""
    if VERSION:
        return unittest.skip(f"version-independent: runs in agent_python, not under CPython {VERSION}")(cls)
    return cls


class PythonStacks(unittest.TestCase):
    def setUp(self):
        if UNAVAILABLE:
            harness.unavailable(f"CPython {VERSION}", UNAVAILABLE)
        self.model = workload("python_model.py")
        need(harness.LIBPROF_SO, self.model, workload("libctypes_workload.so"))
        self.site = sites(self.model)

    minor = int(os.environ.get("PROF_TEST_PYTHON_MINOR", "11"))

    def run_model(self, *args, **env):
        run = run_agent([PYTHON, self.model, *args], **dict(SCHEDULE, **env))
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("done steps=", run.proc.stdout)
        self.assertEqual(len(run.traces), 1, "\n".join(run.log_lines()))
        return run.traces[0]

    def name(self, site, function):
        return f"{self.model}({self.site[site]}): {self.function(function)}"

    def function(self, qualified):
        """3.10's code objects have no co_qualname: the bare name."""
        return qualified.split(".")[-1] if self.minor == 10 else qualified

    def site_text(self, site, function):
        return f"python_model.py:{self.site[site]} in {self.function(function)}"

    def check_model_stacks(self, gil):
        path, trace = self.run_model("--gil", gil)
        self.minor = int(re.search(r"CPython 3\.(\d+)", trace["libprof"]["python"]["stacks"]).group(1))
        if VERSION:
            self.assertTrue(trace["libprof"]["python"]["stacks"].startswith(f"on (CPython {VERSION}."),
                            trace["libprof"]["python"])
        ok, out = validate(path)
        self.assertTrue(ok, out)
        self.assertTrue(trace["libprof"]["python"]["stacks"].startswith("on (CPython 3."), trace["libprof"]["python"])
        calls = [e for e in x_events(trace, "cuda_runtime") if e["args"].get("source") != "cupti"]
        by_name = {}
        for c in calls:
            by_name.setdefault(c["name"], []).append(c)
        expected = {
            # call -> the innermost frames (innermost last) that must enclose it
            "cudaMemcpyAsync": [self.name("load", "data_loader")],
            "cudaMalloc": [self.name("scratch", "train_step")],
            "cudaFree": [self.name("scratch", "train_step")],
            "__cudaLaunchKernel": [self.name("forward", "train_step"), self.name("model-layer", "Model.forward"),
                                   self.name("layer", "Linear.forward")],
            "cudaMemcpy": [self.name("loss", "train_step"), self.name("item", "item")],
            "cudaStreamSynchronize": [],
        }
        for api, inner in expected.items():
            self.assertIn(api, by_name, sorted(by_name))
            for call in by_name[api]:
                if call["tid"] != trace["libprof"]["pid"]:
                    continue  # the C++ thread's launches: below
                stack = enclosing_python(trace, call)
                names = [e["name"] for e in stack]
                self.assertTrue(names, f"{api} at {call['ts']} has no python_function above it")
                self.assertTrue(names[0].endswith("): <module>"), names)
                if inner:
                    self.assertEqual(names[-len(inner):], inner, api)
                if api == "cudaStreamSynchronize":
                    self.assertEqual(names[-1], self.name("sync", "main"))
                # Python parent id links each slice to the one enclosing it.
                self.assertIsNone(stack[0]["args"]["Python parent id"])
                for outer, inner_slice in zip(stack, stack[1:]):
                    self.assertEqual(inner_slice["args"]["Python parent id"], outer["args"]["Python id"])
        # A coroutine's frame, run by asyncio's event loop, has the loop's
        # frames (standard library) between it and main.
        for call in by_name["cudaMemsetAsync"]:
            names = [e["name"] for e in enclosing_python(trace, call)]
            self.assertEqual(names[-1], self.name("coroutine", "evaluate"))
            self.assertIn(self.name("run-coroutine", "main"), names)
        # A C++ thread launches while the Python thread waits for it (joins).
        # With the GIL released the Python thread is out of the interpreter:
        # the C++ thread's calls are charged to its stack, marked "via" it.
        # With the GIL held (ctypes.PyDLL) the waiting thread still counts as
        # running Python: the calls have no Python frames, and the trace says so.
        main_tid = trace["libprof"]["pid"]
        cpp = [c for c in by_name["__cudaLaunchKernel"] if c["tid"] != main_tid]
        self.assertTrue(cpp, "the C++ thread launched inside the window")
        for call in cpp:
            names = [e["name"] for e in enclosing_python(trace, call)]
            if gil == "held":
                self.assertEqual(names, [])
            else:
                via = f" (via thread {main_tid})"
                self.assertEqual(names[-1], self.name("cpp-thread", "main") + via)
                self.assertTrue(names[0].endswith("): <module>" + via), names)
        cpp_tids = sorted({c["tid"] for c in cpp})
        python = trace["libprof"]["python"]
        if gil == "held":
            self.assertEqual(cpp_tids, python["threads_without_python_frames"])
            self.assertEqual(python["threads_via"], [])
        else:
            self.assertEqual(python["threads_without_python_frames"], [])
            self.assertEqual(sorted(t for t, via, n in python["threads_via"]), cpp_tids)
            self.assertEqual({via for t, via, n in python["threads_via"]}, {main_tid})
        # The data loader's frame is a generator's: main is its caller.
        load = enclosing_python(trace, by_name["cudaMemcpyAsync"][0])
        self.assertEqual(load[-2]["name"], f"{self.model}({self.site['loop']}): main")
        return trace

    def test_summary_names_the_call_sites(self):
        path, trace = self.run_model()
        self.minor = int(re.search(r"CPython 3\.(\d+)", trace["libprof"]["python"]["stacks"]).group(1))
        summary, table, rows = call_site_table(path)
        # columns after the share: GPU ns, kernels, launches, syncs, copies, allocs/frees, calls
        layer = rows[self.site_text("layer", "Linear.forward")]
        self.assertEqual(layer[2:4], [15, 15], "5 kernels per step, 3 steps, all launched on the layer's line")
        self.assertGreater(layer[1], 0)
        self.assertEqual(rows[self.site_text("scratch", "train_step")][6:8], [6, 6])
        self.assertEqual(rows[self.site_text("item", "item")][5], 3)
        self.assertEqual(rows[self.site_text("sync", "main")][4], 3)
        self.assertEqual(rows[self.site_text("load", "data_loader")][5], 3)
        cpp_row = self.site_text("cpp-thread", "main") + f" (via thread {trace['libprof']['pid']})"
        self.assertEqual(rows[cpp_row][2:4], [3, 3], "the C++ thread's kernels and launches, charged to the waiting line")
        self.assertNotIn("(no Python frames)", rows)
        findings = {m.group(1): m.group(2) for m in re.finditer(r"\[([\w-]+)\] .*\n\s+evidence: (.*)", summary)}
        self.assertIn("top call sites: " + self.site_text("sync", "main") + " x3", findings["sync-in-step"])
        self.assertIn("top call sites: " + self.site_text("item", "item") + " x3", findings["d2h-copy-in-step"])
        self.assertIn(self.site_text("load", "data_loader") + " x3", findings["pageable-copy"])
        self.assertIn("top call sites: " + self.site_text("scratch", "train_step") + " x4", findings["allocator-churn"])
        # `prof summary` rebuilds the stacks from the python_function slices:
        # the same table and findings as the agent wrote.
        if harness.PROF_TOOL and os.path.exists(harness.PROF_TOOL):
            p = subprocess.run([harness.PROF_TOOL, "summary", path], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)

            def sections(text):
                return text.split("== Findings ==")[1].split("\n== Memory")[0]
            self.assertEqual(sections(p.stdout), sections(summary))

    def test_gil_released_calls_carry_their_python_stack(self):
        self.check_model_stacks("released")

    def test_gil_held_calls_carry_their_python_stack(self):
        self.check_model_stacks("held")

    def test_worker_thread_has_its_own_stack(self):
        path, trace = self.run_model("--worker")
        ok, out = validate(path)
        self.assertTrue(ok, out)
        main_tid = trace["libprof"]["pid"]
        # The C++ threads' calls are charged via a Python thread: not the worker's own.
        cpp_tids = [t for t, via, n in trace["libprof"]["python"]["threads_via"]]
        cpp_tids += trace["libprof"]["python"]["threads_without_python_frames"]
        worker_calls = [e for e in x_events(trace, "cuda_runtime")
                        if e["tid"] not in cpp_tids + [main_tid] and e["name"] == "__cudaLaunchKernel"]
        self.assertTrue(worker_calls, "the worker launched inside the window")
        names = [e["name"] for e in enclosing_python(trace, worker_calls[0])]
        self.assertEqual(names[-1], self.name("worker", "worker"))
        self.assertTrue(names[0].endswith("_bootstrap"), names)  # threading's entry, not main's frames

    def test_kernels_of_a_native_pool_carry_the_waiting_line(self):
        """loss.backward()'s pattern: the Python thread calls into a C
        library that hands kernel launches to a pool of native threads and
        waits; the pool's kernels are charged to the line of the waiting
        call, marked via the Python thread, in the trace's slices, the
        call-site table and `prof summary`'s rebuild of it."""
        path, trace = self.run_model("--pool")
        ok, out = validate(path)
        self.assertTrue(ok, out)
        main_tid = trace["libprof"]["pid"]
        via = f" (via thread {main_tid})"
        launches = [e for e in x_events(trace, "cuda_runtime")
                    if e["name"] == "__cudaLaunchKernel" and e["args"].get("source") != "cupti"]
        python = trace["libprof"]["python"]
        # Threads charged via the Python thread: the pool's three (new ones
        # per step for the C++ thread of cpp-thread, charged to its own line).
        cpp_line = self.name("cpp-thread", "main") + via
        cpp_tids = {c["tid"] for c in launches
                    if any(e["name"] == cpp_line for e in enclosing_python(trace, c))}
        pool_tids = {t for t, v, n in python["threads_via"]} - cpp_tids
        self.assertEqual(len(pool_tids), 3, python)
        pool = [c for c in launches if c["tid"] in pool_tids]
        self.assertEqual(len(pool), 3 * 2 * 3, "3 pool threads x 2 kernels x 3 steps, all inside the window")
        for call in pool:
            stack = enclosing_python(trace, call)
            names = [e["name"] for e in stack]
            self.assertEqual(names[-2:], [self.name("backward-call", "train_step") + via,
                                          self.name("backward", "backward") + via], names)
            self.assertTrue(names[0].endswith("): <module>" + via), names)
            self.assertEqual({e["args"]["via thread"] for e in stack}, {main_tid})
        _, table, rows = call_site_table(path)
        row = rows[self.site_text("backward", "backward") + via]
        self.assertEqual(row[2:4], [18, 18], "the pool's kernels and launches")
        self.assertGreater(row[1], 0, "GPU time of the pool's kernels")
        # The Python thread's own line has no kernels of its own: it waited.
        self.assertNotIn(self.site_text("backward", "backward"), rows)
        if harness.PROF_TOOL and os.path.exists(harness.PROF_TOOL):
            p = subprocess.run([harness.PROF_TOOL, "summary", path], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(self.site_text("backward", "backward") + via, p.stdout)
            rebuilt = p.stdout.split("== GPU time by Python call site")[1].split("\n== ")[0]
            self.assertEqual(rebuilt, table)

    def test_prof_python_0_records_no_stacks(self):
        path, trace = self.run_model(PROF_PYTHON="0")
        ok, out = validate(path)
        self.assertTrue(ok, out)
        self.assertEqual(x_events(trace, "python_function"), [])
        self.assertNotIn("python", trace["libprof"])
        self.assertEqual(trace["libprof"]["config"]["PROF_PYTHON"], "0")
        with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
            self.assertNotIn("Python call site", f.read())


@only_debian_python
class UnsupportedInterpreter(unittest.TestCase):
    """A process whose Py_GetVersion names a version libprof does not
    support: one log line, no stacks, the program unchanged."""

    def run_fake(self, version):
        fake = workload("fake_python")
        need(harness.LIBPROF_SO, fake, workload("libctypes_workload.so"))
        run = run_agent([fake, workload("libctypes_workload.so"), "6"], FAKE_PY_VERSION=version,
                        PROF_STEP="sync", PROF_WAIT="1", PROF_WARMUP="1", PROF_ACTIVE="2")
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertIn("run_steps = ", run.proc.stdout)
        self.assertEqual(len(run.traces), 1, "\n".join(run.log_lines()))
        path, trace = run.traces[0]
        ok, out = validate(path)
        self.assertTrue(ok, out)
        self.assertEqual(x_events(trace, "python_function"), [])
        return run, trace

    def test_python_3_9_is_refused_in_one_line(self):
        run, trace = self.run_fake("3.9.18 (main, Jan  1 2024, 00:00:00) [GCC 12.2.0]")
        lines = [l for l in run.log_lines() if "Python stacks" in l]
        self.assertEqual(len(lines), 1, run.log_lines())
        self.assertIn("CPython 3.9.18 is not supported (3.10 through 3.15)", lines[0])
        self.assertEqual(trace["libprof"]["python"]["stacks"],
                         "off (CPython 3.9.18 is not supported: 3.10 through 3.15)")

    def test_free_threading_build_is_refused(self):
        run, trace = self.run_fake("3.13.0 experimental free-threading build (main, Oct  7 2024) [GCC 12.2.0]")
        self.assertIn("free-threading build", trace["libprof"]["python"]["stacks"])
        self.assertEqual(len([l for l in run.log_lines() if "Python stacks" in l]), 1, run.log_lines())


@only_debian_python
class CppOnly(unittest.TestCase):
    def test_cpp_workload_trace_has_no_python(self):
        loop = workload("train_loop")
        need(harness.LIBPROF_SO, loop)
        run = run_agent([loop, "--steps", "8"], PROF_STEP="sync", PROF_WAIT="1", PROF_WARMUP="1", PROF_ACTIVE="2")
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        path, trace = run.traces[0]
        ok, out = validate(path)
        self.assertTrue(ok, out)
        self.assertEqual(x_events(trace, "python_function"), [])
        self.assertNotIn("python", trace["libprof"])
        self.assertFalse([l for l in run.log_lines() if "Python" in l], run.log_lines())
        with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
            summary = f.read()
        self.assertNotIn("Python call site", summary)
        self.assertNotIn("top call sites", summary)


if __name__ == "__main__":
    harness.main()
