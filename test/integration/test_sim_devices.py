"""Several simulated GPUs (test/sim/README.md "Several devices"): with
SIM_DEVICE_COUNT=n a process sees n devices, each with its own primary
context, streams, default stream, memory and timeline; cudaSetDevice makes a
device's primary context current on the calling thread, and streams and
events belong to the device current when they were made, as CUDA documents
("Multi-Device System": a kernel launch into another device's stream fails,
a copy succeeds, cudaEventRecord needs the event's device, cudaStreamWaitEvent
synchronises devices). Every op's truth line names its device and context.
NCCL's communicators span the devices: one per process (torchrun) or all of
a process's (ncclCommInitAll)."""
import ctypes  # noqa: F401  (used by the child scripts' prelude)
import os
import sys
import tempfile
import textwrap
import unittest

import harness
import multirank
from sim_child import PRELUDE

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

INVALID_DEVICE, INVALID_HANDLE = 101, 400
PEER_ALREADY_ENABLED, PEER_NOT_ENABLED = 704, 705

def run_script(body, **env):
    return harness.run_sim_script(PRELUDE + textwrap.dedent(body), truth.read, **env)


def ops(lines, kind):
    return truth.of_type(lines, kind)


class OneDeviceByDefaultTest(unittest.TestCase):
    def test_without_the_variable_there_is_one_device(self):
        results, lines = run_script("""
            n = ctypes.c_int(); out("count", rt.cudaGetDeviceCount(ctypes.byref(n))); out("n", n.value)
            out("set1", rt.cudaSetDevice(1))
            out("set0", rt.cudaSetDevice(0))
            d = ctypes.c_int(); out("cuDeviceGet1", cu.cuDeviceGet(ctypes.byref(d), 1))
            p = ctypes.c_int(); out("peer", rt.cudaDeviceCanAccessPeer(ctypes.byref(p), 0, 0)); out("can", p.value)
        """)
        self.assertEqual(results, {"count": "0", "n": "1", "set1": str(INVALID_DEVICE), "set0": "0",
                                   "cuDeviceGet1": str(INVALID_DEVICE), "peer": "0", "can": "0"})

    def test_an_invalid_count_falls_back_to_one_and_says_so(self):
        for value in ("0", "17", "four"):
            with tempfile.TemporaryDirectory() as tmp:
                proc = harness.run([sys.executable, "-c", PRELUDE + textwrap.dedent("""
                    n = ctypes.c_int(); rt.cudaGetDeviceCount(ctypes.byref(n)); print(n.value)
                """)], harness.sim_env(SIM_LIB_DIR=harness.SIM_LIB_DIR, SIM_DEVICE_COUNT=value,
                                       SIM_TRUTH_FILE=os.path.join(tmp, "t")))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stdout.strip(), "1", value)
            self.assertIn(f"SIM_DEVICE_COUNT={value}", proc.stderr)


class SeveralDevicesTest(unittest.TestCase):
    def test_each_device_answers_for_itself(self):
        results, _ = run_script("""
            n = ctypes.c_int(); rt.cudaGetDeviceCount(ctypes.byref(n)); out("n", n.value)
            class Prop(ctypes.Structure):
                _fields_ = [("name", ctypes.c_char * 256), ("uuid", ctypes.c_ubyte * 16), ("rest", ctypes.c_char * 2048)]
            names, uuids = set(), set()
            for i in range(4):
                prop = Prop(); rt.cudaGetDeviceProperties(ctypes.byref(prop), i)
                names.add(prop.name); uuids.add(bytes(prop.uuid))
            out("names", len(names)); out("uuids", len(uuids))
            buses = set()
            for i in range(4):
                bus = ctypes.create_string_buffer(32); rt.cudaDeviceGetPCIBusId(bus, 32, i); buses.add(bus.value)
            out("buses", len(buses))
            prop = Prop(); out("props4", rt.cudaGetDeviceProperties(ctypes.byref(prop), 4))
            out("device_at_start", device())
            out("set2", rt.cudaSetDevice(2)); out("device_now", device())
            d = ctypes.c_int(); out("ctx_device", cu.cuCtxGetDevice(ctypes.byref(d))); out("ctx_device_is", d.value)
            out("set4", rt.cudaSetDevice(4)); out("still", device())
        """, SIM_DEVICE_COUNT=4)
        self.assertEqual(results, {"n": "4", "names": "1", "uuids": "4", "buses": "4", "props4": str(INVALID_DEVICE),
                                   "device_at_start": "0", "set2": "0", "device_now": "2", "ctx_device": "0",
                                   "ctx_device_is": "2", "set4": str(INVALID_DEVICE), "still": "2"})

    def test_primary_contexts_are_per_device_and_the_current_one_is_per_thread(self):
        results, lines = run_script("""
            import threading
            flags, active = ctypes.c_uint(), ctypes.c_int()
            cu.cuDevicePrimaryCtxGetState(1, ctypes.byref(flags), ctypes.byref(active)); out("active1_before", active.value)
            out("set1", rt.cudaSetDevice(1))
            cu.cuDevicePrimaryCtxGetState(1, ctypes.byref(flags), ctypes.byref(active)); out("active1_after", active.value)
            cu.cuDevicePrimaryCtxGetState(3, ctypes.byref(flags), ctypes.byref(active)); out("active3", active.value)
            c0, c1, cur = ptr(), ptr(), ptr()
            cu.cuDevicePrimaryCtxRetain(ctypes.byref(c0), 0); cu.cuDevicePrimaryCtxRetain(ctypes.byref(c1), 1)
            cu.cuCtxGetCurrent(ctypes.byref(cur))
            out("distinct", c0.value != c1.value); out("current_is_1", cur.value == c1.value)
            seen = []
            t = threading.Thread(target=lambda: seen.append(device())); t.start(); t.join()
            out("new_thread", seen[0]); out("this_thread", device())
            a, b = ptr(), ptr()
            rt.cudaMalloc(ctypes.byref(a), ctypes.c_size_t(1 << 20))
            rt.cudaSetDevice(0); rt.cudaMalloc(ctypes.byref(b), ctypes.c_size_t(1 << 20))
            o = ctypes.c_int()
            cu.cuPointerGetAttribute(ctypes.byref(o), 9, ctypes.c_void_p(a.value)); out("a_on", o.value)  # DEVICE_ORDINAL
            cu.cuPointerGetAttribute(ctypes.byref(o), 9, ctypes.c_void_p(b.value)); out("b_on", o.value)
        """, SIM_DEVICE_COUNT=4)
        self.assertEqual(results, {"active1_before": "0", "set1": "0", "active1_after": "1", "active3": "0",
                                   "distinct": "True", "current_is_1": "True", "new_thread": "0", "this_thread": "1",
                                   "a_on": "1", "b_on": "0"})
        allocs = ops(lines, "mem_alloc")
        self.assertEqual([a["device"] for a in allocs], [1, 0])
        self.assertNotEqual(allocs[0]["context"], allocs[1]["context"], "each device's primary context has its own id")

    def test_streams_events_and_timelines_are_per_device(self):
        results, lines = run_script("""
            rt.cudaSetDevice(0); k = kernel(b"long_kernel")
            s0, s1, e0, e1 = ptr(), ptr(), ptr(), ptr()
            rt.cudaStreamCreate(ctypes.byref(s0)); rt.cudaEventCreate(ctypes.byref(e0))
            buf0 = ptr(); rt.cudaMalloc(ctypes.byref(buf0), ctypes.c_size_t(4096))
            rt.cudaSetDevice(1); rt.cudaStreamCreate(ctypes.byref(s1)); rt.cudaEventCreate(ctypes.byref(e1))
            buf1 = ptr(); rt.cudaMalloc(ctypes.byref(buf1), ctypes.c_size_t(4096))
            # Each device's default stream: they do not wait for each other.
            rt.cudaSetDevice(0); out("k0", launch(k))
            rt.cudaSetDevice(1); out("k1", launch(k))
            # Current device 1. A copy may go to another device's stream (a kernel may not: the next test).
            out("copy_other", rt.cudaMemcpyAsync(buf0, buf1, ctypes.c_size_t(4096), 3, s0))
            out("record_other", rt.cudaEventRecord(e0, s1))
            out("record_e0", rt.cudaEventRecord(e0, s0))
            out("record_own", rt.cudaEventRecord(e1, s1))
            # Device 0's stream waits for device 1's event: the way devices synchronise.
            out("wait_cross", rt.cudaStreamWaitEvent(s0, e1, 0))
            out("after_wait", rt.cudaMemsetAsync(buf0, 2, ctypes.c_size_t(4096), s0))
            rt.cudaEventSynchronize(e1); rt.cudaEventSynchronize(e0)
            ms = ctypes.c_float(); out("elapsed_cross", rt.cudaEventElapsedTime(ctypes.byref(ms), e0, e1))
            out("sync1", rt.cudaDeviceSynchronize())
            rt.cudaSetDevice(0); out("sync0", rt.cudaDeviceSynchronize())
        """, SIM_DEVICE_COUNT=2, SIM_KERNEL_NS="long_kernel=20000000")
        for key in ("k0", "k1", "copy_other", "record_e0", "record_own", "wait_cross", "after_wait", "sync0", "sync1"):
            self.assertEqual(results[key], "0", key)
        self.assertEqual(results["record_other"], str(INVALID_HANDLE), "an event records on its own device's streams")
        self.assertEqual(results["elapsed_cross"], str(INVALID_HANDLE), "events of two devices")
        k0, k1 = ops(lines, "kernel")
        copy, after = ops(lines, "memcpy")[0], ops(lines, "memset")[0]
        self.assertEqual([(k["device"], k["stream"]) for k in (k0, k1)], [(0, truth.LEGACY_STREAM), (1, truth.LEGACY_STREAM)])
        self.assertLess(k1["start_ns"], k0["end_ns"], "two devices' default streams run side by side")
        self.assertEqual((copy["device"], copy["stream"]), (0, 13), "the copy runs on its stream's device")
        self.assertEqual((copy["copy_kind"], copy["src_device"], copy["dst_device"]), (truth.PTOP, 1, 0),
                         "device 1's memory to device 0's: a peer-to-peer copy")
        self.assertEqual(copy["end_ns"] - copy["start_ns"], truth.copy_ns(copy))
        self.assertNotEqual(copy["context"], k1["context"])
        self.assertEqual(copy["context"], k0["context"], "with the context of its device")
        # s0 is a blocking stream: it waits for device 0's legacy stream, not device 1's...
        self.assertGreaterEqual(copy["start_ns"], k0["end_ns"])
        # ...until it waits for device 1's event, recorded on s1 (device 1's first stream, id 13 there
        # too), a blocking stream behind device 1's kernel.
        self.assertEqual((after["device"], after["stream"]), (0, 13))
        self.assertGreaterEqual(after["start_ns"], k1["end_ns"], "s0 waited for device 1's event")
        device_syncs = [s for s in ops(lines, "sync") if s["api"] == "cudaDeviceSynchronize"]
        self.assertEqual([s["device"] for s in device_syncs], [1, 0])
        self.assertEqual(device_syncs[0]["waited_until_ns"], k1["end_ns"], "device 1's synchronize: device 1's work")
        self.assertEqual(device_syncs[1]["waited_until_ns"], after["end_ns"])

    def test_a_kernel_launch_into_another_devices_stream_fails(self):
        results, lines = run_script("""
            out("set0", rt.cudaSetDevice(0))
            k = kernel(b"k")
            s1 = ptr()
            rt.cudaSetDevice(1); rt.cudaStreamCreate(ctypes.byref(s1)); rt.cudaSetDevice(0)
            out("launch_other", launch(k, s1))
            rt.cudaSetDevice(1)
            out("launch_own", launch(k, s1))
            out("launch_default", launch(k, None, 2))
            rt.cudaDeviceSynchronize()
        """, SIM_DEVICE_COUNT=2)
        self.assertEqual(results, {"set0": "0", "launch_other": str(INVALID_HANDLE), "launch_own": "0",
                                   "launch_default": "0"})
        kernels = ops(lines, "kernel")
        self.assertEqual([(k["device"], k["stream"]) for k in kernels], [(1, 13), (1, truth.LEGACY_STREAM)])

    def test_peer_access_between_distinct_devices(self):
        results, lines = run_script("""
            p = ctypes.c_int()
            rt.cudaDeviceCanAccessPeer(ctypes.byref(p), 0, 1); out("can01", p.value)
            rt.cudaDeviceCanAccessPeer(ctypes.byref(p), 2, 2); out("can22", p.value)
            out("can_bad", rt.cudaDeviceCanAccessPeer(ctypes.byref(p), 0, 3))
            out("enable1", rt.cudaDeviceEnablePeerAccess(1, 0))
            out("enable1_again", rt.cudaDeviceEnablePeerAccess(1, 0))
            out("enable_self", rt.cudaDeviceEnablePeerAccess(0, 0))
            out("enable_bad", rt.cudaDeviceEnablePeerAccess(5, 0))
            out("enable_flags", rt.cudaDeviceEnablePeerAccess(2, 1))
            rt.cudaSetDevice(1); out("from1_not_enabled", rt.cudaDeviceDisablePeerAccess(0))
            rt.cudaSetDevice(0)
            out("disable1", rt.cudaDeviceDisablePeerAccess(1))
            out("disable1_again", rt.cudaDeviceDisablePeerAccess(1))
            src, dst = ptr(), ptr()
            rt.cudaMalloc(ctypes.byref(src), ctypes.c_size_t(4096))
            rt.cudaSetDevice(2); rt.cudaMalloc(ctypes.byref(dst), ctypes.c_size_t(4096))
            data = ctypes.create_string_buffer(bytes(range(256)) * 16, 4096)
            rt.cudaMemcpy(src, data, ctypes.c_size_t(4096), 1)
            out("peer_copy", rt.cudaMemcpyPeer(dst, 2, src, 0, ctypes.c_size_t(4096)))
            back = ctypes.create_string_buffer(4096)
            rt.cudaMemcpy(back, dst, ctypes.c_size_t(4096), 2); out("moved", back.raw == data.raw)
            out("peer_copy_bad", rt.cudaMemcpyPeer(dst, 2, src, 3, ctypes.c_size_t(4096)))
        """, SIM_DEVICE_COUNT=3)
        self.assertEqual(results, {"can01": "1", "can22": "0", "can_bad": str(INVALID_DEVICE), "enable1": "0",
                                   "enable1_again": str(PEER_ALREADY_ENABLED), "enable_self": str(INVALID_DEVICE),
                                   "enable_bad": str(INVALID_DEVICE), "enable_flags": "1",
                                   "from1_not_enabled": str(PEER_NOT_ENABLED), "disable1": "0",
                                   "disable1_again": str(PEER_NOT_ENABLED), "peer_copy": "0", "moved": "True",
                                   "peer_copy_bad": str(INVALID_DEVICE)})
        h2d, peer, d2h = ops(lines, "memcpy")
        self.assertEqual((peer["copy_kind"], peer["src_device"], peer["dst_device"], peer["device"]), (truth.PTOP, 0, 2, 2))
        self.assertEqual(peer["end_ns"] - peer["start_ns"], truth.copy_ns(peer))
        # Host memory has no device: its side names the device that ran the copy (the current one, 2).
        self.assertEqual((h2d["copy_kind"], h2d["device"], h2d["src_device"], h2d["dst_device"]), (truth.HTOD, 2, 2, 0))
        self.assertEqual((d2h["copy_kind"], d2h["device"], d2h["src_device"]), (truth.DTOH, 2, 2))

    def test_memory_is_counted_per_device(self):
        results, _ = run_script("""
            free0, total = ctypes.c_size_t(), ctypes.c_size_t()
            rt.cudaMemGetInfo(ctypes.byref(free0), ctypes.byref(total))
            rt.cudaSetDevice(1)
            p = ptr(); rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 30))
            free1 = ctypes.c_size_t(); rt.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total))
            rt.cudaSetDevice(0)
            again = ctypes.c_size_t(); rt.cudaMemGetInfo(ctypes.byref(again), ctypes.byref(total))
            out("dev1_used", total.value - free1.value); out("dev0_unchanged", again.value == free0.value)
            out("free_from_other_device", rt.cudaFree(p))
            rt.cudaSetDevice(1); rt.cudaMemGetInfo(ctypes.byref(free1), ctypes.byref(total))
            out("dev1_after_free", total.value - free1.value)
            pool0, pool1 = ptr(), ptr()
            rt.cudaDeviceGetDefaultMemPool(ctypes.byref(pool0), 0); rt.cudaDeviceGetDefaultMemPool(ctypes.byref(pool1), 1)
            out("pools_distinct", pool0.value != pool1.value)
        """, SIM_DEVICE_COUNT=2)
        self.assertEqual(results, {"dev1_used": str(1 << 30), "dev0_unchanged": "True", "free_from_other_device": "0",
                                   "dev1_after_free": "0", "pools_distinct": "True"})


NCCL_PRELUDE = PRELUDE + textwrap.dedent("""
    nccl = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libnccl.so.2"))
    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]
""")


class NcclAcrossDevicesTest(unittest.TestCase):
    def test_comm_init_all_puts_one_rank_on_each_device(self):
        results, lines = run_script(NCCL_PRELUDE[len(PRELUDE):] + textwrap.dedent("""
            comms = (ctypes.c_void_p * 2)()
            out("init", nccl.ncclCommInitAll(comms, 2, None))
            devs = []
            for i in range(2):
                d = ctypes.c_int(); nccl.ncclCommCuDevice(ctypes.c_void_p(comms[i]), ctypes.byref(d)); devs.append(d.value)
            out("devices", devs)
            streams, bufs = [ptr(), ptr()], [ptr(), ptr()]
            for i in range(2):
                rt.cudaSetDevice(i); rt.cudaStreamCreate(ctypes.byref(streams[i]))
                rt.cudaMalloc(ctypes.byref(bufs[i]), ctypes.c_size_t(1 << 20))
            # One thread drives both communicators in a group; the current device is 1 at ncclGroupEnd.
            nccl.ncclGroupStart()
            for i in range(2):
                nccl.ncclAllReduce(bufs[i], bufs[i], ctypes.c_size_t(1 << 18), 7, 0, ctypes.c_void_p(comms[i]), streams[i])
            out("group", nccl.ncclGroupEnd())
            for i in range(2):
                out(f"sync{i}", rt.cudaStreamSynchronize(streams[i]))
            out("dup", nccl.ncclCommInitAll(comms, 2, (ctypes.c_int * 2)(1, 1)))
            out("bad", nccl.ncclCommInitAll(comms, 1, (ctypes.c_int * 1)(2)))
        """), SIM_DEVICE_COUNT=2)
        self.assertEqual(results, {"init": "0", "devices": "[0, 1]", "group": "0", "sync0": "0", "sync1": "0",
                                   "dup": "5", "bad": "4"})
        self.assertEqual(sorted(c["device"] for c in truth.of_type(lines, "comm_init")), [0, 1])
        kernels = [k for k in ops(lines, "kernel") if "AllReduce" in k["name"]]
        self.assertEqual(sorted(k["device"] for k in kernels), [0, 1])
        self.assertEqual(len({k["end_ns"] for k in kernels}), 1, "both ranks' kernels of one collective end together")

    def test_one_device_per_process_as_torchrun_sets_local_rank(self):
        world = 4
        with tempfile.TemporaryDirectory() as tmp:
            truth_path = os.path.join(tmp, "truth.jsonl")
            script = NCCL_PRELUDE + textwrap.dedent(f"""
                import time
                rank = int(os.environ["RANK"]); local = int(os.environ["LOCAL_RANK"])
                assert rt.cudaSetDevice(local) == 0
                uid = UniqueId(); path = os.path.join({tmp!r}, "uid")
                if rank == 0:
                    nccl.ncclGetUniqueId(ctypes.byref(uid))
                    with open(path + ".tmp", "wb") as f: f.write(bytes(uid))
                    os.rename(path + ".tmp", path)
                else:
                    while not os.path.exists(path): time.sleep(0.01)
                    ctypes.memmove(ctypes.byref(uid), open(path, "rb").read(), 128)
                comm = ptr()
                assert nccl.ncclCommInitRank(ctypes.byref(comm), {world}, uid, rank) == 0
                d = ctypes.c_int(); nccl.ncclCommCuDevice(comm, ctypes.byref(d)); out("comm_device", d.value)
                s, buf = ptr(), ptr()
                rt.cudaStreamCreate(ctypes.byref(s)); rt.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(1 << 22))
                assert nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(1 << 20), 7, 0, comm, s) == 0
                assert rt.cudaStreamSynchronize(s) == 0
                out("done", device())
            """)
            env = harness.sim_env(SIM_LIB_DIR=harness.SIM_LIB_DIR, SIM_DEVICE_COUNT=world, SIM_TRUTH_FILE=truth_path)
            procs = multirank.launch([sys.executable, "-c", script], world, env, timeout=120)
            lines = truth.read(truth_path)
        for rank, proc in enumerate(procs):
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(proc.stdout.split(), ["comm_device", str(rank), "done", str(rank)])
        kernels = [k for k in ops(lines, "kernel") if "AllReduce" in k["name"]]
        self.assertEqual(sorted(k["device"] for k in kernels), list(range(world)))
        collectives = truth.of_type(lines, "nccl")
        self.assertEqual(len(collectives), world)
        by_pid = {k["pid"]: k["device"] for k in kernels}
        self.assertEqual(sorted(by_pid.values()), list(range(world)), "each process's kernel on its LOCAL_RANK")


if __name__ == "__main__":
    harness.main()
