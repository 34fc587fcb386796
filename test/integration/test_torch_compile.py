"""torch.compile on the simulated stack: test/workloads/torch_compile.py
(torch_train.py's transformer wrapped by torch.compile, its loss a second
compiled function, and a hand-written @triton.jit kernel each step) run
through build/test/sim/simrun with PyPI's torch and Triton, unmodified.
Inductor's and Triton's caches live in the test's scratch folder: a first run
without libprof compiles everything (Triton's ptxas for the simulated H100,
and Triton's C launcher with the system compiler and Python's headers) and
warms them, then one run under LD_PRELOAD and one under CUDA_INJECTION64_PATH
with no PROF_* variable. Checked against the sim's truth log and Inductor's
generated modules:
  - Triton compiled for sm_90 and the driver loaded its cubins (cuModuleLoad:
    Inductor's launcher; cuModuleLoadData: Triton's), found every kernel by
    name and launched it (cuLaunchKernel, cuLaunchKernelEx), and the kernels
    that ran are the ones Inductor's modules launch;
  - the window is steps 32-36, each step one iteration (one ema_kernel);
    every kernel, copy and memset launched in it is in the trace once;
  - every Triton kernel has its launching driver call and a Python stack whose
    generated-module frame is the very line that launches it (`<kernel>.run(`),
    the forward's under the training loop's line, the hand-written kernel's
    on the line that launches it;
  - the summary's compiled-code table groups the kernels by graph (one row per
    generated module: each compiled function's forward under that function,
    its backward on autograd's thread) and the @triton.jit call site, with the
    counts and GPU time the trace holds, and `prof summary` on the trace
    shows the same table."""
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_compile.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
STEPS = 60
SECTION = "== GPU time by compiled code"
FRAME = re.compile(r"^(.*)\((-?\d+)\): (.*?)(?: \(via thread \d+\))?$")


def line_of(path, pattern):
    with open(path) as f:
        return next(n for n, line in enumerate(f, 1) if re.search(pattern, line))


EMA_LINE = line_of(WORKLOAD, r"ema_kernel\[\(1,\)\]")
FORWARD_LINES = {line_of(WORKLOAD, r"logits = compiled\(tokens\)"), line_of(WORKLOAD, r"loss = compiled_loss\(")}


def need_triton_build_tools(python):
    """Triton builds its launcher (a C extension) with the system's C compiler
    and the venv's Python headers on first use."""
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        harness.unavailable("a C compiler", "Triton builds its launcher with gcc or clang (Debian: apt-get install gcc)")
    proc = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                          capture_output=True, text=True, timeout=60)
    include = proc.stdout.strip()
    if not os.path.exists(os.path.join(include, "Python.h")):
        harness.unavailable("Python's headers", f"no Python.h in {include or '?'}: Triton's launcher needs them "
                            "(Debian: python3-dev, which scripts/setup-deps.sh installs)")


def run_workload(python, work, mode=None):
    """One run with the class's caches; returns (returncode, stdout, stderr, truth lines, output dir)."""
    name = mode or "bare"
    out = os.path.join(work, name)
    truth_path = os.path.join(work, name + ".truth.jsonl")
    env = harness.clean_env(SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1", PROF_OUTPUT_DIR=out,
                            TORCHINDUCTOR_CACHE_DIR=os.path.join(work, "inductor"),
                            TRITON_CACHE_DIR=os.path.join(work, "triton"))
    if mode:
        env[mode] = harness.LIBPROF_SO
    proc = subprocess.run([SIMRUN, python, WORKLOAD, "--steps", str(STEPS)], env=env, cwd=work,
                          capture_output=True, text=True, timeout=280)
    return proc.returncode, proc.stdout, proc.stderr, truth.read(truth_path), out


def generated_modules(work):
    """Inductor's generated modules in the cache: path -> (AOT ID, names of the Triton kernels it launches)."""
    modules = {}
    for path in glob.glob(os.path.join(work, "inductor", "*", "c*.py")):
        with open(path) as f:
            text = f.read()
        aot = re.search(r"^# AOT ID: \['(\w+)'\]", text, re.M)
        launched = set(re.findall(r"^\s+(triton_\w+)\.run\(", text, re.M))
        if aot and launched:
            modules[os.path.realpath(path)] = (aot.group(1), launched)
    return modules


class TorchCompileOnTheSim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN)
        cls.python = harness.need_venv("torch", "triton")
        need_triton_build_tools(cls.python)
        cls.work = tempfile.mkdtemp(prefix="libprof-torch-compile-")
        cls.bare = run_workload(cls.python, cls.work)
        if cls.bare[0] != 0:
            raise AssertionError(f"torch_compile.py exited {cls.bare[0]}: {cls.bare[2][-4000:]}")
        cls.modules = generated_modules(cls.work)
        cls.runs = {mode: run_workload(cls.python, cls.work, mode) for mode in harness.INJECTION_MODES}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def each_mode(self, check):
        for mode, run in self.runs.items():
            with self.subTest(mode=mode):
                rc, stdout, stderr, lines, out = run
                self.assertEqual(rc, 0, stderr[-3000:])
                self.assertIn(f"{STEPS} steps in", stdout)
                check(mode, stderr, lines, out, *self.window(lines, out))

    def window(self, lines, out):
        """The training process's window (Inductor's compile workers may write their own)."""
        pid = next(c["pid"] for c in truth.of_type(lines, "kernel") if c["name"] == "ema_kernel")
        traces = glob.glob(os.path.join(out, f"*_{pid}.*.pt.trace.json"))
        self.assertEqual(len(traces), 1, os.listdir(out))
        with open(traces[0]) as f:
            trace = json.load(f)
        # Another process's window (a compile worker makes CUDA calls at start) holds no GPU work.
        for other in set(glob.glob(os.path.join(out, "*.pt.trace.json"))) - set(traces):
            with open(other) as f:
                events = json.load(f)["traceEvents"]
            self.assertEqual([e["name"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")],
                             [], other)
        return traces[0], trace

    def test_triton_compiles_for_the_simulated_device_and_launches_through_the_driver(self):
        rc, stdout, stderr, lines, out = self.bare
        self.assertIn("compiled in", stdout)
        # ptxas made Triton's cubins for the simulated H100 (compute capability 9.0).
        metadata = glob.glob(os.path.join(self.work, "triton", "*", "*.json"))
        targets = {}
        for path in metadata:
            with open(path) as f:
                m = json.load(f)
            if "target" in m and os.path.exists(path[:-5] + ".cubin"):
                targets[m["name"]] = m["target"]
        self.assertIn("ema_kernel", targets)
        self.assertTrue(any(n.startswith("triton_") for n in targets), sorted(targets))
        self.assertEqual({(t["backend"], t["arch"]) for t in targets.values()}, {("cuda", 90)})
        calls = collections.defaultdict(list)
        for c in truth.api(lines):
            calls[c["name"]].append(c["result"])
        for name in ("cuModuleLoad", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel", "cuLaunchKernelEx",
                     "cuFuncGetAttribute"):
            self.assertTrue(calls[name], f"{name} never called")
            self.assertEqual(set(calls[name]), {0}, name)
        kernels = truth.of_type(lines, "kernel")
        triton_kernels = [k for k in kernels if k["name"].startswith("triton_")]
        self.assertEqual({k["api"] for k in triton_kernels}, {"cuLaunchKernel"})
        ema = [k for k in kernels if k["name"] == "ema_kernel"]
        self.assertEqual(len(ema), STEPS)
        self.assertEqual({k["api"] for k in ema}, {"cuLaunchKernelEx"})
        # What ran is what Inductor's modules launch: a forward and a backward per compiled function.
        self.assertEqual(sorted(aot for aot, _ in self.modules.values()),
                         ["0_backward", "0_forward", "1_backward", "1_forward"])
        launched = set().union(*(names for _, names in self.modules.values()))
        self.assertEqual({k["name"] for k in triton_kernels}, launched)

    def test_the_window_is_steps_32_to_36_one_iteration_each_and_every_op_once(self):
        def check(mode, stderr, lines, out, path, trace):
            w = trace["libprof"]["window"]
            self.assertEqual((w["first_step"], w["last_step"], w["partial"]), (32, 36, False), stderr[-3000:])
            events = trace["traceEvents"]
            calls = {e["args"]["correlation"]: e for e in events
                     if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
            steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
            self.assertEqual(len(steps), 5)
            for step in steps:
                ema = [e for e in events if e.get("cat") == "kernel" and e["name"] == "ema_kernel"
                       and step["ts"] <= calls[e["args"]["correlation"]]["ts"] < step["ts"] + step["dur"]]
                self.assertEqual(len(ema), 1, step["name"])
            lo, hi = min(calls), max(calls)
            kinds = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
            got = collections.Counter((kinds[e["cat"]], e["args"]["correlation"]) for e in events
                                      if e.get("cat") in kinds)
            pid = trace["libprof"]["pid"]
            want = collections.Counter((op["type"], op["correlation"]) for op in truth.of_type(lines, *truth.DEVICE_OPS)
                                       if op["pid"] == pid and lo <= op["correlation"] <= hi)
            self.assertGreater(sum(want.values()), 300)
            self.assertEqual(got - want, collections.Counter(), "recorded, but not launched inside the window")
            self.assertEqual(want - got, collections.Counter(), "launched inside the window, missing")
            if harness.PROF_TOOL and os.path.exists(harness.PROF_TOOL):
                p = subprocess.run([harness.PROF_TOOL, "validate", path], capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.each_mode(check)

    def stacks(self, trace):
        """kernel event -> (launching call, its stack outermost first as (file, line, function))."""
        events = trace["traceEvents"]
        calls = {e["args"]["correlation"]: e for e in events
                 if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        by_tid = collections.defaultdict(list)
        for e in events:
            if e.get("ph") == "X" and e.get("cat") == "python_function":
                by_tid[e["tid"]].append(e)
        out = []
        for k in (e for e in events if e.get("cat") == "kernel"):
            call = calls.get(k["args"]["correlation"])
            frames = []
            if call is not None:
                for e in by_tid[call["tid"]]:
                    if e["ts"] <= call["ts"] and call["ts"] + call["dur"] <= e["ts"] + e["dur"] + 1e-3:
                        file, line, function = FRAME.match(e["name"]).groups()
                        frames.append((file, int(line), function))
            out.append((k, call, frames))
        return out

    def test_every_triton_kernel_has_its_driver_launch_and_the_python_line_that_launched_it(self):
        def check(mode, stderr, lines, out, path, trace):
            truth_api = {k["correlation"]: k["api"] for k in truth.of_type(lines, "kernel")}
            seen = collections.Counter()
            for k, call, frames in self.stacks(trace):
                name = k["name"]
                if not (name.startswith("triton_") or name == "ema_kernel"):
                    continue
                self.assertIsNotNone(call, f"no launching call for {name}")
                self.assertEqual(call["name"], truth_api[k["args"]["correlation"]], name)
                if name == "ema_kernel":
                    self.assertIn((os.path.realpath(WORKLOAD), EMA_LINE), {(os.path.realpath(f), n) for f, n, _ in frames})
                    seen["ema"] += 1
                    continue
                graph = [(f, n) for f, n, _ in frames if os.path.realpath(f) in self.modules]
                self.assertEqual(len(graph), 1, (name, frames[-4:]))
                file, number = graph[0]
                with open(file) as f:
                    text = f.read().splitlines()[number - 1]
                self.assertRegex(text, rf"^\s+{name}\.run\(", "the frame's line launches the kernel")
                aot = self.modules[os.path.realpath(file)][0]
                if aot.endswith("_forward"):
                    self.assertTrue(any(os.path.realpath(f) == os.path.realpath(WORKLOAD) and n in FORWARD_LINES
                                        for f, n, _ in frames), (name, frames[:3]))
                    self.assertEqual(call["tid"], trace["libprof"]["pid"])
                else:
                    self.assertNotEqual(call["tid"], trace["libprof"]["pid"], "backward: autograd's thread")
                seen[aot] += 1
            self.assertEqual(seen["ema"], 5)
            self.assertEqual(set(seen) - {"ema"}, {"0_forward", "0_backward", "1_forward", "1_backward"})
        self.each_mode(check)

    def test_the_summary_groups_the_kernels_by_compiled_graph_and_triton_call_site(self):
        def check(mode, stderr, lines, out, path, trace):
            with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
                summary = f.read()
            section = summary[summary.index(SECTION):].split("\n== ")[0]
            rows = {}
            for row in re.findall(r"^ +([\d.]+) +(\d+) +(\d+) +(\d+) +(\d+)  (.+), called from (.+)$", section, re.M):
                code = row[5] if row[5].startswith("@") else os.path.realpath(row[5])
                rows[code] = [int(v) for v in row[1:5]] + [row[6]]
            # The same kernels, counted from the trace: by the generated module on the launch's stack.
            want = collections.defaultdict(lambda: [0, 0, set()])
            for k, call, frames in self.stacks(trace):
                graphs = [os.path.realpath(f) for f, _, _ in frames if os.path.realpath(f) in self.modules]
                key = graphs[0] if graphs else "@triton.jit ema_kernel" if k["name"] == "ema_kernel" else None
                if key is not None:
                    want[key][0] += round(k["dur"] * 1000)
                    want[key][1] += 1
                    want[key][2].add(k["name"])
            self.assertEqual(set(rows), set(want), section)
            for key, (ns, kernels, names) in want.items():
                got_ns, got_kernels, launches, got_names, caller = rows[key]
                self.assertEqual((got_kernels, launches, got_names), (kernels, kernels, len(names)), key)
                self.assertLessEqual(abs(got_ns - ns), kernels, key)  # the trace's µs carry whole ns
                if key.startswith("@triton.jit"):
                    self.assertEqual(caller, f"torch_compile.py:{EMA_LINE} in main")
                    continue
                aot = self.modules[key][0]
                if aot == "0_forward":
                    self.assertRegex(caller, r"^torch_train\.py:\d+ in TinyLM\.forward$")
                elif aot == "1_forward":
                    self.assertRegex(caller, r"^torch_compile\.py:\d+ in loss_of$")
                else:
                    self.assertRegex(caller, r"BackwardCFunction.*\(no frame of your code\)$")
            # `prof summary` reads the same table back from the trace.
            if harness.PROF_TOOL and os.path.exists(harness.PROF_TOOL):
                p = subprocess.run([harness.PROF_TOOL, "summary", path], capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(section, p.stdout)
        self.each_mode(check)


if __name__ == "__main__":
    harness.main()
