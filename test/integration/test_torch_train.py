"""PyPI's PyTorch, unmodified, on the simulated stack: test/workloads/torch_train.py
(a small transformer: embedding, attention, LayerNorm, AdamW, bfloat16
autocast, gradient clipping, a DataLoader with two worker processes) runs
through build/test/sim/simrun with libprof and no PROF_* variable, under
LD_PRELOAD and under CUDA_INJECTION64_PATH. Checked against the sim's truth
log:
  - the sim's libraries, not NVIDIA's, are the ones the process mapped;
  - PROF_STEP=auto found the training loop, not model.to(device)'s copies,
    and the one window is the loop's steps 32-36, step k mostly the loop's
    iteration k (iterations told apart in the truth by the batch's copies);
  - every kernel, copy and memset launched inside the window is in the trace
    exactly once, and nothing else is;
  - every kernel's launching call is there with its Python stack: forward
    kernels under the model's forward, backward kernels (autograd's own
    thread) on the loss.backward() line via the Python thread;
  - the DataLoader workers, which make no CUDA call, write nothing;
  - the findings are true of those steps (no synchronization in them: the
    loss is read back every 10th step; launch-bound)."""
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_train.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
STEPS = 60
BATCH, SEQ_LEN = 8, 128
# What simrun must have put in place of NVIDIA's.
SIM_SONAMES = ("libcudart.so.13", "libcuda.so.1", "libcupti.so.13", "libnccl.so.2", "libcublas.so.13",
               "libcublasLt.so.13", "libcudnn.so.9")


def lines_of(path, pattern):
    with open(path) as f:
        return [n for n, line in enumerate(f, 1) if re.search(pattern, line)]


BACKWARD_LINE = lines_of(WORKLOAD, r"loss\.backward\(\)")[0]


def run_torch(python, mode, work):
    """One run; returns (returncode, stdout, stderr, maps text, out dir, truth lines)."""
    out = os.path.join(work, mode)
    truth_path = os.path.join(work, mode + ".truth.jsonl")
    env = harness.clean_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1")
    env[mode] = harness.LIBPROF_SO
    proc = subprocess.Popen([SIMRUN, python, WORKLOAD, "--steps", str(STEPS)], env=env, cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, maps = [], ""
    # The process maps its libraries by the first step; read them while it runs.
    for line in proc.stdout:
        stdout.append(line)
        if line.startswith("step 0:") and not maps:
            with open(f"/proc/{proc.pid}/maps") as f:
                maps = f.read()
    stderr = proc.stderr.read()
    proc.wait(timeout=600)
    return proc.returncode, "".join(stdout), stderr, maps, out, truth.read(truth_path)


# The venv and scratch set-up every torch test class makes before running its own workload.
class TorchTrainUnderLibprof(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN)
        cls.python = harness.need_venv("torch")
        cls.work = tempfile.mkdtemp(prefix="libprof-torch-")
        cls.runs = {mode: run_torch(cls.python, mode, cls.work) for mode in harness.INJECTION_MODES}

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.work, ignore_errors=True)

    def each_mode(self, check):
        for mode, run in self.runs.items():
            with self.subTest(mode=mode):
                check(mode, *run)

    def window(self, out):
        traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
        self.assertEqual(len(traces), 1, os.listdir(out) if os.path.isdir(out) else "no output directory")
        with open(traces[0]) as f:
            return traces[0], json.load(f)

    def test_the_program_runs_on_the_sims_libraries(self):
        def check(mode, rc, stdout, stderr, maps, out, lines):
            self.assertEqual(rc, 0, stderr[-3000:])
            self.assertIn(f"{STEPS} steps in", stdout)
            mapped = {os.path.basename(p): p for p in re.findall(r"(/\S+\.so[.\d]*)\s*$", maps, re.M)}
            for soname in SIM_SONAMES:
                self.assertIn(soname, mapped, "not mapped")
                self.assertEqual(os.path.dirname(mapped[soname]), os.path.realpath(harness.SIM_LIB_DIR), soname)
            nvidia = [p for p in set(re.findall(r"(/\S+)\s*$", maps, re.M))
                      if "/nvidia/" in p and os.path.basename(p) in SIM_SONAMES]
            self.assertEqual(nvidia, [], "NVIDIA's copy mapped beside the sim's")
            self.assertIn("torch/lib/libtorch_cuda.so", maps)
        self.each_mode(check)

    def test_the_window_is_the_training_loops_steps_32_to_36(self):
        def check(mode, rc, stdout, stderr, maps, out, lines):
            chosen = [l for l in stderr.splitlines() if "PROF_STEP=auto: step = " in l]
            self.assertEqual(len(chosen), 1, stderr[-3000:])
            self.assertNotRegex(chosen[0], r"^[^;]*; \d+ cop(y|ies) and \d+ syncs? per step", "set-up taken for a loop")
            path, trace = self.window(out)
            w = trace["libprof"]["window"]
            self.assertEqual((w["first_step"], w["last_step"], w["partial"]), (32, 36, False), stderr[-3000:])
            # The loop's iterations in the truth: each begins with the batch's
            # first pinned host-to-device copy (tokens, then targets).
            pid = trace["libprof"]["pid"]
            batch = [op for op in truth.of_type(lines, "memcpy")
                     if op["pid"] == pid and op["copy_kind"] == truth.HTOD and op["src_kind"] == truth.PINNED
                     and op["bytes"] == BATCH * SEQ_LEN * 8]
            self.assertEqual(len(batch), 2 * STEPS)
            starts = [op["correlation"] for op in batch[::2]]
            def iteration(correlation):
                return sum(1 for s in starts if s <= correlation) - 1
            ops = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
            steps = sorted((e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")),
                           key=lambda e: e["ts"])
            self.assertEqual([int(s["name"].split("#")[1]) for s in steps], [32, 33, 34, 35, 36])
            calls = {e["args"]["correlation"]: e for e in trace["traceEvents"]
                     if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
            for step in steps:
                k = int(step["name"].split("#")[1])
                inside = [op for op in ops if op["args"]["correlation"] in calls
                          and step["ts"] <= calls[op["args"]["correlation"]]["ts"] < step["ts"] + step["dur"]]
                self.assertGreater(len(inside), 50, step["name"])
                by_iteration = collections.Counter(iteration(op["args"]["correlation"]) for op in inside)
                self.assertGreater(2 * by_iteration[k], len(inside),
                                   f"{step['name']} is mostly another iteration: {dict(by_iteration)}; {chosen[0]}")
        self.each_mode(check)

    def test_every_device_op_of_the_window_exactly_once(self):
        def check(mode, rc, stdout, stderr, maps, out, lines):
            path, trace = self.window(out)
            pid = trace["libprof"]["pid"]
            events = trace["traceEvents"]
            calls = [e["args"]["correlation"] for e in events
                     if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
            lo, hi = min(calls), max(calls)
            kinds = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
            got = collections.Counter((kinds[e["cat"]], e["args"]["correlation"]) for e in events
                                      if e.get("cat") in kinds)
            want = collections.Counter((op["type"], op["correlation"]) for op in truth.of_type(lines, *truth.DEVICE_OPS)
                                       if op["pid"] == pid and lo <= op["correlation"] <= hi)
            self.assertGreater(sum(want.values()), 500)
            self.assertEqual(got - want, collections.Counter(), "recorded, but not launched inside the window")
            self.assertEqual(want - got, collections.Counter(), "launched inside the window, missing")
            ok, text = validate(path)
            self.assertTrue(ok, text)
        self.each_mode(check)

    def test_kernels_carry_their_call_and_python_line(self):
        def check(mode, rc, stdout, stderr, maps, out, lines):
            path, trace = self.window(out)
            events = trace["traceEvents"]
            main_tid = trace["libprof"]["pid"]
            calls = {e["args"]["correlation"]: e for e in events
                     if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
            python = [e for e in events if e.get("ph") == "X" and e.get("cat") == "python_function"]
            by_tid = collections.defaultdict(list)
            for e in python:
                by_tid[e["tid"]].append(e)

            def stack(call):
                return [e["name"] for e in by_tid[call["tid"]]
                        if e["ts"] <= call["ts"] and call["ts"] + call["dur"] <= e["ts"] + e["dur"] + 1e-3]

            kernels = [e for e in events if e.get("cat") == "kernel"]
            backward = 0
            for k in kernels:
                call = calls.get(k["args"]["correlation"])
                self.assertIsNotNone(call, f"no launching call for {k['name'][:80]}")
                names = stack(call)
                self.assertTrue(any("torch_train.py" in n for n in names), (k["name"][:80], names[:3]))
                if call["tid"] != main_tid:
                    backward += 1
                    self.assertTrue(any(f"torch_train.py({BACKWARD_LINE})" in n and "via thread" in n for n in names),
                                    (k["name"][:80], names))
            self.assertGreater(backward, 100, "autograd's thread launched the backward kernels")
        self.each_mode(check)

    def test_dataloader_workers_write_nothing_and_findings_are_true(self):
        def check(mode, rc, stdout, stderr, maps, out, lines):
            path, trace = self.window(out)
            names = os.listdir(out)
            pid = trace["libprof"]["pid"]
            self.assertTrue(all(f"_{pid}." in n for n in names), names)
            with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
                summary = f.read()
            found = re.findall(r"^ \[([\w-]+)\]", summary.split("== Findings ==")[1].split("\n== ")[0], re.M)
            # The loss is read back (loss.item()) every 10th step only: none of
            # steps 32-36 synchronizes, and the summary says no such thing.
            events = trace["traceEvents"]
            syncs = [e["name"] for e in events if e.get("cat") == "cuda_runtime" and "Synchronize" in e["name"]]
            self.assertEqual(syncs, [])
            self.assertNotIn("sync-in-step", found)
            self.assertNotIn("partial-window", found)
            # Kernels of a few microseconds launched from Python: the GPU waits
            # for the host, which the overhead-bound finding says with its numbers.
            self.assertIn("overhead-bound", found)
            busy = float(re.search(r"GPU busy ([\d.]+)% of", summary).group(1))
            self.assertLess(busy, 50)
        self.each_mode(check)

    def test_the_report_page_shows_pytorchs_kernel_names_whole(self):
        chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
        if not os.access(chromium, os.X_OK):
            harness.unavailable("chromium", f"{chromium} is not installed (scripts/setup-deps.sh installs Debian's)")
        python = harness.need_venv("playwright")
        probe = os.path.join(HERE, "..", "browser", "probe_page.py")
        mode, run = next(iter(self.runs.items()))
        path, trace = self.window(run[4])
        page = path.replace(".pt.trace.json", ".report.html")
        shot = os.path.join(self.work, "torch-report.png")
        proc = subprocess.run([python, probe, page, shot], capture_output=True, text=True, timeout=240,
                              env=dict(os.environ, CHROMIUM=chromium))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        result = json.loads(proc.stdout)
        self.assertEqual(result["errors"], [], "console errors")
        kernels = result["tables"]["table-kernels"]
        names = [row[-1] for row in kernels["rows"]]
        traced = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel"}
        self.assertEqual(set(names), traced)
        # PyTorch's templated names differ only near their end: every row shows whole.
        self.assertTrue(any(n.startswith("void at::native::elementwise_kernel<") for n in names), names[:5])
        self.assertEqual(kernels["clipped"], [])

class TorchJiteratorOnTheSim(unittest.TestCase):
    """PyTorch's jiterator: NVIDIA's real NVRTC compiles the kernel (it asks
    the sim's driver for a private table, which the sim answers with
    CUDA_ERROR_NOT_FOUND, and goes on), the driver loads the cubin and finds
    the kernel by name, and cuLaunchKernel runs it."""

    def test_nvrtc_compiled_kernels_load_and_launch_through_the_driver(self):
        harness.need(SIMRUN)
        python = harness.need_venv("torch")
        with tempfile.TemporaryDirectory() as tmp:
            truth_path = os.path.join(tmp, "truth.jsonl")
            script = ("import torch\n"
                      "x = torch.randn(1000, device='cuda')\n"
                      "torch.special.airy_ai(x); torch.special.bessel_j0(x)\n"
                      "torch.cuda.synchronize()\n")
            proc = subprocess.run([SIMRUN, python, "-c", script], capture_output=True, text=True, timeout=300,
                                  env=harness.clean_env(SIM_TRUTH_FILE=truth_path))
            self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
            lines = truth.read(truth_path)
        kernels = {k["name"]: k for k in truth.of_type(lines, "kernel")}
        for name in ("airy_ai_forward_vectorized4_kernel", "bessel_j0_forward_vectorized4_kernel"):
            self.assertIn(name, kernels)
            self.assertEqual(kernels[name]["api"], "cuLaunchKernel")
        loads = [a for a in truth.api(lines) if a["name"] == "cuModuleLoadData"]
        self.assertEqual(len(loads), 2)
        self.assertTrue(all(a["result"] == 0 for a in loads))



def validate(path):
    if not (harness.PROF_TOOL and os.path.exists(harness.PROF_TOOL)):
        return True, "prof not built"
    p = subprocess.run([harness.PROF_TOOL, "validate", path], capture_output=True, text=True, timeout=120)
    return p.returncode == 0, p.stdout + p.stderr


if __name__ == "__main__":
    harness.main()
