"""Shared helpers for integration tests: paths from CTest's environment,
running a process under libprof, and reading what it wrote."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

LIBPROF_SO = os.environ.get("LIBPROF_SO", "")
PROF_TOOL = os.environ.get("PROF_TOOL", "")
SIM_LIB_DIR = os.environ.get("SIM_LIB_DIR", "")
WORKLOAD_DIR = os.environ.get("WORKLOAD_DIR", "")
# Which personality of the simulated stack a test runs on (CMakeLists.txt
# registers the window tests once per personality): "13" (lib/, workloads
# built by nvcc 13) or "12" (lib12/: libcudart.so.12, CUPTI 12.4; workloads
# with nvcc 12's host code, in workloads/cuda12).
SIM_PERSONALITY = os.environ.get("SIM_PERSONALITY", "13")
if SIM_PERSONALITY == "12":
    SIM_LIB_DIR = os.environ.get("SIM12_LIB_DIR", "")
    WORKLOAD_DIR = os.path.join(WORKLOAD_DIR, "cuda12")
# The sonames of the personality's runtime and CUPTI.
CUDART_SONAME = "libcudart.so." + SIM_PERSONALITY
CUPTI_SONAME = "libcupti.so." + SIM_PERSONALITY
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
KINETO_TRACES = os.environ.get("KINETO_TRACES", "")


# scripts/sanitize.sh: the ASan/UBSan runtimes every child process must load
# first (it runs uninstrumented programs that load instrumented libraries).
SANITIZER_PRELOAD = os.environ.get("LIBPROF_SANITIZER_PRELOAD", "")
# Set by scripts/sanitize.sh: checks of timing or memory that sanitizers distort skip themselves.
SANITIZED = bool(os.environ.get("LIBPROF_SANITIZED"))

if SANITIZER_PRELOAD:
    _popen_init = subprocess.Popen.__init__

    def _popen_with_sanitizer_runtime(self, *args, **kwargs):
        env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
        preload = env.get("LD_PRELOAD", "")
        if not preload.startswith(SANITIZER_PRELOAD):
            env["LD_PRELOAD"] = SANITIZER_PRELOAD + (":" + preload if preload else "")
        kwargs["env"] = env
        _popen_init(self, *args, **kwargs)

    subprocess.Popen.__init__ = _popen_with_sanitizer_runtime


def without_sanitizer_preload(preload):
    """An LD_PRELOAD value as the test set it (without scripts/sanitize.sh's runtimes in front)."""
    if SANITIZER_PRELOAD and preload.startswith(SANITIZER_PRELOAD):
        return preload[len(SANITIZER_PRELOAD):].lstrip(":")
    return preload


def need(*paths):
    """Skips the calling test (or its class, from setUpClass) when a file it
    runs is not built: CTest's path variables are empty or name nothing."""
    for p in paths:
        if not p or not os.path.exists(p):
            raise unittest.SkipTest(f"{p or 'a path CTest did not set'} is not built")


# CI sets CI=true (.ci/run does too): there a registry or tool that is not
# reachable is a broken set-up, and the test that needs it fails.
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The tests' Python environment (scripts/python-venv.sh; CTest passes its path).
VENV = os.environ.get("PROF_TEST_VENV", "")
VENV_PYTHON = os.path.join(VENV, "bin", "python") if VENV else ""
# The lines unavailable() skipped with: main() then reports the whole file as
# skipped to CTest, even when its other tests passed.
UNAVAILABLE = []


def unavailable(what, why):
    """Stops the calling test (or its class, from setUpClass) because a
    registry or tool it needs is not there: outside CI it skips with one line
    naming `what` and `why`; under CI=true it fails with that line, so a broken
    install never passes as a green run."""
    line = f"{what} unavailable: {why}"
    if CI:
        raise AssertionError(line + " (CI=true: a missing tool fails the test)")
    UNAVAILABLE.append(line)
    raise unittest.SkipTest(line)


def need_venv(*modules):
    """The venv's python, once it imports `modules`; else unavailable(): the
    reason scripts/python-venv.sh wrote when PyPI could not be reached, or
    what is missing."""
    if not VENV_PYTHON:
        unavailable("the tests' venv", "PROF_TEST_VENV is not set (run the test through CTest)")
    marker = os.path.join(VENV, "unreachable")
    if os.path.exists(marker):
        with open(marker) as f:
            unavailable(", ".join(modules) or "the tests' venv", f.read().strip())
    if not os.access(VENV_PYTHON, os.X_OK):
        unavailable("the tests' venv", f"{VENV_PYTHON} is missing (scripts/setup-deps.sh makes it)")
    proc = subprocess.run([VENV_PYTHON, "-c", "import " + ", ".join(modules or ("sys",))],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        unavailable(", ".join(modules), f"{VENV_PYTHON} cannot import them ({last}; scripts/setup-deps.sh installs them)")
    return VENV_PYTHON


def clean_env(**extra):
    """The caller's environment without any PROF_*/SIM_* leaking in, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("PROF_") or k.startswith("SIM_"))
           and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def sim_env(**extra):
    """Environment that makes a process load the simulated CUDA stack."""
    env = clean_env(**extra)
    env["LD_LIBRARY_PATH"] = SIM_LIB_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run(cmd, env, timeout=120, **kw):
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def run_sim_script(source, read_truth, **env):
    """Runs Python `source` in a child process on the sim (a fresh stack and
    truth log per call; SIM_LIB_DIR names the sim's folder), which prints one
    "key value" line per check. Returns ({key: value}, the truth log's lines
    as read_truth(path) reads them); a failing child fails the caller."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "truth.jsonl")
        proc = run([sys.executable, "-c", source], sim_env(SIM_TRUTH_FILE=path, SIM_LIB_DIR=SIM_LIB_DIR, **env))
        lines = read_truth(path)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr)
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines()), lines


def scratch_dir(test, prefix):
    """A new temporary directory that test removes when it ends (a run's truth
    log and traces can take hundreds of MB; a long test session must not fill
    the disk with them)."""
    path = tempfile.mkdtemp(prefix=prefix)
    test.addCleanup(shutil.rmtree, path, ignore_errors=True)
    return path


INJECTION_MODES = ("LD_PRELOAD", "CUDA_INJECTION64_PATH")


def run_in_each_mode(cmd, work_dir, **prof):
    """Runs cmd on the sim under LD_PRELOAD and under CUDA_INJECTION64_PATH,
    each with its own output directory and truth log in work_dir. Returns
    {mode: (completed process, output directory, truth log path)}."""
    runs = {}
    for mode in INJECTION_MODES:
        out = os.path.join(work_dir, mode)
        truth_path = os.path.join(work_dir, mode + ".truth.jsonl")
        env = sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, **prof)
        env[mode] = LIBPROF_SO
        runs[mode] = (run(cmd, env), out, truth_path)
    return runs


# What libprof's own threads (the writer: versions and device properties for
# a window's metadata) call; a thread that calls nothing else is libprof's.
OWN_THREAD_CALLS = {"cudaRuntimeGetVersion", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
                    "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute"}
# Under LD_PRELOAD the allocation wrappers ask for the current device right
# after the allocation returns, on the allocating thread.
ALLOCATIONS = {"cudaMalloc", "cudaMallocManaged", "cudaMallocPitch", "cudaMallocAsync", "cudaMallocAsync_ptsz",
               "cudaMallocFromPoolAsync", "cudaMallocFromPoolAsync_ptsz", "cuMemAlloc_v2"}
DEVICE_QUERIES = {"cudaGetDevice", "cuCtxGetDevice"}


def own_calls(lines):
    """The calls in a truth log that libprof made itself, not the program:
    every call of a thread that makes only OWN_THREAD_CALLS, and a device
    query that directly follows an allocation on the same thread (the
    allocation wrappers' own; if the program makes one there too, one of the
    two is counted as libprof's, which keeps per-API counts right)."""
    outer = [l for l in lines if l.get("type") == "api" and l["correlation"] == l["outer_correlation"]]
    by_thread = {}
    for l in outer:
        by_thread.setdefault(l["thread"], []).append(l)
    own = []
    for calls in by_thread.values():
        if all(c["name"] in OWN_THREAD_CALLS for c in calls):
            own.extend(calls)
            continue
        own.extend(c for prev, c in zip(calls, calls[1:]) if c["name"] in DEVICE_QUERIES and prev["name"] in ALLOCATIONS)
    return own


def summary_table(text, title):
    """Rows (lists of cells) of the summary table under `== <title> ==`."""
    lines = text.split("== " + title + " ==\n", 1)[1].split("\n")
    rows = []
    for line in lines[2:]:
        if not line.strip() or line.startswith("=="):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def main():
    """Run the module's tests. unittest exits 0 when every test was skipped,
    which CTest would report as passed; exit 77 (CTest's skip code) then, so a
    run that proved nothing shows as skipped, and also when a test skipped
    because a registry or tool was unavailable (unavailable()), so that the
    skip is counted whatever else passed."""
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if UNAVAILABLE:
        print("skipped, unavailable: " + "; ".join(sorted(set(UNAVAILABLE))), file=sys.stderr)
        sys.exit(77)
    # A class skipped in setUpClass counts as a skip with no test run.
    if result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0)


def true_dur_ns(event):
    """A slice's duration in ns as libprof measured it: a slice that overlaps
    the one before it on its track is clipped to nest in the trace, and its
    true duration kept in args["unclipped dur"] (what `prof` reads). Ops one
    stream runs one after the other can overlap by microseconds on the
    reported clock, whose map from the GPU's is re-measured as the process
    runs (sampling jitter on a loaded machine)."""
    return event.get("args", {}).get("unclipped dur", event["dur"]) * 1000
