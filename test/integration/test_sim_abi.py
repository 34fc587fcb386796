"""The simulated libraries have the real stack's ABI: file names and
SONAMEs, the libcudart.so.13 version node, a runtime that imports no driver
symbol and reaches the driver through cuGetProcAddress with base names."""
import ctypes
import os
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

CUDART = os.path.join(harness.SIM_LIB_DIR, "libcudart.so.13")
PROBE = os.path.join(harness.SIM_LIB_DIR, "..", "testing", "libsim_preload_probe.so")
DLSYM_PROBE = os.path.join(harness.SIM_LIB_DIR, "..", "testing", "libsim_dlsym_probe.so")
CUDA = os.path.join(harness.SIM_LIB_DIR, "libcuda.so.1")


def readelf(*args):
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


class SimAbiTest(unittest.TestCase):
    def test_libraries_have_the_real_file_names_and_sonames(self):
        self.assertIn("Library soname: [libcudart.so.13]", readelf("-d", CUDART))
        self.assertIn("Library soname: [libcuda.so.1]", readelf("-d", CUDA))

    def test_runtime_defines_the_version_node_nvcc_binaries_need(self):
        self.assertIn("Name: libcudart.so.13", readelf("-V", CUDART).split("Version definition")[1])
        symbols = readelf("--dyn-syms", "-W", CUDART)
        for name in ("cudaMalloc@@libcudart.so.13", "__cudaLaunchKernel@@libcudart.so.13",
                     "__cudaRegisterFunction@@libcudart.so.13", "cudaLaunchKernelExC@@libcudart.so.13"):
            self.assertIn(name, symbols)

    def test_runtime_imports_no_driver_symbol(self):
        undefined = subprocess.run(["nm", "-D", "--undefined-only", CUDART], capture_output=True, text=True,
                                   check=True).stdout.split()
        self.assertEqual([s for s in undefined if s.startswith("cu")], [])

    def test_cuGetProcAddress_maps_base_names_to_versioned_entry_points(self):
        cuda = ctypes.CDLL(CUDA)
        self.assertEqual(cuda.cuInit(0), 0)
        get_proc = cuda.cuGetProcAddress_v2
        get_proc.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                             ctypes.POINTER(ctypes.c_int)]
        for base, version, versioned in (("cuMemAlloc", 3020, "cuMemAlloc_v2"), ("cuMemFree", 13000, "cuMemFree_v2"),
                                         ("cuLaunchKernel", 4000, "cuLaunchKernel"),
                                         ("cuMemAllocAsync", 11020, "cuMemAllocAsync"),
                                         ("cuGetProcAddress", 11030, "cuGetProcAddress"),
                                         ("cuGetProcAddress", 12000, "cuGetProcAddress_v2"),
                                         ("cuCtxSynchronize", 2000, "cuCtxSynchronize"),
                                         ("cuCtxSynchronize", 13000, "cuCtxSynchronize_v2")):
            fn = ctypes.c_void_p()
            status = ctypes.c_int(-1)
            self.assertEqual(get_proc(base.encode(), ctypes.byref(fn), version, 0, ctypes.byref(status)), 0, base)
            self.assertEqual(status.value, 0)  # CU_GET_PROC_ADDRESS_SUCCESS
            self.assertEqual(fn.value, ctypes.cast(getattr(cuda, versioned), ctypes.c_void_p).value, (base, version))
        per_thread = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
        for base, version, versioned in (("cuLaunchKernel", 7000, "cuLaunchKernel_ptsz"),
                                         ("cuMemcpy", 7000, "cuMemcpy_ptds"),
                                         ("cuMemAllocAsync", 11020, "cuMemAllocAsync_ptsz"),
                                         ("cuInit", 7000, "cuInit")):  # no flavour: the legacy entry
            fn = ctypes.c_void_p()
            status = ctypes.c_int(-1)
            self.assertEqual(get_proc(base.encode(), ctypes.byref(fn), version, per_thread, ctypes.byref(status)), 0)
            self.assertEqual(fn.value, ctypes.cast(getattr(cuda, versioned), ctypes.c_void_p).value, base)
        fn = ctypes.c_void_p()
        status = ctypes.c_int(-1)
        self.assertEqual(get_proc(b"cuNoSuchFunction", ctypes.byref(fn), 13000, 0, ctypes.byref(status)), 500)
        self.assertEqual(status.value, 1)  # CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
        self.assertEqual(get_proc(b"cuMemAllocAsync", ctypes.byref(fn), 11000, 0, ctypes.byref(status)), 500)
        self.assertEqual(status.value, 2)  # CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT

    def test_current_context_device_exists_only_after_the_primary_context(self):
        script = (
            "import ctypes, sys\n"
            "cu = ctypes.CDLL(sys.argv[1])\n"
            "dev = ctypes.c_int(-1); ctx = ctypes.c_void_p()\n"
            "print(cu.cuCtxGetDevice(ctypes.byref(dev)))\n"
            "print(cu.cuInit(0), cu.cuCtxGetDevice(ctypes.byref(dev)))\n"
            "print(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0), cu.cuCtxGetDevice(ctypes.byref(dev)), dev.value)\n")
        proc = harness.run([sys.executable, "-c", script, CUDA], harness.sim_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        # NOT_INITIALIZED before cuInit, INVALID_CONTEXT before the context, then device 0.
        self.assertEqual(proc.stdout.splitlines(), ["3", "0 201", "0 0 0"])

    def test_cudaGetDriverEntryPoint_hands_out_the_drivers_versioned_function(self):
        script = (
            "import ctypes, sys\n"
            "rt = ctypes.CDLL(sys.argv[1]); cu = ctypes.CDLL(sys.argv[2])\n"
            "fn = ctypes.c_void_p(); status = ctypes.c_int(-1)\n"
            "r = rt.cudaGetDriverEntryPoint(b'cuMemAlloc', ctypes.byref(fn), ctypes.c_ulonglong(0), ctypes.byref(status))\n"
            "print(r, status.value, fn.value == ctypes.cast(cu.cuMemAlloc_v2, ctypes.c_void_p).value)\n"
            "r = rt.cudaGetDriverEntryPoint(b'cuNoSuchThing', ctypes.byref(fn), ctypes.c_ulonglong(0), ctypes.byref(status))\n"
            "print(r, status.value, fn.value)\n")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "truth.jsonl")
            proc = harness.run([sys.executable, "-c", script, CUDART, CUDA], harness.sim_env(SIM_TRUTH_FILE=path))
            lines = truth.read(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.splitlines(), ["0 0 True", "0 1 None"])
        calls = truth.api(lines, "cudaGetDriverEntryPoint", "runtime")
        self.assertEqual(len(calls), 2)
        nested = [d for d in truth.api(lines, "cuGetProcAddress_v2", "driver")
                  if d["outer_correlation"] == calls[0]["correlation"] and d["correlation"] != calls[0]["correlation"]]
        self.assertTrue(nested, "the runtime asks the driver's cuGetProcAddress")

    def test_runtime_resolves_the_driver_through_cuGetProcAddress_before_calling_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "truth.jsonl")
            proc = harness.run([os.path.join(harness.WORKLOAD_DIR, "train_loop"), "--steps", "1"],
                               harness.sim_env(SIM_TRUTH_FILE=path))
            lines = truth.read(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        driver = truth.api(lines, domain="driver")
        names = [d["name"] for d in driver]
        first_lookup, first_init = names.index("cuGetProcAddress_v2"), names.index("cuInit")
        self.assertLess(first_lookup, first_init)
        lookups = [d for d in driver if d["name"] == "cuGetProcAddress_v2"]
        self.assertGreaterEqual(len(lookups), 40)
        self.assertTrue(all(d["result"] == 0 for d in lookups))
        # The lookups happen inside the first runtime call, as nested driver calls.
        outer = {d["outer_correlation"] for d in lookups}
        self.assertEqual(len(outer), 1)
        first_runtime = [l for l in truth.api(lines, domain="runtime") if l["correlation"] in outer][0]
        self.assertEqual(first_runtime["name"], "cudaHostAlloc")


    def run_with_probe(self, lib_path, probe=PROBE):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "truth.jsonl")
            env = harness.clean_env(LD_LIBRARY_PATH=lib_path, LD_PRELOAD=probe, SIM_TRUTH_FILE=path)
            proc = harness.run([os.path.join(harness.WORKLOAD_DIR, "runtime_api")], env)
            return proc, truth.read(path)

    def test_a_preloaded_cuGetProcAddress_sees_no_runtime_lookup_as_with_the_real_runtime(self):
        """NVIDIA's runtime gets cuGetProcAddress_v2 from the driver's handle, so an
        LD_PRELOAD definition alone is bypassed; the simulated runtime must match."""
        # Positive control: the probe is loaded and catches a caller that binds globally.
        control = harness.run([sys.executable, "-c",
                               "import ctypes; ctypes.CDLL('libcuda.so.1', mode=ctypes.RTLD_GLOBAL); "
                               "f = ctypes.c_void_p(); s = ctypes.c_int(); "
                               "print(ctypes.CDLL(None).cuGetProcAddress_v2(b'cuInit', ctypes.byref(f), 13000, "
                               "ctypes.c_uint64(0), ctypes.byref(s)))"],
                              harness.clean_env(LD_LIBRARY_PATH=harness.SIM_LIB_DIR, LD_PRELOAD=PROBE))
        self.assertIn("PROBE cuGetProcAddress_v2 cuInit", control.stderr)
        self.assertEqual(control.stdout.strip(), "0")
        real_lib64 = os.path.join(harness.CUDA_HOME, "lib64")
        if not os.path.exists(os.path.join(real_lib64, "libcudart.so.13")):
            self.skipTest("no toolkit libcudart.so.13")
        for name, lib_path in (("real runtime", real_lib64 + ":" + harness.SIM_LIB_DIR),
                               ("simulated runtime", harness.SIM_LIB_DIR)):
            proc, lines = self.run_with_probe(lib_path)
            lookups = truth.api(lines, "cuGetProcAddress_v2", "driver")
            self.assertGreater(len(lookups), 10, f"{name}: resolves the driver through cuGetProcAddress")
            self.assertNotIn("PROBE", proc.stderr, f"{name}: a preloaded cuGetProcAddress_v2 is bypassed")


    def test_interposing_dlsym_and_the_bootstrap_sees_every_lookup_as_with_the_real_runtime(self):
        """Both runtimes take cuGetProcAddress_v2 from the driver's handle, bootstrap
        with cuGetProcAddress("cuGetProcAddress", 12000) and resolve each function by
        base name and the version of the ABI they want (cuMemAlloc at 3020)."""
        real_lib64 = os.path.join(harness.CUDA_HOME, "lib64")
        if not os.path.exists(os.path.join(real_lib64, "libcudart.so.13")):
            self.skipTest("no toolkit libcudart.so.13")
        for name, lib_path in (("real runtime", real_lib64 + ":" + harness.SIM_LIB_DIR),
                               ("simulated runtime", harness.SIM_LIB_DIR)):
            proc, _ = self.run_with_probe(lib_path, DLSYM_PROBE)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            lookups = [l for l in proc.stderr.splitlines() if l.startswith("LOOKUP ")]
            self.assertIn("DLSYM cuGetProcAddress_v2", proc.stderr, name)
            for expected in ("LOOKUP cuGetProcAddress 12000 0 -> 0", "LOOKUP cuInit 2000 0 -> 0", "LOOKUP cuMemAlloc 3020 0 -> 0",
                             "LOOKUP cuMemFree 3020 0 -> 0", "LOOKUP cuMemAllocAsync 11020 0 -> 0",
                             "LOOKUP cuLaunchKernel 4000 0 -> 0", "LOOKUP cuStreamSynchronize 2000 0 -> 0"):
                self.assertIn(expected, lookups, name)


if __name__ == "__main__":
    harness.main()
