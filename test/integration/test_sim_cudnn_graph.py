"""The simulated cuDNN's backend (graph) API (test/sim/README.md, "cuDNN
graph API") driven with ctypes, without PyTorch, the way cudnn-frontend
drives it: tensor descriptors, matmul / pointwise / reduction operations,
an operation graph, heuristics, engine config, plan, variant pack,
execute. A plan launches one kernel on the handle's stream, named after
the graph and timed by the FLOP model; attributes are type-checked as
cudnn_graph.h documents them, and misuse gets the documented statuses."""
import os
import sys
import textwrap
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

SUCCESS, NOT_INITIALIZED, BAD_PARAM, BAD_PARAM_NULL_POINTER, NOT_SUPPORTED = 0, 1001, 2000, 2002, 3000
FLOPS_PER_BLOCK = 2 * 128 * 128 * 256  # mathlibs/cudnn_backend_model.h: one block of the GEMM model
THREADS = 384


def ceil_div(a, b):
    return -(-a // b)


def sdpa_grid(flops, b, h):
    units = max(1, ceil_div(flops, FLOPS_PER_BLOCK))
    return [ceil_div(units, b * h), h, b]


def sdpa_kernel(direction, dtype="bf16"):
    return (f"cudnn_generated_fort_native_sdpa_sm90_flash_{direction}_wgmma_{dtype}"
            "_knob_3_64x64x128_4x1x1_kernel0_0")


# Runs in a child process (a fresh stack and truth log per scenario); prints
# one "key value" line per check. Numbers are cudnn_graph.h's.
PRELUDE = textwrap.dedent("""
    import ctypes, os
    lib = os.environ["SIM_LIB_DIR"]
    rt = ctypes.CDLL(os.path.join(lib, "libcudart.so.13"))
    dnn = ctypes.CDLL(os.path.join(lib, "libcudnn.so.9"))
    # descriptor types
    POINTWISE, ENGINE, ENGINECFG, HEUR, PLAN, KNOB_CHOICE, KNOB_INFO = 0, 2, 3, 4, 5, 7, 8
    OP_POINTWISE, GRAPH, PACK, TENSOR, MATMUL, OP_MATMUL, REDUCTION, OP_REDUCTION = 13, 15, 16, 17, 18, 19, 21, 22
    SDPA_FWD, SDPA_BWD = 41, 43
    # attribute types
    T_HANDLE, T_DATA_TYPE, T_BOOL, T_INT64, T_FLOAT, T_VOID_PTR, T_HEUR_MODE, T_KNOB_TYPE = 0, 1, 2, 3, 4, 6, 8, 9
    T_NUMERICAL_NOTE, T_POINTWISE_MODE, T_DESC, T_REDUCTION_OP, T_BEHAVIOR_NOTE, T_INT32, T_CHAR = 11, 14, 15, 18, 19, 23, 24
    BF16, F32 = 9, 0
    PW_ADD, PW_MUL, PW_DIV, PW_SUB, PW_EXP, PW_RELU = 0, 1, 6, 9, 13, 100
    RED_ADD, RED_MAX = 0, 3
    KNOB_KERNEL_CFG, HEUR_MODE_A = 24, 3
    def ptr():
        return ctypes.c_void_p()
    def out(key, value):
        print(key, value)
    def stream():
        s = ptr(); rt.cudaStreamCreate(ctypes.byref(s)); return s
    def dev(nbytes):
        d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(nbytes)); return d
    def mark(s, d):  # a memset on s: its truth line names the stream's id
        rt.cudaMemsetAsync(d, 0, ctypes.c_size_t(256), s)
    def create(kind):
        d = ptr(); r = dnn.cudnnBackendCreateDescriptor(kind, ctypes.byref(d)); assert r == 0, (kind, r); return d
    def bset(d, attr, atype, ctype, values):
        arr = (ctype * len(values))(*values)
        return dnn.cudnnBackendSetAttribute(d, attr, atype, ctypes.c_int64(len(values)), arr)
    def setd(d, attr, *descs):
        return bset(d, attr, T_DESC, ctypes.c_void_p, [x.value for x in descs])
    def bget(d, attr, atype, ctype, requested):
        arr, n = (ctype * max(requested, 1))(), ctypes.c_int64(-1)
        r = dnn.cudnnBackendGetAttribute(d, attr, atype, ctypes.c_int64(requested), ctypes.byref(n), arr)
        return r, n.value, list(arr)[:min(requested, max(n.value, 0))]
    def get_into(d, attr, kind, count):
        targets = [create(kind) for _ in range(count)]
        arr, n = (ctypes.c_void_p * count)(*[t.value for t in targets]), ctypes.c_int64(-1)
        r = dnn.cudnnBackendGetAttribute(d, attr, T_DESC, ctypes.c_int64(count), ctypes.byref(n), arr)
        return r, n.value, targets
    def fin(d):
        return dnn.cudnnBackendFinalize(d)
    def tensor(uid, dims, dtype=BF16, virtual=False, by_value=False, finalize=True):
        t = create(TENSOR)
        strides = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * dims[i + 1]
        bset(t, 906, T_INT64, ctypes.c_int64, [uid])
        bset(t, 901, T_DATA_TYPE, ctypes.c_int, [dtype])
        bset(t, 902, T_INT64, ctypes.c_int64, dims)
        bset(t, 903, T_INT64, ctypes.c_int64, strides)
        bset(t, 900, T_INT64, ctypes.c_int64, [16])
        if virtual: bset(t, 907, T_BOOL, ctypes.c_bool, [True])
        if by_value: bset(t, 908, T_BOOL, ctypes.c_bool, [True])
        if finalize: assert fin(t) == 0
        return t
    def matmul(a, b, c):
        desc = create(MATMUL); bset(desc, 1500, T_DATA_TYPE, ctypes.c_int, [F32]); assert fin(desc) == 0
        op = create(OP_MATMUL); setd(op, 1520, a); setd(op, 1521, b); setd(op, 1522, c); setd(op, 1523, desc)
        return op, fin(op)
    def pointwise(mode, x, y, b=None):
        desc = create(POINTWISE)
        bset(desc, 0, T_POINTWISE_MODE, ctypes.c_int, [mode]); bset(desc, 1, T_DATA_TYPE, ctypes.c_int, [F32])
        assert fin(desc) == 0
        op = create(OP_POINTWISE); setd(op, 750, desc); setd(op, 751, x); setd(op, 753, y)
        if b is not None: setd(op, 752, b)
        return op, fin(op)
    def reduction(mode, x, y):
        desc = create(REDUCTION)
        bset(desc, 1600, T_REDUCTION_OP, ctypes.c_int, [mode]); bset(desc, 1601, T_DATA_TYPE, ctypes.c_int, [F32])
        assert fin(desc) == 0
        op = create(OP_REDUCTION); setd(op, 1610, x); setd(op, 1611, y); setd(op, 1612, desc)
        return op, fin(op)
    def graph(handle, *ops):
        g = create(GRAPH); setd(g, 801, *ops)
        if handle is not None: bset(g, 800, T_HANDLE, ctypes.c_void_p, [handle.value])
        return g, fin(g)
    def plan_for(g):
        heur = create(HEUR); setd(heur, 201, g); bset(heur, 200, T_HEUR_MODE, ctypes.c_int, [HEUR_MODE_A])
        out("heur", fin(heur))
        r, n, _ = bget(heur, 202, T_DESC, ctypes.c_void_p, 0); out("results_count_query", r); out("results", n)
        r, n, [cfg] = get_into(heur, 202, ENGINECFG, 1); out("results_get", r)
        plan = create(PLAN); setd(plan, 401, cfg); out("plan", fin(plan))
        return plan, cfg
    def pack(uids, pointers, workspace=None, with_workspace=True):
        p = create(PACK)
        bset(p, 1000, T_INT64, ctypes.c_int64, uids)
        bset(p, 1001, T_VOID_PTR, ctypes.c_void_p, pointers)
        if with_workspace: bset(p, 1003, T_VOID_PTR, ctypes.c_void_p, [workspace])
        return p, fin(p)
    def workspace_of(plan):
        return bget(plan, 402, T_INT64, ctypes.c_int64, 1)[2][0]
""")


def run_script(*parts):
    return harness.run_sim_script(PRELUDE + "".join(textwrap.dedent(p) for p in parts), truth.read)


# The composite attention graph cudnn-frontend builds (softmax spelled out):
# S = Q·Kᵀ, scaled, softmax over the last axis, O = P·V; B=2, H=4, S=256, D=64.
SDPA_FORWARD = """
    B, H, S, D = 2, 4, 256, 64
    q, kt, v, o = tensor(1, [B, H, S, D]), tensor(2, [B, H, D, S]), tensor(3, [B, H, S, D]), tensor(4, [B, H, S, D])
    scale = tensor(5, [1, 1, 1, 1], dtype=F32, by_value=True)
    s1, s2, s3, e, p = (tensor(10 + i, [B, H, S, S], dtype=F32, virtual=True) for i in range(5))
    m, z = tensor(20, [B, H, S, 1], dtype=F32, virtual=True), tensor(21, [B, H, S, 1], dtype=F32, virtual=True)
    ops = [matmul(q, kt, s1), pointwise(PW_MUL, s1, s2, scale), reduction(RED_MAX, s2, m), pointwise(PW_SUB, s2, s3, m),
           pointwise(PW_EXP, s3, e), reduction(RED_ADD, e, z), pointwise(PW_DIV, e, p, z), matmul(p, v, o)]
    out("ops", sorted(set(r for _, r in ops)))
"""


class CudnnGraphTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(os.path.join(harness.SIM_LIB_DIR, "libcudnn.so.9"))

    def assert_kernel(self, kernel, name, grid, stream):
        self.assertEqual(kernel["name"], name)
        self.assertEqual(kernel["grid"], grid)
        self.assertEqual(kernel["block"], [THREADS, 1, 1])
        self.assertEqual(kernel["stream"], stream)
        self.assertEqual(kernel["end_ns"] - kernel["start_ns"], truth.kernel_ns(kernel))
        self.assertEqual(kernel["api"], "cudaLaunchKernel")  # the runtime linked into NVIDIA's libraries

    def test_an_attention_graph_runs_one_flash_kernel_on_the_handles_stream_timed_by_its_flops(self):
        results, lines = run_script(SDPA_FORWARD, """
            s = stream(); d = dev(1 << 20); mark(s, d)
            h = ptr(); dnn.cudnnCreate(ctypes.byref(h)); dnn.cudnnSetStream(h, s)
            g, r = graph(h, *(op for op, _ in ops)); out("graph", r)
            out("engine_count", bget(g, 802, T_INT64, ctypes.c_int64, 1)[2])
            plan, cfg = plan_for(g)
            # what the heuristic chose: engine 0 of the graph, its KERNEL_CFG knob at 3, no notes
            r, _, [engine] = get_into(cfg, 300, ENGINE, 1); out("cfg_engine", r)
            out("global_index", bget(engine, 1301, T_INT64, ctypes.c_int64, 1)[2])
            out("numerical_notes", bget(engine, 1303, T_NUMERICAL_NOTE, ctypes.c_int, 8)[1])
            out("behavior_notes", bget(engine, 1305, T_BEHAVIOR_NOTE, ctypes.c_int, 8)[1])
            r, n, [info] = get_into(engine, 1302, KNOB_INFO, 1); out("knob_infos", n)
            out("knob_info", [bget(info, a, t, ctypes.c_int64 if t == T_INT64 else ctypes.c_int, 1)[2][0]
                              for a, t in ((1200, T_KNOB_TYPE), (1202, T_INT64), (1201, T_INT64), (1203, T_INT64))])
            r, n, [choice] = get_into(cfg, 302, KNOB_CHOICE, 1); out("knob_choices", n)
            out("knob_choice", [bget(choice, 600, T_KNOB_TYPE, ctypes.c_int, 1)[2][0], bget(choice, 601, T_INT64, ctypes.c_int64, 1)[2][0]])
            out("plan_workspace", workspace_of(plan))
            json = bget(plan, 405, T_CHAR, ctypes.c_char, 4096)
            out("json_has_kernel", b"sdpa_sm90_flash_fprop" in b"".join(json[2]))
            # the graph holds copies: the caller's descriptors may go before execution
            for t in (q, kt): out("destroy_tensor", dnn.cudnnBackendDestroyDescriptor(t))
            p, r = pack([1, 2, 3, 4, 5], [d.value] * 4 + [ctypes.addressof(ctypes.c_float(0.125))]); out("pack", r)
            out("execute", dnn.cudnnBackendExecute(h, plan, p))
            out("sync", rt.cudaStreamSynchronize(s))
        """)
        self.assertEqual(results.pop("engine_count"), "[1]")
        self.assertEqual(results.pop("results"), "1")
        self.assertEqual((results.pop("global_index"), results.pop("numerical_notes"), results.pop("behavior_notes")),
                         ("[0]", "0", "0"))
        self.assertEqual((results.pop("knob_infos"), results.pop("knob_info")), ("1", "[24, 0, 7, 1]"))
        self.assertEqual((results.pop("knob_choices"), results.pop("knob_choice")), ("1", "[24, 3]"))
        self.assertEqual(results.pop("plan_workspace"), "0")
        self.assertEqual(results.pop("json_has_kernel"), "True")
        self.assertEqual(results.pop("ops"), "[0]")
        self.assertEqual(set(results.values()), {"0"}, results)
        stream = truth.of_type(lines, "memset")[0]["stream"]
        [kernel] = truth.of_type(lines, "kernel")
        flops = 2 * (2 * 2 * 4 * 256 * 256 * 64)  # the two matmuls
        self.assert_kernel(kernel, sdpa_kernel("fprop"), sdpa_grid(flops, 2, 4), stream)
        [math] = [m for m in truth.of_type(lines, "math") if m.get("api") == "cudnnBackendExecute"]
        self.assertEqual((math["graph"], math["flops"], math["workspace"], math["result"], math["kernel"]),
                         ("sdpa_fprop", flops, 0, 0, kernel["name"]))
        self.assertEqual(math["ops"], "matmul,pointwise,reduction,pointwise,pointwise,reduction,pointwise,matmul")

    def test_the_backward_attention_operation_needs_its_fp32_dq_workspace(self):
        results, lines = run_script("""
            B, H, SQ, SKV, D = 2, 8, 512, 1024, 128
            s = stream(); d = dev(1 << 20); mark(s, d)
            h = ptr(); dnn.cudnnCreate(ctypes.byref(h)); dnn.cudnnSetStream(h, s)
            names = {"q": (1, SQ), "k": (2, SKV), "v": (3, SKV), "o": (4, SQ), "dq": (6, SQ), "dk": (7, SKV), "dv": (8, SKV), "do": (9, SQ)}
            t = {k: tensor(uid, [B, H, n, D], dtype=BF16) for k, (uid, n) in names.items()}
            stats = tensor(5, [B, H, SQ, 1], dtype=F32)
            op = create(SDPA_BWD)
            for attr, key in ((2851, "q"), (2852, "k"), (2853, "v"), (2854, "o"), (2859, "dq"), (2860, "dk"), (2861, "dv"), (2862, "do")):
                setd(op, attr, t[key])
            out("missing_stats", fin(op))
            setd(op, 2855, stats); out("op", fin(op))
            g, r = graph(None, op); out("graph", r)
            plan, cfg = plan_for(g)
            out("cfg_workspace", bget(cfg, 303, T_INT64, ctypes.c_int64, 1)[2][0])
            out("plan_workspace", workspace_of(plan))
            uids = list(range(1, 10))
            p, r = pack(uids, [d.value] * 9); out("pack", r)
            out("execute_without_workspace", dnn.cudnnBackendExecute(h, plan, p))
            ws = dev(workspace_of(plan))
            p, r = pack(uids, [d.value] * 9, ws.value); out("pack_ws", r)
            out("execute", dnn.cudnnBackendExecute(h, plan, p))
            out("sync", rt.cudaStreamSynchronize(s))
        """)
        self.assertEqual(results.pop("missing_stats"), str(BAD_PARAM))  # STATSDESC is required
        self.assertEqual(results.pop("execute_without_workspace"), str(BAD_PARAM))
        workspace = 4 * 2 * 8 * 512 * 128  # FP32 dQ accumulator: B·H·Sq·D floats
        self.assertEqual((results.pop("cfg_workspace"), results.pop("plan_workspace")), (str(workspace), str(workspace)))
        self.assertEqual(results.pop("results"), "1")
        self.assertEqual(set(results.values()), {"0"}, results)
        stream = truth.of_type(lines, "memset")[0]["stream"]
        [kernel] = truth.of_type(lines, "kernel")
        flops = 10 * 2 * 8 * 512 * 1024 * 128  # S, dV, dP, dQ, dK
        self.assert_kernel(kernel, sdpa_kernel("bprop"), sdpa_grid(flops, 2, 8), stream)
        [math] = [m for m in truth.of_type(lines, "math") if m.get("api") == "cudnnBackendExecute" and "graph" in m]
        self.assertEqual((math["graph"], math["flops"], math["workspace"]), ("sdpa_bprop", flops, workspace))

    def test_other_graphs_get_a_kernel_named_after_their_operations(self):
        results, lines = run_script("""
            s = stream(); d = dev(1 << 20); mark(s, d)
            h = ptr(); dnn.cudnnCreate(ctypes.byref(h)); dnn.cudnnSetStream(h, s)
            a, b = tensor(1, [1, 2048, 1024]), tensor(2, [1, 1024, 4096])
            c, y = tensor(3, [1, 2048, 4096], virtual=True), tensor(4, [1, 2048, 4096])
            (mm, r1), (relu, r2) = matmul(a, b, c), pointwise(PW_RELU, c, y)
            g, r = graph(h, mm, relu); out("graph", r)
            plan, _ = plan_for(g)
            p, r = pack([1, 2, 4], [d.value] * 3); out("pack", r)
            out("execute", dnn.cudnnBackendExecute(h, plan, p))
            # a convolution's data gradient: dX [4,16,32,32] from dY [4,32,32,32] and W [32,16,3,3]
            conv = create(1)  # CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
            bset(conv, 100, T_DATA_TYPE, ctypes.c_int, [F32]); bset(conv, 101, 7, ctypes.c_int, [1])  # CROSS_CORRELATION
            bset(conv, 106, T_INT64, ctypes.c_int64, [2])
            for attr, v in ((102, 1), (103, 1), (104, 1), (105, 1)): bset(conv, attr, T_INT64, ctypes.c_int64, [v, v])
            out("conv", fin(conv))
            dx, w, dy = tensor(11, [4, 16, 32, 32]), tensor(12, [32, 16, 3, 3]), tensor(13, [4, 32, 32, 32])
            op = create(12)  # CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
            setd(op, 708, conv); setd(op, 709, w); setd(op, 710, dx); setd(op, 711, dy)
            out("dgrad", fin(op))
            g, r = graph(h, op); out("conv_graph", r)
            plan, _ = plan_for(g)
            p, r = pack([11, 12, 13], [d.value] * 3); out("pack", r)
            out("execute_dgrad", dnn.cudnnBackendExecute(h, plan, p))
            out("sync", rt.cudaStreamSynchronize(s))
        """)
        self.assertEqual(results.pop("results"), "1")
        self.assertEqual(set(results.values()), {"0"}, results)
        stream = truth.of_type(lines, "memset")[0]["stream"]
        kernel, dgrad = truth.of_type(lines, "kernel")
        flops = 2 * 2048 * 4096 * 1024
        self.assert_kernel(kernel, "cudnn_generated_fort_native_matmul_pointwise_sm90_knob_3_kernel0_0",
                           [ceil_div(flops, FLOPS_PER_BLOCK), 1, 1], stream)
        flops = 2 * (4 * 32 * 32 * 32) * (16 * 3 * 3)  # the forward's multiply-adds: 2 · |dY| · C·R·S
        self.assert_kernel(dgrad, "cudnn_generated_fort_native_conv_dgrad_sm90_knob_3_kernel0_0",
                           [ceil_div(flops, FLOPS_PER_BLOCK), 1, 1], stream)

    def test_attributes_are_checked_as_cudnn_graph_h_documents_them(self):
        results, lines = run_script("""
            d = ptr()
            out("create_unknown_type", dnn.cudnnBackendCreateDescriptor(99, ctypes.byref(d)))
            out("create_null", dnn.cudnnBackendCreateDescriptor(TENSOR, None))
            t = create(TENSOR)
            out("foreign_attribute", bset(t, 1500, T_DATA_TYPE, ctypes.c_int, [F32]))  # a matmul's COMP_TYPE
            out("wrong_type", bset(t, 902, T_INT32, ctypes.c_int, [2, 2]))
            out("too_many_dims", bset(t, 902, T_INT64, ctypes.c_int64, [1] * 9))
            out("two_unique_ids", bset(t, 906, T_INT64, ctypes.c_int64, [1, 2]))
            out("null_array", dnn.cudnnBackendSetAttribute(t, 902, T_INT64, ctypes.c_int64(2), None))
            out("get_unfinalized", bget(t, 902, T_INT64, ctypes.c_int64, 4)[0])
            bset(t, 901, T_DATA_TYPE, ctypes.c_int, [BF16]); bset(t, 902, T_INT64, ctypes.c_int64, [2, 3, 4, 5])
            bset(t, 903, T_INT64, ctypes.c_int64, [60, 20, 5, 1]); bset(t, 900, T_INT64, ctypes.c_int64, [16])
            out("finalize_without_unique_id", fin(t))
            bset(t, 906, T_INT64, ctypes.c_int64, [7]); out("finalize", fin(t))
            out("set_finalized", bset(t, 906, T_INT64, ctypes.c_int64, [8]))
            out("finalize_twice", fin(t))
            out("get_wrong_type", bget(t, 902, T_INT32, ctypes.c_int, 4)[0])
            r, n, dims = bget(t, 902, T_INT64, ctypes.c_int64, 0); out("count_query", (r, n))
            r, n, dims = bget(t, 902, T_INT64, ctypes.c_int64, 2); out("partial_get", (r, n, dims))
            loose = tensor(9, [2, 3], finalize=False)
            mm = create(OP_MATMUL)
            out("unfinalized_element", setd(mm, 1520, loose))
            a, b, c = tensor(1, [1, 32, 64]), tensor(2, [1, 48, 16]), tensor(3, [1, 32, 16])
            out("matmul_k_mismatch", matmul(a, b, c)[1])
            g = create(GRAPH)
            out("set_read_only", bset(g, 802, T_INT64, ctypes.c_int64, [3]))  # ENGINE_GLOBAL_COUNT
            b = tensor(2, [1, 64, 16]); op, r = matmul(a, b, c); g, r = graph(None, op); out("graph", r)
            e = create(ENGINE); setd(e, 1300, g); bset(e, 1301, T_INT64, ctypes.c_int64, [5])
            out("engine_index_out_of_range", fin(e))
            e = create(ENGINE); setd(e, 1300, g); bset(e, 1301, T_INT64, ctypes.c_int64, [0]); out("engine", fin(e))
            k = create(KNOB_CHOICE); bset(k, 600, T_KNOB_TYPE, ctypes.c_int, [24]); bset(k, 601, T_INT64, ctypes.c_int64, [99])
            out("knob", fin(k))
            cfg = create(ENGINECFG); setd(cfg, 300, e); setd(cfg, 302, k); out("knob_out_of_range", fin(cfg))
            p, r = pack([1, 2], [0x1000, 0x2000], with_workspace=False); out("pack_without_workspace", r)
            p, r = pack([1, 2, 3], [0x1000, 0x2000]); out("pack_count_mismatch", r)
            gone = create(TENSOR); dnn.cudnnBackendDestroyDescriptor(gone)
            out("destroy_twice", dnn.cudnnBackendDestroyDescriptor(gone))
            out("set_on_destroyed", bset(gone, 906, T_INT64, ctypes.c_int64, [1]))
        """)
        expected = {
            "create_unknown_type": NOT_SUPPORTED, "create_null": BAD_PARAM_NULL_POINTER,
            "foreign_attribute": BAD_PARAM, "wrong_type": BAD_PARAM, "too_many_dims": BAD_PARAM,
            "two_unique_ids": BAD_PARAM, "null_array": BAD_PARAM, "get_unfinalized": NOT_INITIALIZED,
            "finalize_without_unique_id": BAD_PARAM, "finalize": SUCCESS, "set_finalized": NOT_INITIALIZED,
            "finalize_twice": BAD_PARAM, "get_wrong_type": BAD_PARAM, "unfinalized_element": BAD_PARAM,
            "matmul_k_mismatch": BAD_PARAM, "set_read_only": BAD_PARAM, "graph": SUCCESS,
            "engine_index_out_of_range": NOT_SUPPORTED, "engine": SUCCESS, "knob": SUCCESS,
            "knob_out_of_range": BAD_PARAM, "pack_without_workspace": BAD_PARAM, "pack_count_mismatch": BAD_PARAM,
            "destroy_twice": BAD_PARAM, "set_on_destroyed": BAD_PARAM}
        self.assertEqual(results.pop("count_query"), "(0, 4)")
        self.assertEqual(results.pop("partial_get"), "(0, 4, [2, 3])")
        self.assertEqual(results, {k: str(v) for k, v in expected.items()})
        # every refusal says why in the truth log
        refusals = [m for m in truth.of_type(lines, "math") if m.get("lib") == "cudnn" and "status" in m]
        self.assertEqual(len(refusals), sum(1 for v in expected.values() if v != SUCCESS))
        self.assertTrue(all(m["why"] for m in refusals))

    def test_execute_refuses_a_pack_without_every_tensor_and_launches_nothing(self):
        results, lines = run_script(SDPA_FORWARD, """
            s = stream()
            h = ptr(); dnn.cudnnCreate(ctypes.byref(h)); dnn.cudnnSetStream(h, s)
            g, r = graph(h, *(op for op, _ in ops)); out("graph", r)
            plan, _ = plan_for(g)
            d = dev(1 << 16)
            p, r = pack([1, 2, 3, 4], [d.value] * 4); out("pack", r)  # no pointer for the scale (uid 5)
            out("missing_tensor", dnn.cudnnBackendExecute(h, plan, p))
            p, r = pack([1, 2, 3, 4, 5], [d.value] * 4 + [None]); out("pack_null", r)
            out("null_pointer", dnn.cudnnBackendExecute(h, plan, p))
            p, r = pack([1, 2, 3, 4, 5], [d.value] * 5); out("pack_full", r)
            out("unfinalized_plan", dnn.cudnnBackendExecute(h, create(PLAN), p))
            out("plan_as_pack", dnn.cudnnBackendExecute(h, plan, plan))
            out("null_handle", dnn.cudnnBackendExecute(None, plan, p))
            dnn.cudnnDestroy(h)
            out("destroyed_handle", dnn.cudnnBackendExecute(h, plan, p))
        """)
        for key in ("missing_tensor", "null_pointer", "unfinalized_plan", "plan_as_pack", "null_handle",
                    "destroyed_handle"):
            self.assertEqual(results.pop(key), str(BAD_PARAM), key)
        self.assertEqual(results.pop("ops"), "[0]")
        self.assertEqual(set(results.values()) - {"1"}, {"0"}, results)
        self.assertEqual(truth.of_type(lines, "kernel"), [])


if __name__ == "__main__":
    unittest.main()
