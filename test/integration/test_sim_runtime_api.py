"""The simulated runtime's API surface, called directly with ctypes: bytes
really move through device, pitched, managed, stream-ordered and pool
memory; 2D copies and memsets honour pitches; errors and the last-error
state behave as documented; cudaDeviceReset re-creates the context."""
import ctypes
import os
import sys
import textwrap
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4

# Runs in a child process (so each scenario gets a fresh runtime and truth
# log); prints one "key value" line per check.
PRELUDE = textwrap.dedent("""
    import ctypes, os
    rt = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libcudart.so.13"))
    def ptr():
        return ctypes.c_void_p()
    def out(key, value):
        print(key, value)
""")


def run_script(body, **env):
    return harness.run_sim_script(PRELUDE + textwrap.dedent(body), truth.read, **env)


class SimRuntimeApiTest(unittest.TestCase):
    def test_plain_device_memory_round_trips_bytes(self):
        results, lines = run_script("""
            d = ptr(); out("malloc", rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(1 << 20)))
            src = ctypes.create_string_buffer(bytes(range(256)) * 4096, 1 << 20)
            dst = ctypes.create_string_buffer(1 << 20)
            out("h2d", rt.cudaMemcpy(d, src, ctypes.c_size_t(1 << 20), 1))
            out("d2h", rt.cudaMemcpy(dst, d, ctypes.c_size_t(1 << 20), 2))
            out("equal", src.raw == dst.raw)
            out("free", rt.cudaFree(d))
        """)
        self.assertEqual(results, {"malloc": "0", "h2d": "0", "d2h": "0", "equal": "True", "free": "0"})
        copies = truth.of_type(lines, "memcpy")
        self.assertEqual([(c["copy_kind"], c["src_kind"], c["dst_kind"]) for c in copies],
                         [(truth.HTOD, truth.PAGEABLE, truth.DEVICE), (truth.DTOH, truth.DEVICE, truth.PAGEABLE)])
        for c in copies:
            self.assertEqual(c["end_ns"] - c["start_ns"], truth.copy_ns(c))
        # A synchronous copy returns only after it ended on the device.
        for call, copy in zip(truth.api(lines, "cudaMemcpy"), copies):
            self.assertGreaterEqual(call["end_ns"], copy["end_ns"])
        alloc, free = truth.of_type(lines, "mem_alloc")[0], truth.of_type(lines, "mem_free")[0]
        self.assertEqual((alloc["bytes"], alloc["dst_kind"], alloc["address"]), (1 << 20, truth.DEVICE, free["address"]))

    def test_pitched_2d_copies_and_memsets_honour_pitches(self):
        results, lines = run_script("""
            d = ptr(); pitch = ctypes.c_size_t()
            out("mallocpitch", rt.cudaMallocPitch(ctypes.byref(d), ctypes.byref(pitch), ctypes.c_size_t(100), ctypes.c_size_t(10)))
            out("pitch", pitch.value)
            host = ctypes.create_string_buffer(bytes((i * 7) % 251 for i in range(128 * 10)), 128 * 10)
            out("h2d2d", rt.cudaMemcpy2D(d, pitch, host, ctypes.c_size_t(128), ctypes.c_size_t(100), ctypes.c_size_t(10), 1))
            back = ctypes.create_string_buffer(128 * 10)
            out("d2h2d", rt.cudaMemcpy2D(back, ctypes.c_size_t(128), d, pitch, ctypes.c_size_t(100), ctypes.c_size_t(10), 2))
            out("rows_equal", all(host.raw[r*128:r*128+100] == back.raw[r*128:r*128+100] for r in range(10)))
            out("memset2d", rt.cudaMemset2D(d, pitch, 0xAB, ctypes.c_size_t(50), ctypes.c_size_t(10)))
            out("d2h2d_again", rt.cudaMemcpy2D(back, ctypes.c_size_t(128), d, pitch, ctypes.c_size_t(100), ctypes.c_size_t(10), 2))
            out("memset_rows", all(back.raw[r*128:r*128+50] == b"\\xab" * 50 and back.raw[r*128+50:r*128+100] == host.raw[r*128+50:r*128+100] for r in range(10)))
            out("bad_pitch", rt.cudaMemcpy2D(back, ctypes.c_size_t(10), d, pitch, ctypes.c_size_t(100), ctypes.c_size_t(10), 2))
        """)
        self.assertEqual(results["mallocpitch"], "0")
        self.assertEqual(results["pitch"], "512")
        self.assertEqual(results["rows_equal"], "True")
        self.assertEqual(results["memset_rows"], "True")
        self.assertEqual(results["bad_pitch"], "12")  # cudaErrorInvalidPitchValue
        copies = truth.of_type(lines, "memcpy")
        self.assertEqual([c["bytes"] for c in copies], [1000, 1000, 1000])
        memset = truth.of_type(lines, "memset")[0]
        self.assertEqual(memset["bytes"], 500)
        self.assertEqual(memset["end_ns"] - memset["start_ns"], truth.memset_ns(memset))

    def test_managed_pinned_async_and_pool_allocations_are_reported_with_their_kind_and_stream(self):
        results, lines = run_script("""
            s = ptr(); out("stream", rt.cudaStreamCreate(ctypes.byref(s)))
            m = ptr(); out("managed", rt.cudaMallocManaged(ctypes.byref(m), ctypes.c_size_t(4096), 1))
            h = ptr(); out("host", rt.cudaHostAlloc(ctypes.byref(h), ctypes.c_size_t(4096), 0))
            a = ptr(); out("async", rt.cudaMallocAsync(ctypes.byref(a), ctypes.c_size_t(8192), s))
            pool = ptr(); out("pool", rt.cudaDeviceGetDefaultMemPool(ctypes.byref(pool), 0))
            p = ptr(); out("frompool", rt.cudaMallocFromPoolAsync(ctypes.byref(p), ctypes.c_size_t(16384), pool, s))
            out("h2m", rt.cudaMemcpyAsync(m, h, ctypes.c_size_t(4096), 4, s))
            out("peer", rt.cudaMemcpyPeer(a, 0, m, 0, ctypes.c_size_t(4096)))
            out("freeasync", rt.cudaFreeAsync(a, s))
            out("freeasync2", rt.cudaFreeAsync(p, s))
            out("sync", rt.cudaStreamSynchronize(s))
            out("freehost", rt.cudaFreeHost(h))
            out("free", rt.cudaFree(m))
            out("freehost_of_device", rt.cudaFreeHost(m))
        """)
        for key in ("stream", "managed", "host", "async", "pool", "frompool", "h2m", "peer", "freeasync",
                    "freeasync2", "sync", "freehost", "free"):
            self.assertEqual(results[key], "0", key)
        self.assertEqual(results["freehost_of_device"], "1")  # already freed: cudaErrorInvalidValue
        allocs = {a["bytes"]: a for a in truth.of_type(lines, "mem_alloc")}
        self.assertEqual(allocs[4096]["stream"], 0)
        kinds = sorted((a["bytes"], a["dst_kind"]) for a in truth.of_type(lines, "mem_alloc"))
        self.assertEqual(kinds, [(4096, truth.PINNED), (4096, truth.MANAGED), (8192, truth.DEVICE), (16384, truth.DEVICE)])
        stream_id = truth.of_type(lines, "memcpy")[0]["stream"]
        self.assertEqual(allocs[8192]["stream"], stream_id)
        self.assertEqual(allocs[16384]["stream"], stream_id)
        self.assertEqual({f["stream"] for f in truth.of_type(lines, "mem_free") if f["bytes"] in (8192, 16384)},
                         {stream_id})
        h2m, peer = truth.of_type(lines, "memcpy")
        self.assertEqual((h2m["copy_kind"], h2m["src_kind"], h2m["dst_kind"]), (truth.HTOD, truth.PINNED, truth.MANAGED))
        self.assertEqual((peer["copy_kind"], peer["stream"]), (truth.DTOD, truth.LEGACY_STREAM))
        # The legacy-stream peer copy waits for the blocking stream's copy.
        self.assertGreaterEqual(peer["start_ns"], h2m["end_ns"])

    def test_ptsz_and_ptds_entry_points_use_the_per_thread_default_stream(self):
        results, lines = run_script("""
            d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(4096))
            host = ctypes.create_string_buffer(4096)
            out("legacy", rt.cudaMemsetAsync(d, 1, ctypes.c_size_t(4096), None))
            out("ptsz", rt.cudaMemsetAsync_ptsz(d, 2, ctypes.c_size_t(4096), None))
            out("ptds", rt.cudaMemcpy_ptds(host, d, ctypes.c_size_t(4096), 2))
            out("value", host.raw[0])
            out("sync", rt.cudaStreamSynchronize_ptsz(None))
        """)
        self.assertEqual(results, {"legacy": "0", "ptsz": "0", "ptds": "0", "value": "2", "sync": "0"})
        memsets = truth.of_type(lines, "memset")
        copy = truth.of_type(lines, "memcpy")[0]
        self.assertEqual(memsets[0]["stream"], truth.LEGACY_STREAM)
        self.assertNotEqual(memsets[1]["stream"], truth.LEGACY_STREAM)
        self.assertEqual(copy["stream"], memsets[1]["stream"], "_ptds copies use the per-thread stream too")
        # The per-thread stream still waits for earlier legacy-stream work.
        self.assertGreaterEqual(memsets[1]["start_ns"], memsets[0]["end_ns"])
        driver = {l["name"] for l in truth.api(lines, domain="driver")}
        self.assertTrue({"cuMemsetD8Async_ptsz", "cuMemcpy_ptds", "cuStreamSynchronize_ptsz"} <= driver, driver)
        self.assertIn("cuMemsetD8Async", driver)

    def test_device_queries_describe_the_simulated_h100(self):
        results, _ = run_script("""
            n = ctypes.c_int(); out("count", (rt.cudaGetDeviceCount(ctypes.byref(n)), n.value))
            v = ctypes.c_int(); rt.cudaDeviceGetAttribute(ctypes.byref(v), 16, 0); out("sms", v.value)
            rt.cudaDeviceGetAttribute(ctypes.byref(v), 75, 0); out("major", v.value)
            prop = ctypes.create_string_buffer(4096)
            out("props", rt.cudaGetDeviceProperties(prop, 0))
            out("name", prop.value.decode())
            out("bad_device", rt.cudaSetDevice(1))
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            out("meminfo", (rt.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)), free.value == total.value, total.value))
            out("versions", (rt.cudaRuntimeGetVersion(ctypes.byref(v)), v.value))
        """)
        self.assertEqual(results["count"], "(0, 1)")
        self.assertEqual(results["sms"], "132")
        self.assertEqual(results["major"], "9")
        self.assertEqual(results["props"], "0")
        self.assertEqual(results["name"], "NVIDIA H100 80GB HBM3 (simulated)")
        self.assertEqual(results["bad_device"], "101")  # cudaErrorInvalidDevice
        self.assertEqual(results["meminfo"], "(0, True, 85520809984)")
        self.assertEqual(results["versions"], "(0, 13000)")

    def test_errors_set_and_get_last_error_clears_it(self):
        results, lines = run_script("""
            d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(64))
            out("bad_kind", rt.cudaMemcpy(d, d, ctypes.c_size_t(4), 99))
            out("peek", rt.cudaPeekAtLastError())
            out("last", rt.cudaGetLastError())
            out("last_again", rt.cudaGetLastError())
            fake_stub = ctypes.cast(rt.cudaMalloc, ctypes.c_void_p)
            class Dim3(ctypes.Structure):
                _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]
            rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
            out("unregistered_launch", rt.cudaLaunchKernel(fake_stub, Dim3(1, 1, 1), Dim3(32, 1, 1), None, 0, None))
            rt.cudaGetErrorName.restype = ctypes.c_char_p
            rt.cudaGetErrorString.restype = ctypes.c_char_p
            out("name98", rt.cudaGetErrorName(98).decode())
            out("unknown", rt.cudaGetErrorString(12345).decode())
            g = (ctypes.c_uint * 3)(); b = (ctypes.c_uint * 3)(); shm = ctypes.c_size_t(); st = ptr()
            out("pop_without_push", rt.__cudaPopCallConfiguration(g, b, ctypes.byref(shm), ctypes.byref(st)))
        """)
        # Expected answers, one per probe: data, not logic.
        self.assertEqual(results["bad_kind"], "21")  # cudaErrorInvalidMemcpyDirection
        self.assertEqual(results["peek"], "21")
        self.assertEqual(results["last"], "21")
        self.assertEqual(results["last_again"], "0")
        self.assertEqual(results["unregistered_launch"], "98")  # cudaErrorInvalidDeviceFunction
        self.assertEqual(results["name98"], "cudaErrorInvalidDeviceFunction")
        self.assertEqual(results["unknown"], "unrecognized error code")
        self.assertEqual(results["pop_without_push"], "52")  # cudaErrorMissingConfiguration
        self.assertEqual([l["result"] for l in truth.api(lines, "cudaGetLastError")], [21, 0])

    def test_device_reset_destroys_and_recreates_the_primary_context(self):
        results, lines = run_script("""
            d = ptr(); out("before", rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(64)))
            out("reset", rt.cudaDeviceReset())
            out("after", rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(64)))
        """)
        self.assertEqual(results, {"before": "0", "reset": "0", "after": "0"})
        names = [l["name"] for l in truth.api(lines, domain="driver")
                 if l["name"] in ("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxReset_v2")]
        self.assertEqual(names, ["cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxRetain"])
        first, second = truth.of_type(lines, "mem_alloc")
        self.assertNotEqual(first["context"], second["context"], "a new context after reset")


class SimFrameworkEntryPointsTest(unittest.TestCase):
    """Entry points a framework binds at load (PyTorch's libraries are opened
    with RTLD_NOW): each behaves as documented, or says it is not modelled."""

    def test_pointer_attributes_tell_device_pinned_managed_and_ordinary_memory(self):
        results, _ = run_script("""
            class Attrs(ctypes.Structure):
                _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                            ("devicePointer", ctypes.c_void_p), ("hostPointer", ctypes.c_void_p)]
            d, h, m = ptr(), ptr(), ptr()
            rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(4096))
            rt.cudaMallocHost(ctypes.byref(h), ctypes.c_size_t(4096))
            rt.cudaMallocManaged(ctypes.byref(m), ctypes.c_size_t(4096), 1)
            plain = ctypes.create_string_buffer(64)
            for name, p in (("device", d.value + 100), ("pinned", h.value), ("managed", m.value),
                            ("plain", ctypes.addressof(plain))):
                a = Attrs()
                rc = rt.cudaPointerGetAttributes(ctypes.byref(a), ctypes.c_void_p(p))
                out(name, f"{rc} {a.type} {a.device} {a.devicePointer == p} {a.hostPointer == p}")
        """)
        # cudaMemoryType: 0 unregistered, 1 host, 2 device, 3 managed.
        self.assertEqual(results, {"device": "0 2 0 True False", "pinned": "0 1 0 True True",
                                   "managed": "0 3 0 True True", "plain": "0 0 -2 False True"})

    def test_stream_priority_is_kept_within_the_device_range(self):
        results, _ = run_script("""
            lo, hi = ctypes.c_int(), ctypes.c_int()
            rt.cudaDeviceGetStreamPriorityRange(ctypes.byref(lo), ctypes.byref(hi))
            for asked in (0, -3, -100, 7):
                s, p = ptr(), ctypes.c_int(99)
                rt.cudaStreamCreateWithPriority(ctypes.byref(s), 1, asked)
                out(f"prio{asked}", f"{rt.cudaStreamGetPriority(s, ctypes.byref(p))} {p.value}")
            p = ctypes.c_int(99)
            out("default", f"{rt.cudaStreamGetPriority(None, ctypes.byref(p))} {p.value}")
            out("range", f"{lo.value} {hi.value}")
        """)
        self.assertEqual(results, {"prio0": "0 0", "prio-3": "0 -3", "prio-100": "0 -5", "prio7": "0 0",
                                   "default": "0 0", "range": "0 -5"})

    def test_capture_info_and_the_threads_capture_mode(self):
        results, _ = run_script("""
            s = ptr(); rt.cudaStreamCreate(ctypes.byref(s))
            status, cid, n = ctypes.c_int(9), ctypes.c_ulonglong(0), ctypes.c_size_t(7)
            graph, deps = ptr(), ctypes.c_void_p()
            def info():
                rc = rt.cudaStreamGetCaptureInfo(s, ctypes.byref(status), ctypes.byref(cid), ctypes.byref(graph),
                                                 ctypes.byref(deps), None, ctypes.byref(n))
                return f"{rc} {status.value} {n.value}"
            out("idle", info())
            d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(256))  # before: an allocation is unsafe in a capture
            out("begin", rt.cudaStreamBeginCapture(s, 0))
            out("capturing", info())
            first_id = cid.value
            out("memset", rt.cudaMemsetAsync(d, 0, ctypes.c_size_t(256), s))
            out("after_node", info())
            g = ptr(); out("end", rt.cudaStreamEndCapture(s, ctypes.byref(g)))
            out("same_graph", g.value == graph.value)
            out("begin2", rt.cudaStreamBeginCapture(s, 0))
            info(); out("new_id", cid.value != first_id)
            rt.cudaStreamEndCapture(s, ctypes.byref(g))
            mode = ctypes.c_int(2)  # relaxed
            out("exchange1", f"{rt.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode))} {mode.value}")
            out("exchange2", f"{rt.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode))} {mode.value}")
            bad = ctypes.c_int(9)
            out("bad_mode", rt.cudaThreadExchangeStreamCaptureMode(ctypes.byref(bad)))
        """)
        self.assertEqual(results["idle"], "0 0 7")  # NONE; the other outputs untouched
        self.assertEqual(results["capturing"], "0 1 0")  # ACTIVE, no node yet
        self.assertEqual(results["after_node"], "0 1 1")
        self.assertEqual(results["same_graph"], "True")
        self.assertEqual(results["new_id"], "True")
        self.assertEqual(results["exchange1"], "0 0")  # the old mode, global, handed back
        self.assertEqual(results["exchange2"], "0 2")
        self.assertEqual(results["bad_mode"], "1")  # cudaErrorInvalidValue

    def test_event_record_with_flags_records_and_rejects_unknown_flags(self):
        results, lines = run_script("""
            e = ptr(); rt.cudaEventCreate(ctypes.byref(e))
            d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(1 << 20))
            rt.cudaMemsetAsync(d, 0, ctypes.c_size_t(1 << 20), None)
            out("record", rt.cudaEventRecordWithFlags(e, None, 0))
            out("sync", rt.cudaEventSynchronize(e))
            out("query", rt.cudaEventQuery(e))
            out("external", rt.cudaEventRecordWithFlags(e, None, 1))  # cudaEventRecordExternal: only in a capture
            out("bad", rt.cudaEventRecordWithFlags(e, None, 4))
        """)
        self.assertEqual(results, {"record": "0", "sync": "0", "query": "0", "external": "1", "bad": "1"})

    def test_pci_bus_id_and_library_api(self):
        results, _ = run_script("""
            buf = ctypes.create_string_buffer(32)
            out("bus", f"{rt.cudaDeviceGetPCIBusId(buf, 32, 0)} {buf.value.decode()}")
            out("bad_device", rt.cudaDeviceGetPCIBusId(buf, 32, 3))
            ptx = b".version 8.0\\n.target sm_90\\n.address_size 64\\n.visible .entry k()\\n{\\nret;\\n}\\n"
            lib, kern = ptr(), ptr()
            out("load", rt.cudaLibraryLoadData(ctypes.byref(lib), ptx, None, None, 0, None, None, 0))
            out("kernel", rt.cudaLibraryGetKernel(ctypes.byref(kern), lib, b"k"))
            out("unload", rt.cudaLibraryUnload(lib))
            n = ctypes.c_uint()
            out("count", rt.cudaLibraryGetKernelCount(ctypes.byref(n), lib))
        """)
        self.assertEqual(results["bus"], "0 00000000:18:00.0")
        self.assertEqual(results["bad_device"], "101")  # cudaErrorInvalidDevice
        self.assertEqual((results["load"], results["kernel"], results["unload"]), ("0", "0", "0"))
        self.assertEqual(results["count"], "801")  # cudaErrorNotSupported: not modelled


class SimFatBinaryTest(unittest.TestCase):
    """Fat binaries are read entry by entry: a compressed entry (PyTorch's
    libraries register nothing else) is unknown, whatever bytes it holds,
    so any kernel name may be in it; readable entries are still read."""

    def test_fat_binary_entries_readable_and_compressed(self):
        results, _ = run_script("""
            import struct
            cu = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libcuda.so.1"))
            cu.cuInit(0)
            ctx = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0); cu.cuCtxSetCurrent(ctx)
            def entry(kind, payload):
                payload += b"\\0" * (-len(payload) % 8)
                return struct.pack("<HHIQ", kind, 0x0101, 64, len(payload)) + b"\\0" * 48 + payload
            def fatbin(*entries):
                body = b"".join(entries)
                return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
            ptx = b".version 8.0\\n.target sm_90\\n.address_size 64\\n.visible .entry a()\\n{\\nret;\\n}\\n\\0"
            # A compressed payload: zstd's magic, then bytes that happen to hold an ELF header.
            packed = b"\\x28\\xb5\\x2f\\xfd" + b"\\x7fELF\\x02\\x01\\x01" + bytes(range(200))
            for name, image in (("ptx_only", fatbin(entry(1, ptx))),
                                ("mixed", fatbin(entry(1, ptx), entry(2, packed))),
                                ("compressed_only", fatbin(entry(2, packed)))):
                buf = ctypes.create_string_buffer(image, len(image))
                mod, f = ctypes.c_void_p(), ctypes.c_void_p()
                rc = cu.cuModuleLoadData(ctypes.byref(mod), buf)
                a = cu.cuModuleGetFunction(ctypes.byref(f), mod, b"a")
                b = cu.cuModuleGetFunction(ctypes.byref(f), mod, b"b")
                out(name, f"{rc} {a} {b}")
        """)
        # CUDA_ERROR_NOT_FOUND (500) only where every entry could be read.
        self.assertEqual(results, {"ptx_only": "0 0 500", "mixed": "0 0 0", "compressed_only": "0 0 0"})


if __name__ == "__main__":
    harness.main()
