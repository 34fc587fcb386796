"""The simulated stack runs the API families ordinary CUDA programs call
beyond launches and plain copies (test/workloads/api_families.cu), with
CUDA's documented results, and libprof records them in both of its modes.

Proves: every family gives the documented values and error codes on the
sim; host functions run after the work before them and before the
synchronize that covers them returns; synchronisation records span the
driver's cost and the wake-up after the work (README "Timing model");
under LD_PRELOAD and under CUDA_INJECTION64_PATH one window over the whole
run holds exactly the sim's kernels, copies and memsets (by correlation)
and each family's calls as many times as the program made them, with the
program's output and exit status unchanged.
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth  # noqa: E402

WORKLOAD = os.path.join(harness.WORKLOAD_DIR, "api_families")
ONE_WINDOW = dict(PROF_STEP="time:60s", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=1, PROF_REPEAT=1)
# One call per family the program makes that libprof itself never makes.
FAMILY_CALLS = ["cudaProfilerStart", "cudaProfilerStop", "cudaSetDeviceFlags", "cudaGetDeviceFlags",
                "cudaDeviceSetLimit", "cudaDeviceGetLimit", "cudaFuncGetAttributes", "cudaFuncSetAttribute",
                "cudaFuncSetCacheConfig", "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
                "cudaOccupancyAvailableDynamicSMemPerBlock", "cudaLaunchHostFunc", "cudaStreamAddCallback",
                "cudaMemPrefetchAsync", "cudaMemAdvise", "cudaMemPoolCreate", "cudaMemPoolSetAttribute",
                "cudaMemPoolGetAttribute", "cudaMemPoolSetAccess", "cudaMemPoolGetAccess", "cudaMemPoolDestroy",
                "cudaDeviceCanAccessPeer", "cudaDeviceEnablePeerAccess", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
                "cudaMemcpyToSymbolAsync", "cudaGetSymbolAddress", "cudaGetSymbolSize", "cudaMallocArray",
                "cudaMalloc3DArray", "cudaMemcpy2DToArray", "cudaMemcpy2DFromArray", "cudaMemcpy2DArrayToArray",
                "cudaMemcpy3D", "cudaMemcpy3DAsync", "cudaMalloc3D", "cudaMemset3D", "cudaCreateTextureObject",
                "cudaCreateSurfaceObject", "cudaDestroyTextureObject", "cudaFreeArray", "cudaHostRegister",
                "cudaHostGetDevicePointer", "cudaHostUnregister", "cudaGraphCreate", "cudaGraphAddKernelNode",
                "cudaGraphAddMemsetNode", "cudaGraphAddMemcpyNode1D", "cudaGraphAddHostNode", "cudaGraphAddEmptyNode",
                "cudaGraphAddDependencies", "cudaGraphAddEventRecordNode", "cudaGraphUpload", "cudaGraphExecUpdate",
                "cudaGraphLaunch", "cudaStreamBeginCapture", "cudaIpcGetMemHandle", "cudaIpcOpenMemHandle",
                "cudaIpcGetEventHandle", "cudaGraphConditionalHandleCreate", "cudaGraphAddNode"]
DRIVER_API = os.path.join(harness.WORKLOAD_DIR, "driver_api")
DRIVER_ARGS = [DRIVER_API, "--cubin", os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.cubin"),
               "--fatbin", os.path.join(harness.WORKLOAD_DIR, "driver_api_kernels.fatbin")]
# CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind (cupti_activity.h).
HTOD, DTOH, HTOA, ATOH, ATOA, ATOD, DTOA, DTOD = 1, 2, 3, 4, 5, 6, 7, 8
PAGEABLE, DEVICE, ARRAY, DEVICE_STATIC = 1, 3, 4, 6


def load_truth(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.startswith("{")]


class Bare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(WORKLOAD)
        cls.tmp = tempfile.TemporaryDirectory()
        truth = os.path.join(cls.tmp.name, "truth.jsonl")
        cls.proc = harness.run([WORKLOAD, "--iterations", "2"], harness.sim_env(SIM_TRUTH_FILE=truth))
        cls.truth = load_truth(truth)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_family_gives_the_documented_results(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        families = subprocess.run([WORKLOAD, "--list"], capture_output=True, text=True).stdout.split()
        self.assertGreaterEqual(len(families), 7)
        for name in families:
            self.assertIn(f"family {name} ok", self.proc.stdout)

    def test_host_functions_run_after_prior_work_and_before_the_covering_sync_returns(self):
        stream_calls = {t["correlation"] for t in self.truth if t["type"] == "api"
                        and t["name"] in ("cudaLaunchHostFunc", "cudaStreamAddCallback")}
        host = [t for t in self.truth if t["type"] == "host_func" and t["correlation"] in stream_calls]
        self.assertEqual(len(host), 4)  # two per iteration
        kernels = [t for t in self.truth if t["type"] == "kernel"]
        syncs = [t for t in self.truth if t["type"] == "sync" and t["api"] == "cudaStreamSynchronize"]
        for h in host:
            self.assertGreaterEqual(h["start_ns"], h["ready_ns"])
            before = [k for k in kernels if k["stream"] == h["stream"] and k["correlation"] < h["correlation"]]
            self.assertTrue(before)
            self.assertGreaterEqual(h["start_ns"], max(k["end_ns"] for k in before))
            covering = [s for s in syncs if s["stream"] == h["stream"] and s["correlation"] > h["correlation"]]
            self.assertTrue(covering, h)
            self.assertGreaterEqual(min(s["end_ns"] for s in covering), h["end_ns"])

    def test_symbol_and_array_copies_are_recorded_as_cupti_documents(self):
        copies = collections.defaultdict(set)
        for t in self.truth:
            if t["type"] == "memcpy":
                copies[t["api"]].add((t["copy_kind"], t["src_kind"], t["dst_kind"], t["bytes"]))
        # __device__ float g_table[256]; __constant__ int g_scale: static device memory.
        self.assertIn((HTOD, PAGEABLE, DEVICE_STATIC, 1024), copies["cudaMemcpyToSymbol"])
        self.assertIn((HTOD, PAGEABLE, DEVICE_STATIC, 64), copies["cudaMemcpyToSymbol"])  # 16 floats at an offset
        self.assertIn((DTOH, DEVICE_STATIC, PAGEABLE, 4), copies["cudaMemcpyFromSymbol"])
        self.assertIn((DTOD, DEVICE_STATIC, DEVICE, 1024), copies["cudaMemcpyFromSymbol"])
        self.assertIn((DTOD, DEVICE, DEVICE_STATIC, 1024), copies["cudaMemcpyToSymbolAsync"])
        # A 64 x 32 float array: HtoA/AtoH with the host, AtoD/DtoA with device memory, AtoA between arrays.
        self.assertIn((HTOA, PAGEABLE, ARRAY, 8192), copies["cudaMemcpy2DToArray"])
        self.assertIn((ATOH, ARRAY, PAGEABLE, 8192), copies["cudaMemcpy2DFromArray"])
        self.assertIn((ATOD, ARRAY, DEVICE, 8192), copies["cudaMemcpy2DFromArray"])
        self.assertIn((DTOA, DEVICE, ARRAY, 8192), copies["cudaMemcpy2DToArray"])
        self.assertEqual(copies["cudaMemcpy2DArrayToArray"], {(ATOA, ARRAY, ARRAY, 8192)})
        # 16 x 8 x 4 floats: bytes = the whole box, whatever the pitches.
        self.assertEqual(copies["cudaMemcpy3D"], {(HTOA, PAGEABLE, ARRAY, 2048), (ATOD, ARRAY, DEVICE, 2048)})
        self.assertEqual(copies["cudaMemcpy3DAsync"], {(DTOH, DEVICE, PAGEABLE, 2048)})

    def test_registered_host_memory_copies_as_pinned(self):
        registered = [t for t in self.truth if t["type"] == "memcpy" and t["api"] == "cudaMemcpyAsync"
                      and t["bytes"] == 1 << 20]
        self.assertEqual(len(registered), 2)  # one per iteration
        self.assertTrue(all((t["copy_kind"], t["src_kind"]) == (HTOD, 2) for t in registered), registered)

    def test_graph_nodes_run_at_launch_with_their_graph_ids(self):
        launched = [t for t in self.truth if t["type"] in ("kernel", "memcpy", "memset") and t["api"] == "cudaGraphLaunch"]
        # Per iteration: two launches of the built graph and one of the captured one, 3 device nodes each.
        self.assertEqual(len(launched), 2 * (3 * 3 + 1))
        self.assertTrue(all(t["graph_id"] and t["graph_node_id"] for t in launched), launched)
        captured = [t for t in self.truth if t["type"] in ("memcpy", "memset")
                    and t["api"] in ("cudaMemcpyAsync", "cudaMemsetAsync") and t["bytes"] == 4096]
        self.assertEqual(captured, [], "a captured copy or memset ran at capture time")
        # Conditional IF nodes: the body of the one whose condition is 1 ran, the other's did not.
        bodies = [t for t in launched if t["type"] == "memset" and t["bytes"] == 2048]
        self.assertEqual(len(bodies), 2)  # one per iteration

    def test_sync_records_span_driver_cost_and_wakeup(self):
        syncs = [t for t in self.truth if t["type"] == "sync" and t["sync_type"] in (2, 3, 4)]
        self.assertGreater(len(syncs), 4)
        for s in syncs:
            idle = sim_truth.CONTEXT_SYNC_IDLE_NS if s["sync_type"] == 4 else sim_truth.STREAM_SYNC_IDLE_NS
            self.assertGreaterEqual(s["end_ns"] - s["start_ns"], idle, s)
            if s["waited_until_ns"]:
                self.assertGreaterEqual(s["end_ns"], s["waited_until_ns"] + sim_truth.SYNC_WAKE_NS, s)


def run_bare_and_under_agent(cls, args, **prof):
    """Runs args bare (cls.bare) and under libprof as cls.mode() loads it, one window, with the PROF_* variables
    prof adds (cls.proc, its truth log cls.truth, its traces cls.traces), in cls.tmp."""
    cls.tmp = tempfile.TemporaryDirectory()
    out = os.path.join(cls.tmp.name, "out")
    truth = os.path.join(cls.tmp.name, "truth.jsonl")
    cls.bare = harness.run(args, harness.sim_env())
    cls.proc = harness.run(args, harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth, **cls.mode(), **prof,
                                                 **ONE_WINDOW))
    cls.truth = load_truth(truth)
    cls.traces = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))


class UnderAgent:
    """Mixed in per mode: env() says how libprof is loaded."""

    @classmethod
    def setUpClass(cls):
        harness.need(WORKLOAD, harness.LIBPROF_SO)
        run_bare_and_under_agent(cls, [WORKLOAD])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def events(self):
        with open(self.traces[0]) as f:
            return json.load(f)["traceEvents"]

    def test_output_and_exit_status_unchanged(self):
        self.assertEqual(self.bare.returncode, 0, self.bare.stdout)
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertEqual(self.proc.stdout, self.bare.stdout)

    def test_one_valid_window(self):
        self.assertEqual(len(self.traces), 1, self.proc.stderr)
        check = subprocess.run([harness.PROF_TOOL, "validate", self.traces[0]], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_device_records_equal_the_truth(self):
        cats = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
        got = sorted((cats[e["cat"]], e["args"]["correlation"]) for e in self.events() if e.get("cat") in cats)
        want = sorted((t["type"], t["correlation"]) for t in self.truth if t["type"] in cats.values())
        self.assertTrue(want)
        self.assertEqual(got, want)

    def test_each_family_call_appears_as_often_as_the_program_made_it(self):
        calls = collections.Counter(e["name"] for e in self.events() if e.get("cat") == "cuda_runtime")
        truth = collections.Counter(t["name"] for t in self.truth
                                    if t["type"] == "api" and t["domain"] == "runtime"
                                    and t["correlation"] == t["outer_correlation"])
        for name in FAMILY_CALLS:
            self.assertGreater(truth[name], 0, name)
            self.assertEqual(calls[name], truth[name], name)


# Bare's fixture shape, for the driver-API program.
class DriverApiBare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(DRIVER_API)
        cls.tmp = tempfile.TemporaryDirectory()
        truth = os.path.join(cls.tmp.name, "truth.jsonl")
        cls.proc = harness.run(DRIVER_ARGS + ["--iterations", "2"], harness.sim_env(SIM_TRUTH_FILE=truth))
        cls.truth = load_truth(truth)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_module_context_link_and_copies_work_as_documented(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        for step in ("module", "copies", "link", "fatbin"):
            self.assertIn(f"{step} ok", self.proc.stdout)

    def test_work_carries_the_created_contexts_id(self):
        primary = {t["context"] for t in self.truth if t["type"] == "mem_alloc"}
        kernels = [t for t in self.truth if t["type"] == "kernel"]
        self.assertEqual(len(kernels), 2 * 4)  # per iteration: 2 scale + 1 linked fill + 1 fat-binary scale
        contexts = {k["context"] for k in kernels}
        self.assertEqual(len(contexts), 2, "each iteration creates its own context")
        self.assertTrue(contexts <= primary)
        self.assertEqual({k["api"] for k in kernels}, {"cuLaunchKernel"})


class DriverApiUnderAgent:
    @classmethod
    def setUpClass(cls):
        harness.need(DRIVER_API, harness.LIBPROF_SO)
        run_bare_and_under_agent(cls, DRIVER_ARGS, PROF_ACTIVITIES="kernel,memcpy,memset,runtime,sync,memory,driver")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_output_unchanged_and_device_records_equal_the_truth(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertEqual(self.proc.stdout, self.bare.stdout)
        self.assertEqual(len(self.traces), 1, self.proc.stderr)
        with open(self.traces[0]) as f:
            events = json.load(f)["traceEvents"]
        cats = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
        got = sorted((cats[e["cat"]], e["args"]["correlation"]) for e in events if e.get("cat") in cats)
        want = sorted((t["type"], t["correlation"]) for t in self.truth if t["type"] in cats.values())
        self.assertEqual(len([w for w in want if w[0] == "kernel"]), 4)
        self.assertEqual(got, want)
        launches = {e["args"]["correlation"] for e in events if e.get("name") == "cuLaunchKernel"}
        kernels = {e["args"]["correlation"] for e in events if e.get("cat") == "kernel"}
        self.assertEqual(kernels, launches)


class DriverApiUnderPreload(DriverApiUnderAgent, unittest.TestCase):
    @staticmethod
    def mode():
        return {"LD_PRELOAD": harness.LIBPROF_SO}


class DriverApiUnderInjection(DriverApiUnderAgent, unittest.TestCase):
    @staticmethod
    def mode():
        return {"CUDA_INJECTION64_PATH": harness.LIBPROF_SO}


class UnderPreload(UnderAgent, unittest.TestCase):
    @staticmethod
    def mode():
        return {"LD_PRELOAD": harness.LIBPROF_SO}


class UnderInjection(UnderAgent, unittest.TestCase):
    @staticmethod
    def mode():
        return {"CUDA_INJECTION64_PATH": harness.LIBPROF_SO}


if __name__ == "__main__":
    harness.main()
