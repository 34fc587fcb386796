"""Stream capture on the simulated stack as CUDA documents it (cuda.h,
cuda_runtime_api.h; test/sim/README.md "CUDA graphs"): several streams in
one capture through events recorded and waited on inside it (fork and
join), each stream's dependency set (cudaStreamGetCaptureInfo), the capture
modes and the calls they prohibit, invalidation, cudaStreamEndCapture's
errors, graph queries, instantiate flags, update, and replay: every captured
kernel, copy and memset runs on the launch stream's timeline with the
executable graph's id and its node's id, as CUPTI's records carry them."""
import os
import sys
import textwrap
import unittest

import harness
from sim_child import PRELUDE

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

# cudaError_t values (driver_types.h)
INVALID_VALUE, INVALID_HANDLE, ILLEGAL_STATE = 1, 400, 401
UNSUPPORTED, INVALIDATED, MERGE, UNMATCHED, UNJOINED, ISOLATION, IMPLICIT, WRONG_THREAD = (
    900, 901, 902, 903, 904, 905, 906, 908)
EXEC_UPDATE_FAILURE = 910
NONE, ACTIVE, STATUS_INVALIDATED = 0, 1, 2  # cudaStreamCaptureStatus
GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2     # cudaStreamCaptureMode
# cudaGraphNodeType
KERNEL, MEMCPY, MEMSET, HOST, EVENT_RECORD, WAIT_EVENT = 0, 1, 2, 3, 7, 6

CAPTURE_PRELUDE = PRELUDE + textwrap.dedent("""
    import threading
    def stream(flags=1):  # non-blocking unless asked
        s = ptr(); assert rt.cudaStreamCreateWithFlags(ctypes.byref(s), flags) == 0; return s
    def event():
        e = ptr(); assert rt.cudaEventCreate(ctypes.byref(e)) == 0; return e
    def status(s):
        st = ctypes.c_int(-1); rc = rt.cudaStreamIsCapturing(s, ctypes.byref(st)); return f"{rc} {st.value}"
    def info(s):
        st, cid, graph, deps, n = ctypes.c_int(-1), ctypes.c_ulonglong(0), ptr(), ctypes.c_void_p(), ctypes.c_size_t(0)
        rc = rt.cudaStreamGetCaptureInfo(s, ctypes.byref(st), ctypes.byref(cid), ctypes.byref(graph),
                                         ctypes.byref(deps), None, ctypes.byref(n))
        nodes = [ctypes.cast(deps, ctypes.POINTER(ctypes.c_void_p))[i] for i in range(n.value)] if deps.value else []
        return rc, st.value, cid.value, graph.value, nodes
    def end(s):
        g = ptr(); rc = rt.cudaStreamEndCapture(s, ctypes.byref(g)); return rc, g
    def nodes_of(g):
        n = ctypes.c_size_t(0); rt.cudaGraphGetNodes(g, None, ctypes.byref(n))
        arr = (ctypes.c_void_p * n.value)(); rt.cudaGraphGetNodes(g, arr, ctypes.byref(n))
        return list(arr)
    def node_type(node):
        t = ctypes.c_int(-1); rt.cudaGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(t)); return t.value
    def deps_of(node):
        n = ctypes.c_size_t(0); rt.cudaGraphNodeGetDependencies(ctypes.c_void_p(node), None, None, ctypes.byref(n))
        arr = (ctypes.c_void_p * max(n.value, 1))(); rt.cudaGraphNodeGetDependencies(ctypes.c_void_p(node), arr, None, ctypes.byref(n))
        return list(arr)[:n.value]
    def mode(m):
        v = ctypes.c_int(m); rt.cudaThreadExchangeStreamCaptureMode(ctypes.byref(v)); return v.value
    rt.cudaSetDevice(0)
    k1, k2 = kernel(b"capture_k1"), kernel(b"capture_k2")
    buf, host = ptr(), ptr()
    rt.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(1 << 20)); rt.cudaMallocHost(ctypes.byref(host), ctypes.c_size_t(1 << 20))
""")


def run_script(body, **env):
    return harness.run_sim_script(CAPTURE_PRELUDE + textwrap.dedent(body), truth.read, **env)


def outer(lines, name):
    return [c for c in truth.api(lines, name) if c["correlation"] == c["outer_correlation"]]


class ForkJoinCaptureTest(unittest.TestCase):
    """origin: memset A, record e0; side waits e0 (joins), kernel B; origin
    kernel C; side records e1, origin waits e1 (joins back); origin copy D."""

    @classmethod
    def setUpClass(cls):
        cls.results, cls.lines = run_script("""
            s0, s1 = stream(), stream()
            e0, e1 = event(), event()
            out("begin", rt.cudaStreamBeginCapture(s0, 0))
            out("side_before", status(s1))
            out("A", rt.cudaMemsetAsync(buf, 7, ctypes.c_size_t(4096), s0))
            out("record_e0", rt.cudaEventRecord(e0, s0))
            out("side_waits", rt.cudaStreamWaitEvent(s1, e0, 0))
            out("side_joined", status(s1))
            rc0, _, id0, g0, deps0 = info(s0); rc1, _, id1, g1, deps1 = info(s1)
            out("same_capture", (rc0, rc1, id0 == id1, g0 == g1, deps0 == deps1, len(deps0)))
            out("B", launch(k1, s1, 4))
            out("C", launch(k2, s0, 8))
            out("record_e1", rt.cudaEventRecord(e1, s1))
            out("origin_waits", rt.cudaStreamWaitEvent(s0, e1, 0))
            out("origin_deps", len(info(s0)[4]))
            out("D", rt.cudaMemcpyAsync(host, buf, ctypes.c_size_t(4096), 2, s0))
            rc, g = end(s0)
            out("end", rc); out("side_after", status(s1)); out("origin_after", status(s0))
            nodes = nodes_of(g)
            out("types", [node_type(n) for n in nodes])
            out("deps", [[nodes.index(d) for d in deps_of(n)] for n in nodes])
            roots = ctypes.c_size_t(0); rt.cudaGraphGetRootNodes(g, None, ctypes.byref(roots)); out("roots", roots.value)
            x = ptr(); out("instantiate", rt.cudaGraphInstantiateWithFlags(ctypes.byref(x), g, 1))
            flags = ctypes.c_ulonglong(9); rt.cudaGraphExecGetFlags(x, ctypes.byref(flags)); out("flags", flags.value)
            out("upload", rt.cudaGraphUpload(x, s0))
            for i in range(2):
                out(f"launch{i}", rt.cudaGraphLaunch(x, s0))
            out("sync", rt.cudaStreamSynchronize(s0))
            out("e0_after_capture", rt.cudaEventQuery(e0))
        """)

    def test_the_calls_succeed_and_the_side_stream_joins_and_leaves(self):
        r = self.results
        for key in ("begin", "A", "record_e0", "side_waits", "B", "C", "record_e1", "origin_waits", "D", "end",
                    "instantiate", "upload", "launch0", "launch1", "sync"):
            self.assertEqual(r[key], "0", key)
        self.assertEqual(r["side_before"], f"0 {NONE}")
        self.assertEqual(r["side_joined"], f"0 {ACTIVE}")
        self.assertEqual(r["same_capture"], "(0, 0, True, True, True, 1)", "one capture, one graph, A pending on both")
        self.assertEqual(r["origin_deps"], "2", "after the join the origin depends on C and B")
        self.assertEqual((r["side_after"], r["origin_after"]), (f"0 {NONE}", f"0 {NONE}"))
        self.assertEqual(r["flags"], "1")
        # An event last recorded inside a capture cannot be queried (it stands for no work).
        self.assertEqual(r["e0_after_capture"], str(UNSUPPORTED))

    def test_the_graph_has_the_forked_shape(self):
        self.assertEqual(self.results["types"], str([MEMSET, KERNEL, KERNEL, MEMCPY]))
        self.assertEqual(self.results["deps"], "[[], [0], [0], [2, 1]]")
        self.assertEqual(self.results["roots"], "1")

    def test_captured_work_runs_only_when_the_graph_is_launched(self):
        nodes = truth.of_type(self.lines, "graph_node")
        self.assertEqual(len(nodes), 4)
        made_in = [n["api"] for n in nodes]
        self.assertEqual(made_in, ["cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync"],
                         "each node reported inside the call that captured it")
        launches = outer(self.lines, "cudaGraphLaunch")
        ran = [op for op in self.lines if op["type"] in truth.DEVICE_OPS]
        self.assertEqual({op["correlation"] for op in ran}, {c["correlation"] for c in launches},
                         "no captured call ran anything; every op belongs to a graph launch")
        # No synchronization record for the waits made inside the capture.
        self.assertEqual([s for s in truth.of_type(self.lines, "sync") if s["api"] == "cudaStreamWaitEvent"], [])

    def test_each_launch_replays_every_node_in_order_on_the_launch_stream(self):
        launches = outer(self.lines, "cudaGraphLaunch")
        execs = truth.of_type(self.lines, "graph_exec")
        self.assertEqual(len(execs), 1)
        node_ids = None
        for launch in launches:
            mine = [op for op in self.lines if op["type"] in truth.DEVICE_OPS and op["correlation"] == launch["correlation"]]
            self.assertEqual([op["type"] for op in mine], ["memset", "kernel", "kernel", "memcpy"])
            self.assertEqual([op["name"] for op in mine if op["type"] == "kernel"], ["capture_k1", "capture_k2"])
            self.assertEqual({op["graph_id"] for op in mine}, {execs[0]["graph_id"]})
            ids = [op["graph_node_id"] for op in mine]
            self.assertEqual(len(set(ids)), 4)
            self.assertTrue(all(ids))
            if node_ids is not None:
                self.assertEqual(ids, node_ids, "the same executable graph's nodes on every launch")
            node_ids = ids
            self.assertEqual(len({op["stream"] for op in mine}), 1, "all on the launch stream")
            end = launch["start_ns"]
            for op in mine:
                self.assertGreaterEqual(op["start_ns"], end, "in order, each after the previous one")
                end = op["end_ns"]
            self.assertEqual(mine[1]["end_ns"] - mine[1]["start_ns"], truth.kernel_ns(mine[1]))
            self.assertEqual(mine[3]["end_ns"] - mine[3]["start_ns"], truth.copy_ns(mine[3]))
        self.assertGreaterEqual(launches[1]["start_ns"], launches[0]["start_ns"])


class CaptureEndTest(unittest.TestCase):
    def test_an_unjoined_fork_fails_the_capture_and_frees_its_streams(self):
        results, lines = run_script("""
            s0, s1 = stream(), stream()
            e = event()
            rt.cudaStreamBeginCapture(s0, 0)
            launch(k1, s0); rt.cudaEventRecord(e, s0); rt.cudaStreamWaitEvent(s1, e, 0)
            out("side_kernel", launch(k2, s1))
            out("end_on_side", end(s1)[0])
            rc, g = end(s0)
            out("end", rc); out("graph_null", g.value is None)
            out("side_after", status(s1))
            out("runs_now", launch(k2, s1)); rt.cudaStreamSynchronize(s1)
        """)
        self.assertEqual(results, {"side_kernel": "0", "end_on_side": str(UNMATCHED), "end": str(UNJOINED),
                                   "graph_null": "True", "side_after": f"0 {NONE}", "runs_now": "0"})
        self.assertEqual([k["name"] for k in truth.of_type(lines, "kernel")], ["capture_k2"], "only the launch after it")

    def test_end_capture_errors(self):
        results, _ = run_script("""
            s = stream()
            out("not_capturing", end(s)[0])
            out("legacy", rt.cudaStreamBeginCapture(None, 0))
            out("bad_mode", rt.cudaStreamBeginCapture(s, 3))
            out("begin", rt.cudaStreamBeginCapture(s, 0))
            out("again", rt.cudaStreamBeginCapture(s, 0))
            out("null_graph", rt.cudaStreamEndCapture(s, None))
            t = threading.Thread(target=lambda: out("other_thread", end(s)[0])); t.start(); t.join()
            out("still", status(s))
            out("own_thread", end(s)[0])
            out("begin_relaxed", rt.cudaStreamBeginCapture(s, 2))
            t = threading.Thread(target=lambda: out("relaxed_other_thread", end(s)[0])); t.start(); t.join()
        """)
        self.assertEqual(results, {"not_capturing": str(ILLEGAL_STATE), "legacy": str(UNSUPPORTED),
                                   "bad_mode": str(INVALID_VALUE), "begin": "0", "again": str(ILLEGAL_STATE),
                                   "null_graph": str(INVALID_VALUE), "other_thread": str(WRONG_THREAD),
                                   "still": f"0 {ACTIVE}", "own_thread": "0", "begin_relaxed": "0",
                                   "relaxed_other_thread": "0"})


class InvalidationTest(unittest.TestCase):
    """Operations that conflict with a capture fail and invalidate it; the
    capture then refuses work until it is ended, which gives no graph."""

    def run_invalidating(self, call, **env):
        results, lines = run_script(f"""
            s = stream(0)  # blocking
            e = event()
            rt.cudaEventRecord(e, None); rt.cudaStreamSynchronize(None)
            rt.cudaStreamBeginCapture(s, 0)
            launch(k1, s)
            out("call", {call})
            out("status", status(s))
            out("next", launch(k2, s))
            rc, g = end(s)
            out("end", rc); out("graph_null", g.value is None)
            out("after", status(s))
        """, **env)
        self.assertEqual(results["status"], f"0 {STATUS_INVALIDATED}")
        self.assertEqual(results["next"], str(INVALIDATED))
        self.assertEqual((results["end"], results["graph_null"], results["after"]), (str(INVALIDATED), "True", f"0 {NONE}"))
        self.assertEqual(truth.of_type(lines, "kernel"), [], "nothing captured ran")
        return results["call"]

    def test_synchronising_or_querying_the_capturing_stream(self):
        self.assertEqual(self.run_invalidating("rt.cudaStreamSynchronize(s)"), str(UNSUPPORTED))
        self.assertEqual(self.run_invalidating("rt.cudaStreamQuery(s)"), str(UNSUPPORTED))

    def test_synchronising_the_device(self):
        self.assertEqual(self.run_invalidating("rt.cudaDeviceSynchronize()"), str(UNSUPPORTED))

    def test_the_legacy_stream_while_a_blocking_stream_captures(self):
        self.assertEqual(self.run_invalidating("rt.cudaMemsetAsync(buf, 0, ctypes.c_size_t(256), None)"), str(IMPLICIT))
        self.assertEqual(self.run_invalidating("launch(k2, None)"), str(IMPLICIT))

    def test_an_unsafe_call_in_global_mode(self):
        self.assertEqual(self.run_invalidating("rt.cudaMalloc(ctypes.byref(ptr()), ctypes.c_size_t(256))"),
                         str(UNSUPPORTED))
        self.assertEqual(self.run_invalidating("rt.cudaEventQuery(e)"), str(UNSUPPORTED))

    def test_waiting_on_work_outside_the_capture(self):
        self.assertEqual(self.run_invalidating("rt.cudaStreamWaitEvent(s, e, 0)"), str(ISOLATION))

    def test_legacy_queries_say_implicit_without_invalidating(self):
        results, _ = run_script("""
            s = stream(0)
            rt.cudaStreamBeginCapture(s, 0)
            out("is_capturing_legacy", status(None).split()[0])
            out("info_legacy", info(None)[0])
            out("status", status(s))
            out("end", end(s)[0])
            n = stream(1)
            rt.cudaStreamBeginCapture(n, 0)
            out("legacy_beside_nonblocking", rt.cudaMemsetAsync(buf, 0, ctypes.c_size_t(256), None))
            out("end_nonblocking", end(n)[0])
        """)
        self.assertEqual(results, {"is_capturing_legacy": str(IMPLICIT), "info_legacy": str(IMPLICIT),
                                   "status": f"0 {ACTIVE}", "end": "0", "legacy_beside_nonblocking": "0",
                                   "end_nonblocking": "0"})

    def test_merging_two_captures(self):
        results, _ = run_script("""
            a, b = stream(), stream()
            e = event()
            rt.cudaStreamBeginCapture(a, 2); rt.cudaStreamBeginCapture(b, 2)
            launch(k1, b); rt.cudaEventRecord(e, b)
            out("wait", rt.cudaStreamWaitEvent(a, e, 0))
            out("a", status(a)); out("b", status(b))
            out("end_a", end(a)[0]); out("end_b", end(b)[0])
        """)
        self.assertEqual(results, {"wait": str(MERGE), "a": f"0 {STATUS_INVALIDATED}", "b": f"0 {STATUS_INVALIDATED}",
                                   "end_a": str(INVALIDATED), "end_b": str(INVALIDATED)})


class CaptureModeTest(unittest.TestCase):
    def test_modes_decide_which_threads_may_make_unsafe_calls(self):
        results, _ = run_script("""
            def other(key, m=None):
                def body():
                    if m is not None: mode(m)
                    p = ptr(); out(key, rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(256)))
                t = threading.Thread(target=body); t.start(); t.join()
            def scenario(name, begin_mode, own_mode=None):
                s = stream()
                rt.cudaStreamBeginCapture(s, begin_mode)
                previous = mode(own_mode) if own_mode is not None else None
                p = ptr(); out(name + "_self", rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(256)))
                if previous is not None: mode(previous)
                out(name + "_status", status(s).split()[1])
                end(s)
            scenario("global", 0)
            scenario("global_relaxed_thread", 0, 2)
            scenario("thread_local", 1)
            scenario("relaxed", 2)
            for begin_mode, name in ((0, "global"), (1, "thread_local")):
                s = stream()
                rt.cudaStreamBeginCapture(s, begin_mode)
                other(name + "_other")
                other(name + "_other_thread_local_mode", 1)
                out(name + "_other_status", status(s).split()[1])
                end(s)
            out("exchange", mode(1)); out("exchange_back", mode(0))
        """)
        self.assertEqual(results, {
            # this thread, its own capture: prohibited unless begun relaxed or the thread is relaxed
            "global_self": str(UNSUPPORTED), "global_status": str(STATUS_INVALIDATED),
            "global_relaxed_thread_self": "0", "global_relaxed_thread_status": str(ACTIVE),
            "thread_local_self": str(UNSUPPORTED), "thread_local_status": str(STATUS_INVALIDATED),
            "relaxed_self": "0", "relaxed_status": str(ACTIVE),
            # another thread: a global capture prohibits it in global mode only; a thread-local one never
            "global_other": str(UNSUPPORTED), "global_other_thread_local_mode": "0",
            "global_other_status": str(STATUS_INVALIDATED),
            "thread_local_other": "0", "thread_local_other_thread_local_mode": "0",
            "thread_local_other_status": str(ACTIVE),
            "exchange": "0", "exchange_back": "1"})


class CaptureNodesTest(unittest.TestCase):
    def test_host_functions_are_nodes_and_callbacks_are_refused(self):
        results, lines = run_script("""
            CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(lambda s, st, d: None)
            FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda d: None)
            s = stream()
            rt.cudaStreamBeginCapture(s, 0)
            launch(k1, s)
            out("host", rt.cudaLaunchHostFunc(s, FN, None))
            rc, g = end(s)
            out("end", rc); out("types", [node_type(n) for n in nodes_of(g)])
            x = ptr(); rt.cudaGraphInstantiate(ctypes.byref(x), g, 0)
            out("launch", rt.cudaGraphLaunch(x, s)); out("sync", rt.cudaStreamSynchronize(s))
            rt.cudaStreamBeginCapture(s, 0)
            out("callback", rt.cudaStreamAddCallback(s, CB, None, 0))
            out("end2", end(s)[0])
        """)
        self.assertEqual(results, {"host": "0", "end": "0", "types": str([KERNEL, HOST]), "launch": "0", "sync": "0",
                                   "callback": str(UNSUPPORTED), "end2": str(INVALIDATED)})
        launch = outer(lines, "cudaGraphLaunch")[0]
        runs = [h for h in truth.of_type(lines, "host_func") if h["correlation"] == launch["correlation"]]
        self.assertEqual(len(runs), 1, "the host node ran once, for the graph launch")
        kernel = [k for k in truth.of_type(lines, "kernel") if k["correlation"] == launch["correlation"]][0]
        self.assertGreaterEqual(runs[0]["ready_ns"], kernel["end_ns"], "after the kernel it depends on")

    def test_external_event_nodes_and_flags_outside_a_capture(self):
        results, _ = run_script("""
            s = stream()
            e = event()
            out("record_external_outside", rt.cudaEventRecordWithFlags(e, s, 1))
            out("wait_external_outside", rt.cudaStreamWaitEvent(s, e, 1))
            rt.cudaEventRecord(e, s); rt.cudaStreamSynchronize(s)
            rt.cudaStreamBeginCapture(s, 0)
            out("record_external", rt.cudaEventRecordWithFlags(e, s, 1))
            out("wait_external", rt.cudaStreamWaitEvent(s, e, 1))
            launch(k1, s)
            rc, g = end(s)
            nodes = nodes_of(g)
            out("types", [node_type(n) for n in nodes])
            out("chain", [[nodes.index(d) for d in deps_of(n)] for n in nodes])
        """)
        self.assertEqual(results, {"record_external_outside": str(INVALID_VALUE),
                                   "wait_external_outside": str(INVALID_VALUE), "record_external": "0",
                                   "wait_external": "0", "types": str([EVENT_RECORD, WAIT_EVENT, KERNEL]),
                                   "chain": "[[], [0], [1]]"})

    def test_capture_info_outputs(self):
        results, _ = run_script("""
            s = stream()
            st, n = ctypes.c_int(), ctypes.c_size_t()
            edges = ctypes.c_void_p()
            rt.cudaStreamBeginCapture(s, 0)
            out("edges_without_deps", rt.cudaStreamGetCaptureInfo(s, ctypes.byref(st), None, None, None,
                                                                   ctypes.byref(edges), ctypes.byref(n)))
            out("no_status", rt.cudaStreamGetCaptureInfo(s, None, None, None, None, None, None))
            launch(k1, s)
            deps = ctypes.c_void_p()
            out("with_edges", rt.cudaStreamGetCaptureInfo(s, ctypes.byref(st), None, None, ctypes.byref(deps),
                                                          ctypes.byref(edges), ctypes.byref(n)))
            out("n", n.value); out("edge_zero", bytes(ctypes.string_at(edges, 8)) == bytes(8))
            first = info(s)[2]
            end(s); rt.cudaStreamBeginCapture(s, 0)
            out("new_id", info(s)[2] != first); end(s)
            d = ctypes.c_void_p(); driver_rc = cu.cuStreamGetCaptureInfo_v2(s, ctypes.byref(st), None, None, ctypes.byref(d), ctypes.byref(n))
            out("driver_v2_idle", f"{driver_rc} {st.value}")
        """)
        self.assertEqual(results, {"edges_without_deps": str(INVALID_VALUE), "no_status": str(INVALID_VALUE),
                                   "with_edges": "0", "n": "1", "edge_zero": "True", "new_id": "True",
                                   "driver_v2_idle": f"0 {NONE}"})


class InstantiateAndUpdateTest(unittest.TestCase):
    def test_instantiate_flags_and_exec_update(self):
        results, lines = run_script("""
            s = stream()
            def capture(kernels):
                rt.cudaStreamBeginCapture(s, 0)
                for k, blocks in kernels: launch(k, s, blocks)
                return end(s)[1]
            g = capture([(k1, 1), (k2, 2)])
            x = ptr()
            out("device_launch_and_auto_free", rt.cudaGraphInstantiateWithFlags(ctypes.byref(x), g, 4 | 1))
            out("unknown_flag", rt.cudaGraphInstantiateWithFlags(ctypes.byref(x), g, 0x100))
            out("instantiate", rt.cudaGraphInstantiateWithFlags(ctypes.byref(x), g, 8))
            rt.cudaGraphLaunch(x, s)
            same = capture([(k1, 16), (k2, 32)])   # same topology, new parameters
            class Info(ctypes.Structure):
                _fields_ = [("result", ctypes.c_int), ("errorNode", ctypes.c_void_p), ("errorFromNode", ctypes.c_void_p)]
            info_ = Info()
            out("update", rt.cudaGraphExecUpdate(x, same, ctypes.byref(info_))); out("update_result", info_.result)
            rt.cudaGraphLaunch(x, s)
            other = capture([(k1, 1)])
            out("topology", rt.cudaGraphExecUpdate(x, other, ctypes.byref(info_))); out("topology_result", info_.result)
            rt.cudaStreamSynchronize(s)
            out("destroy_exec", rt.cudaGraphExecDestroy(x)); out("destroy_exec_again", rt.cudaGraphExecDestroy(x))
            out("destroy", rt.cudaGraphDestroy(g))
        """)
        self.assertEqual(results, {"device_launch_and_auto_free": str(INVALID_VALUE), "unknown_flag": str(INVALID_VALUE),
                                   "instantiate": "0", "update": "0", "update_result": "0",
                                   "topology": str(EXEC_UPDATE_FAILURE), "topology_result": "2",
                                   "destroy_exec": "0", "destroy_exec_again": str(INVALID_VALUE), "destroy": "0"})
        launches = outer(lines, "cudaGraphLaunch")
        runs = [[k for k in truth.of_type(lines, "kernel") if k["correlation"] == c["correlation"]] for c in launches]
        self.assertEqual([[k["grid"][0] for k in run] for run in runs], [[1, 2], [16, 32]], "the update's parameters")
        self.assertEqual([k["graph_node_id"] for k in runs[0]], [k["graph_node_id"] for k in runs[1]],
                         "the executable graph keeps its node ids")


if __name__ == "__main__":
    harness.main()
