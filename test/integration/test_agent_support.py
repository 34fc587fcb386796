"""Helpers shared by the agent's integration tests (test_agent_*.py): run a
workload under libprof on the simulated stack, read the windows it wrote,
and cut the sim's truth log into steps the way each step source does."""
import atexit
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402,F401  (re-exported for the tests)

# What the interposer wraps (model/api_ids.h), as names in the trace.
INTERCEPTED = {
    "cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
    "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz", "cudaGraphLaunch", "cudaGraphLaunch_ptsz",
    "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz", "cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync",
    "cudaMemcpyAsync_ptsz", "cudaMemcpy2D", "cudaMemcpy2D_ptds", "cudaMemcpy2DAsync", "cudaMemcpy2DAsync_ptsz",
    "cudaMemcpyPeer", "cudaMemcpyPeerAsync", "cudaMemset", "cudaMemset_ptds", "cudaMemsetAsync",
    "cudaMemsetAsync_ptsz", "cudaMemset2D", "cudaMemset2DAsync", "cudaDeviceSynchronize", "cudaStreamSynchronize",
    "cudaStreamSynchronize_ptsz", "cudaEventSynchronize", "cudaStreamWaitEvent", "cudaStreamWaitEvent_ptsz",
    "cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaFreeAsync", "cudaFreeAsync_ptsz",
    "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
    "cudaMallocManaged", "cudaMallocPitch", "__cudaRegisterFunction", "cuMemAlloc_v2", "cuMemFree_v2",
    "cuMemAllocAsync", "cuMemFreeAsync", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
}
API_CATS = ("cuda_runtime", "cuda_driver")


def workload(name):
    return os.path.join(harness.WORKLOAD_DIR, name)


# Skip (exit 77 through unittest's SkipTest) when a built file is missing.
need = harness.need


class Run:
    """One process under libprof: its result, the windows it wrote, the truth."""

    def __init__(self, proc, out_dir, truth_lines):
        self.proc = proc
        self.out_dir = out_dir
        self.truth = truth_lines
        self.traces = []
        for path in glob.glob(os.path.join(out_dir, "*.pt.trace.json")):
            with open(path) as f:
                self.traces.append((path, json.load(f)))
        self.traces.sort(key=lambda t: (t[1]["libprof"]["pid"], t[1]["libprof"]["window"]["first_step"]))

    def windows(self, pid=None):
        return [(w["libprof"]["window"]["first_step"], w["libprof"]["window"]["last_step"])
                for _, w in self.traces if pid is None or w["libprof"]["pid"] == pid]

    def log_lines(self):
        return [l for l in self.proc.stderr.splitlines() if l.startswith("[libprof]")]


def run_agent(cmd, sim=True, preload=True, timeout=120, **env):
    """Runs cmd with LD_PRELOAD=libprof.so (and the sim, SIM_TRUTH_FILE set)."""
    out_dir = tempfile.mkdtemp(prefix="libprof-agent-")
    # Tests still read the files (validate(path)) after this returns: remove
    # them when the test process ends, not never (CI machines kept thousands).
    atexit.register(shutil.rmtree, out_dir, ignore_errors=True)
    truth_path = os.path.join(out_dir, "truth.jsonl")
    extra = {"PROF_OUTPUT_DIR": os.path.join(out_dir, "traces"), "PROF_FLUSH_TIMEOUT_MS": "500"}
    extra.update(env)
    if preload:
        extra["LD_PRELOAD"] = harness.LIBPROF_SO
    if sim:
        extra["SIM_TRUTH_FILE"] = truth_path
        e = harness.sim_env(**extra)
    else:
        e = harness.clean_env(**extra)
    proc = harness.run(cmd, e, timeout=timeout)
    return Run(proc, extra["PROF_OUTPUT_DIR"], truth.read(truth_path))


def api_events(trace):
    """The intercepted calls in one window's trace, in time order (the trace
    also carries CUPTI's records of calls we do not wrap, e.g. cudaEventRecord)."""
    return sorted((e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in API_CATS
                   and e.get("name") in INTERCEPTED),
                  key=lambda e: (e["ts"], e["args"].get("correlation", 0)))


def step_spans(trace):
    return sorted((e for e in trace["traceEvents"]
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")),
                  key=lambda e: e["ts"])


def outermost_calls(lines, pid=None):
    """Truth: the intercepted calls the process made itself (not the runtime's
    nested driver calls), in time order per thread."""
    calls = [l for l in truth.api(lines) if l["correlation"] == l["outer_correlation"]
             and l["name"] in INTERCEPTED and (pid is None or l["pid"] == pid)]
    return sorted(calls, key=lambda l: (l["start_ns"], l["correlation"]))


def split_steps(calls, starts_step=None, ends_step=None):
    """Cuts one thread's calls into steps as torch's prof.step() would: a call
    for which starts_step(call) is true opens a new step (it belongs to it);
    one for which ends_step(call) is true closes the current step (it belongs
    to it). Returns {step: [calls]}."""
    steps = {}
    step = 0
    for c in calls:
        if starts_step and starts_step(c):
            step += 1
        steps.setdefault(step, []).append(c)
        if ends_step and ends_step(c):
            step += 1
    return steps


def schedule(step, skip_first, wait, warmup, active, repeat):
    """torch.profiler.schedule, for the expected windows."""
    if step < skip_first:
        return "NONE"
    step -= skip_first
    n = wait + warmup + active
    if repeat > 0 and step // n >= repeat:
        return "NONE"
    mod = step % n
    if mod < wait:
        return "NONE"
    if mod < wait + warmup:
        return "WARMUP"
    return "RECORD" if mod < n - 1 else "RECORD_AND_SAVE"


def expected_windows(total_steps, skip_first, wait, warmup, active, repeat):
    """Windows (first, last) that complete within steps 0..total_steps-1."""
    windows, first = [], None
    for s in range(total_steps):
        a = schedule(s, skip_first, wait, warmup, active, repeat)
        if a in ("RECORD", "RECORD_AND_SAVE") and first is None:
            first = s
        if a == "RECORD_AND_SAVE":
            windows.append((first, s))
            first = None
    return windows


def validate(path):
    """`prof validate` on a written trace: (ok, output)."""
    if not harness.PROF_TOOL or not os.path.exists(harness.PROF_TOOL):
        return True, "prof not built"
    p = subprocess.run([harness.PROF_TOOL, "validate", path], capture_output=True, text=True, timeout=60)
    return p.returncode == 0, p.stdout + p.stderr
