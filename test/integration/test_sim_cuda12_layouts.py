"""The CUDA 12 personality's runtime fills CUDA 12's structs, not the
toolkit's (CUDA 13's): programs built against CUDA 12 (Debian's PyTorch 2.6,
scripts/torch-debian.sh) pass buffers of CUDA 12's size. Offsets are those
offsetof gives with CUDA 12.9's driver_types.h. Also the CUDA 12 entry
points such a program binds at load: cudaGetDeviceProperties_v2,
cudaStreamGetCaptureInfo_v2, cudaGraphDebugDotPrint."""
import os
import sys
import textwrap
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

PRELUDE = textwrap.dedent("""
    import ctypes, os, struct
    rt = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libcudart.so.12"))
    def out(key, value):
        print(key, value)
    GUARD = b"\\xa5" * 256
    def guarded(size):
        return ctypes.create_string_buffer(b"\\0" * size + GUARD, size + len(GUARD))
    def guard_intact(buf, size):
        return buf.raw[size:size + len(GUARD)] == GUARD
""")


def run_script(body):
    return harness.run_sim_script(PRELUDE + textwrap.dedent(body), truth.read)


@unittest.skipUnless(harness.SIM_PERSONALITY == "12", "runs on the CUDA 12 personality (SIM_PERSONALITY=12)")
class SimCuda12LayoutsTest(unittest.TestCase):
    def test_device_properties_v2_fill_cuda12s_cudaDeviceProp(self):
        results, lines = run_script("""
            size = 1032  # sizeof(struct cudaDeviceProp) in CUDA 12
            p = guarded(size)
            out("rc", rt.cudaGetDeviceProperties_v2(p, 0))
            raw = p.raw
            out("name", raw[0:256].split(b"\\0")[0].decode())
            out("totalGlobalMem", struct.unpack_from("<Q", raw, 288)[0])
            out("warpSize", struct.unpack_from("<i", raw, 308)[0])
            out("clockRate", struct.unpack_from("<i", raw, 348)[0])
            out("cc", struct.unpack_from("<ii", raw, 360))
            out("multiProcessorCount", struct.unpack_from("<i", raw, 388)[0])
            out("memoryClockRate", struct.unpack_from("<i", raw, 608)[0])
            out("l2CacheSize", struct.unpack_from("<i", raw, 616)[0])
            out("maxThreadsPerMultiProcessor", struct.unpack_from("<i", raw, 624)[0])
            out("sharedMemPerBlockOptin", struct.unpack_from("<Q", raw, 696)[0])
            out("memoryPoolsSupported", struct.unpack_from("<i", raw, 744)[0])
            out("guard", guard_intact(p, size))
            out("bad_device", rt.cudaGetDeviceProperties_v2(guarded(size), 1))
        """)
        self.assertEqual(results, {
            "rc": "0", "name": "NVIDIA H100 80GB HBM3 (simulated)", "totalGlobalMem": "85520809984",
            "warpSize": "32", "clockRate": "1980000", "cc": "(9, 0)", "multiProcessorCount": "132",
            "memoryClockRate": "2619000", "l2CacheSize": str(50 * 1024 * 1024),
            "maxThreadsPerMultiProcessor": "2048", "sharedMemPerBlockOptin": str(227 * 1024),
            "memoryPoolsSupported": "1", "guard": "True", "bad_device": "101"})
        api = [l for l in lines if l.get("type") == "api" and l.get("name") == "cudaGetDeviceProperties_v2"]
        self.assertEqual([l["cbid"] for l in api], [440, 440])  # CUDA 12's cudaGetDeviceProperties_v2_v12000

    def test_pointer_attributes_write_cuda12s_24_bytes(self):
        results, _ = run_script("""
            d = ctypes.c_void_p(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(4096))
            a = guarded(24)
            out("rc", rt.cudaPointerGetAttributes(a, d))
            out("type_device", struct.unpack_from("<ii", a.raw, 0))
            out("devicePointer", struct.unpack_from("<Q", a.raw, 8)[0] == d.value)
            out("guard", guard_intact(a, 24))
        """)
        self.assertEqual(results, {"rc": "0", "type_device": "(2, 0)", "devicePointer": "True", "guard": "True"})

    def test_cuda12_entry_points_bound_at_load(self):
        results, _ = run_script("""
            s = ctypes.c_void_p(); rt.cudaStreamCreate(ctypes.byref(s))
            status, cid = ctypes.c_int(7), ctypes.c_ulonglong()
            out("capture_info_v2", (rt.cudaStreamGetCaptureInfo_v2(s, ctypes.byref(status), ctypes.byref(cid),
                                                                    None, None, None), status.value))
            g = ctypes.c_void_p(); rt.cudaGraphCreate(ctypes.byref(g), 0)
            out("dot_print", rt.cudaGraphDebugDotPrint(g, b"/dev/null", 0))
        """)
        # cudaStreamCaptureStatusNone; cudaErrorNotSupported (graph queries are not modelled).
        self.assertEqual(results, {"capture_info_v2": "(0, 0)", "dot_print": "801"})


if __name__ == "__main__":
    unittest.main()
