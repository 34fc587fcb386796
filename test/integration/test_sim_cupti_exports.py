"""The simulated libcupti.so.13 exports every function NVIDIA's
libcupti.so.13 in the toolkit exports (nm -D --defined-only), and the ones it
does not implement answer what CUPTI documents for a device without the
feature, never a silent success."""
import os
import subprocess
import sys
import textwrap
import unittest

import harness

SIM_CUPTI = os.path.join(harness.SIM_LIB_DIR, "libcupti.so.13")
REAL_CANDIDATES = [os.path.join(harness.CUDA_HOME, d, "libcupti.so.13")
                   for d in ("extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib")]


def exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W", "i"):
            names.add(parts[2].split("@")[0])
    return names


class Exports(unittest.TestCase):
    def test_every_nvidia_export_is_defined(self):
        real = next((p for p in REAL_CANDIDATES if os.path.exists(p)), None)
        if real is None or not os.path.exists(SIM_CUPTI):
            self.skipTest("no toolkit libcupti.so.13 or sim not built")
        nvidia, sim = exports(real), exports(SIM_CUPTI)
        self.assertGreater(len(nvidia), 150)
        self.assertEqual(sorted(nvidia - sim), [], "exported by NVIDIA's libcupti.so.13, missing from the sim's")


# Run in a child so the sim's libcuda.so.1 is found through LD_LIBRARY_PATH.
PROBE = textwrap.dedent("""
    import ctypes, sys
    cupti = ctypes.CDLL(sys.argv[1])
    def call(name, *args):
        return getattr(cupti, name)(*args)
    u32 = ctypes.c_uint32()
    support = ctypes.c_int(-1)
    results = {
        "EnableCudaEventDeviceTimestamps": call("cuptiActivityEnableCudaEventDeviceTimestamps", ctypes.c_uint8(1)),
        "EnableHWTrace_on": call("cuptiActivityEnableHWTrace", ctypes.c_uint8(1)),
        "EnableHWTrace_off": call("cuptiActivityEnableHWTrace", ctypes.c_uint8(0)),
        "EventGroupCreate": call("cuptiEventGroupCreate", None, ctypes.byref(ctypes.c_void_p()), 0),
        "MetricGetIdFromName": call("cuptiMetricGetIdFromName", 0, b"ipc", ctypes.byref(u32)),
        "PCSamplingEnable": call("cuptiPCSamplingEnable", None),
        "RangeProfilerEnable": call("cuptiRangeProfilerEnable", None),
        "ComputeCapability_9_0": (call("cuptiComputeCapabilitySupported", 9, 0, ctypes.byref(support)), support.value),
        "InitializeInjectionNvtx2": call("InitializeInjectionNvtx2", None),
        "GetStreamId_bad": call("cuptiGetStreamId", None, ctypes.c_void_p(0x1234), ctypes.byref(u32)),
    }
    print(results)
""")


class Answers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(SIM_CUPTI)
        proc = harness.run([sys.executable, "-c", PROBE, SIM_CUPTI], harness.sim_env())
        if proc.returncode != 0:
            raise AssertionError(proc.stderr)
        cls.results = eval(proc.stdout)  # a dict literal printed by the probe

    def test_switches_the_sim_honours_succeed(self):
        self.assertEqual(self.results["EnableCudaEventDeviceTimestamps"], 0)
        self.assertEqual(self.results["EnableHWTrace_off"], 0)
        self.assertEqual(self.results["ComputeCapability_9_0"], (0, 1))

    def test_features_the_simulated_hopper_lacks_answer_as_documented(self):
        NOT_SUPPORTED, LEGACY_PROFILER_NOT_SUPPORTED, INVALID_STREAM = 27, 38, 20
        self.assertEqual(self.results["EnableHWTrace_on"], NOT_SUPPORTED)  # Blackwell only
        self.assertEqual(self.results["EventGroupCreate"], LEGACY_PROFILER_NOT_SUPPORTED)  # cc >= 7.5
        self.assertEqual(self.results["MetricGetIdFromName"], LEGACY_PROFILER_NOT_SUPPORTED)
        self.assertEqual(self.results["PCSamplingEnable"], NOT_SUPPORTED)
        self.assertEqual(self.results["RangeProfilerEnable"], NOT_SUPPORTED)
        self.assertEqual(self.results["InitializeInjectionNvtx2"], 0)  # NVTX: injection refused
        self.assertEqual(self.results["GetStreamId_bad"], INVALID_STREAM)


if __name__ == "__main__":
    harness.main()
