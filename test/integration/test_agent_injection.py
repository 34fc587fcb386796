"""libprof loaded the way NVIDIA's driver loads tools: CUDA_INJECTION64_PATH
alone, no LD_PRELOAD. The simulated driver, like the real one, dlopens the
library at the first cuInit and calls InitializeInjection(). The agent's
wrappers then do not interpose anything (the library is not in the global
scope), so everything in the window must come through CUPTI.

Proves: the host's stdout and exit status are unchanged; a time-stepped
window is written and validates; its kernels are exactly the sim's kernels
launched in the window (by correlation, with the sim's durations); the API
calls in it come from CUPTI (host events recorded from its callbacks,
args["via CUPTI callbacks"], or its API records, args.source == "cupti") and
each kernel is tied to the call that launched it.

LoadedProcess: the same program in a process whose loader has no static TLS
left for libraries loaded later, as in a PyTorch process by the time CUDA
dlopens the injection library (glibc's tunable
glibc.rtld.optional_static_tls=0 makes that condition without PyTorch).
libprof.so loads there in both modes (and through NVTX_INJECTION64_PATH)
and writes the window of the sim's kernels, also through libprof-inject.so.

InjectLoaderSaysWhy: CUDA_INJECTION64_PATH=libprof-inject.so beside a
libprof.so that cannot load says so on stderr (NVIDIA's driver is silent).
"""
import glob
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness


TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
ARGS = [TRAIN_LOOP, "--steps", "100", "--host-sleep-us", "2000"]
SCHEDULE = dict(PROF_STEP="time:20ms", PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=1)


class InjectionOnly(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, TRAIN_LOOP)
        cls.tmp = tempfile.TemporaryDirectory()
        out = os.path.join(cls.tmp.name, "out")
        truth = os.path.join(cls.tmp.name, "truth.jsonl")
        cls.bare = harness.run(ARGS, harness.sim_env())
        cls.profiled = harness.run(ARGS, harness.sim_env(CUDA_INJECTION64_PATH=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out,
                                                    SIM_TRUTH_FILE=truth, **SCHEDULE))
        cls.traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
        cls.summaries = sorted(glob.glob(os.path.join(out, "*.summary.txt")))
        with open(truth) as f:
            cls.truth = [json.loads(l) for l in f if l.startswith("{")]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def trace(self):
        with open(self.traces[0]) as f:
            return json.load(f)

    def test_host_output_and_exit_status_unchanged(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stderr)
        self.assertEqual(self.profiled.returncode, self.bare.returncode, self.profiled.stderr)
        self.assertEqual(self.profiled.stdout, self.bare.stdout)

    def test_one_window_written_and_valid(self):
        self.assertEqual(len(self.traces), 1, self.profiled.stderr)
        self.assertEqual(len(self.summaries), 1)
        check = subprocess.run([harness.PROF_TOOL, "validate", self.traces[0]], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        meta = self.trace()["libprof"]
        self.assertEqual(meta["cupti_mode"], "activity")

    def test_kernels_are_the_sims_kernels_with_their_durations(self):
        kernels = [e for e in self.trace()["traceEvents"] if e.get("cat") == "kernel"]
        self.assertGreater(len(kernels), 0)
        truth = {t["correlation"]: t for t in self.truth if t.get("type") == "kernel"}
        ids = [k["args"]["correlation"] for k in kernels]
        self.assertEqual(len(ids), len(set(ids)), "a kernel appears twice")
        for k in kernels:
            op = truth.get(k["args"]["correlation"])
            self.assertIsNotNone(op, f"kernel {k['name']} is not in the truth log")
            self.assertAlmostEqual(harness.true_dur_ns(k), op["end_rep_ns"] - op["start_rep_ns"], delta=2)
        # Every kernel the sim ran between the window's first and last kernel is there.
        first, last = min(ids), max(ids)
        expected = {c for c in truth if first <= c <= last}
        self.assertEqual(set(ids), expected)

    def test_copies_memsets_and_syncs_are_the_sims_ops_with_their_durations(self):
        events = self.trace()["traceEvents"]
        device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        first = min(e["args"]["correlation"] for e in device)
        last = max(e["args"]["correlation"] for e in device)
        for cat, kind in (("gpu_memcpy", "memcpy"), ("gpu_memset", "memset"), ("cuda_sync", "sync")):
            got = [e for e in events if e.get("cat") == cat]
            self.assertGreater(len(got), 0, cat)
            truth = {t["correlation"]: t for t in self.truth if t.get("type") == kind}
            ids = [e["args"]["correlation"] for e in got]
            self.assertEqual(len(ids), len(set(ids)), f"{cat}: an op appears twice")
            for e in got:
                op = truth.get(e["args"]["correlation"])
                self.assertIsNotNone(op, f"{cat} {e['name']} is not in the truth log")
                if cat != "cuda_sync":
                    self.assertAlmostEqual(harness.true_dur_ns(e), op["end_rep_ns"] - op["start_rep_ns"], delta=2)
            if cat != "cuda_sync":
                # Every such op the sim ran between the window's first and last
                # device op is there.
                self.assertEqual(set(ids), {c for c in truth if first <= c <= last}, cat)

    def test_the_summary_says_cupti_activity(self):
        with open(self.summaries[0]) as f:
            self.assertIn("CUPTI: activity", f.read())

    def test_api_calls_come_from_cupti_and_tie_to_their_kernels(self):
        events = self.trace()["traceEvents"]
        calls = [e for e in events if e.get("cat") == "cuda_runtime"]
        self.assertGreater(len(calls), 0)
        # Every call came through CUPTI: those of the event model as the host
        # event a wrapper would write, recorded from the callbacks; the others
        # as CUPTI's API record.
        self.assertEqual({"cupti" if c["args"].get("via CUPTI callbacks") else c["args"].get("source") for c in calls},
                         {"cupti"}, "with CUDA_INJECTION64_PATH alone no wrapper should have bound")
        self.assertTrue(any(c["args"].get("via CUPTI callbacks") for c in calls))
        by_corr = {c["args"]["correlation"]: c for c in calls}
        for k in (e for e in events if e.get("cat") == "kernel"):
            call = by_corr.get(k["args"]["correlation"])
            self.assertIsNotNone(call, f"no launching call for {k['name']}")
            self.assertIn("LaunchKernel", call["name"])
            self.assertGreaterEqual(k["ts"], call["ts"])


# No static TLS surplus for libraries loaded after start-up.
NO_STATIC_TLS_SURPLUS = "glibc.rtld.optional_static_tls=0"
# A library whose initial-exec thread-locals need a static TLS block of
# {size} bytes.
STATIC_TLS_LIB_SOURCE = """
__attribute__((tls_model("initial-exec"))) __thread char static_tls_block[{size}];
int touch_static_tls(void) {{ return ++static_tls_block[0]; }}
"""
# What CUDA_INJECTION64_PATH may name instead of libprof.so: it loads
# libprof.so from its folder and says on stderr when that fails.
INJECT_LOADER_SO = os.path.join(os.path.dirname(harness.LIBPROF_SO), "libprof-inject.so") if harness.LIBPROF_SO else ""


def static_tls_library(test, folder, name):
    """Builds, in folder, a library needing as much static TLS as libprof.so
    has thread-locals (at least 1 KiB); skips test without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        test.skipTest("no C compiler to build a library with static TLS")
    segment = [l.split() for l in subprocess.run(["readelf", "-lW", harness.LIBPROF_SO], capture_output=True,
                                                 text=True, check=True).stdout.splitlines()
               if l.split()[:1] == ["TLS"]]
    size = max(int(segment[0][5], 16), 1024) if segment else 1024
    src = os.path.join(folder, "static_tls.c")
    lib = os.path.join(folder, name)
    with open(src, "w") as f:
        f.write(STATIC_TLS_LIB_SOURCE.format(size=size))
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True, capture_output=True)
    return lib


class LoadedProcess(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, INJECT_LOADER_SO, TRAIN_LOOP)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.bare = harness.run(ARGS, harness.sim_env(GLIBC_TUNABLES=NO_STATIC_TLS_SURPLUS))
        cls.runs = {}
        for mode, variable, lib in (("LD_PRELOAD", "LD_PRELOAD", harness.LIBPROF_SO),
                                    ("CUDA_INJECTION64_PATH", "CUDA_INJECTION64_PATH", harness.LIBPROF_SO),
                                    ("libprof-inject.so", "CUDA_INJECTION64_PATH", INJECT_LOADER_SO)):
            out = os.path.join(cls.tmp.name, mode)
            truth = out + ".truth.jsonl"
            env = harness.sim_env(GLIBC_TUNABLES=NO_STATIC_TLS_SURPLUS, PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth,
                                  **SCHEDULE)
            env[variable] = lib
            env["NVTX_INJECTION64_PATH"] = lib  # NVTX dlopens it too (prof run sets it)
            cls.runs[mode] = (harness.run(ARGS, env), out, truth)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_condition_holds_a_library_with_libprofs_tls_as_static_tls_cannot_be_dlopened(self):
        # Shows the tunable really leaves no room for a block the size of
        # libprof.so's own, so the runs below are the condition and not a
        # pass by default (glibc also keeps a little room that the tunable
        # does not remove: smaller blocks may still fit).
        lib = static_tls_library(self, self.tmp.name, "libstatic_tls.so")
        load = "import ctypes, sys\ntry:\n    ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n    print(e)\n"
        tight = harness.run(["python3", "-c", load, lib], harness.clean_env(GLIBC_TUNABLES=NO_STATIC_TLS_SURPLUS))
        self.assertIn("cannot allocate memory in static TLS block", tight.stdout)

    def test_each_mode_writes_one_window_of_the_sims_kernels(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stderr)
        for mode, (proc, out, truth_path) in self.runs.items():
            with self.subTest(mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(proc.stdout, self.bare.stdout)
                self.assertNotIn("[libprof] error", proc.stderr)
                traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
                self.assertEqual(len(traces), 1, f"{mode}: no window in a process without static TLS room; "
                                                  f"stderr: {proc.stderr}")
                with open(traces[0]) as f:
                    events = json.load(f)["traceEvents"]
                kernels = [e for e in events if e.get("cat") == "kernel"]
                # NVTX's dlopen of it worked as well: the program's ranges are there.
                self.assertIn("train_step", {e["name"] for e in events if e.get("cat") == "user_annotation"})
                with open(truth_path) as f:
                    truth = {t["correlation"] for t in map(json.loads, (l for l in f if l.startswith("{")))
                             if t.get("type") == "kernel"}
                ids = [k["args"]["correlation"] for k in kernels]
                self.assertGreater(len(ids), 0)
                self.assertEqual(len(ids), len(set(ids)), "a kernel appears twice")
                # Exactly the kernels the sim ran between the window's first and last.
                self.assertEqual(set(ids), {c for c in truth if min(ids) <= c <= max(ids)})


class InjectLoaderSaysWhy(unittest.TestCase):
    """libprof-inject.so beside a libprof.so that cannot load: NVIDIA's driver
    would say nothing; the loader says which file and why, once, and the
    program runs on as without libprof."""

    def run_beside(self, make_agent, **env):
        harness.need(INJECT_LOADER_SO, TRAIN_LOOP)
        folder = harness.scratch_dir(self, "inject-loader-")
        loader = os.path.join(folder, "libprof-inject.so")
        shutil.copy(INJECT_LOADER_SO, loader)
        agent = make_agent(folder)
        bare = harness.run(ARGS[:1] + ["--steps", "10"], harness.sim_env(**env))
        proc = harness.run(ARGS[:1] + ["--steps", "10"], harness.sim_env(CUDA_INJECTION64_PATH=loader, **env))
        self.assertEqual(proc.returncode, bare.returncode, proc.stderr)
        self.assertEqual(proc.stdout, bare.stdout)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("[libprof]")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(f"[libprof] error: CUDA_INJECTION64_PATH: {agent} cannot be loaded (", lines[0])
        self.assertIn("this process is not profiled", lines[0])
        return lines[0]

    def test_a_file_that_is_no_library(self):
        def garbage(folder):
            path = os.path.join(folder, "libprof.so")
            with open(path, "w") as f:
                f.write("not a library\n")
            return path
        self.run_beside(garbage)

    def test_a_library_that_needs_static_tls_in_a_process_with_none_left(self):
        line = self.run_beside(lambda folder: static_tls_library(self, folder, "libprof.so"),
                               GLIBC_TUNABLES=NO_STATIC_TLS_SURPLUS)
        self.assertIn("cannot allocate memory in static TLS block", line)


if __name__ == "__main__":
    harness.main()
