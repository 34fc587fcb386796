"""The simulated cuBLAS, cuBLASLt and cuDNN (test/sim/README.md, "Math
libraries") called with ctypes: a GEMM and a Lt matmul each launch one
kernel on the stream they were given, named and timed by the documented
cost model; bad arguments get the statuses NVIDIA documents; and every
entry point NVIDIA's own libraries export and the toolkit's headers
declare (a superset of what PyTorch imports) is exported, under NVIDIA's
version node."""
import os
import re
import subprocess
import sys
import textwrap
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

# cuBLAS / cuDNN enum values (cublas_api.h, library_types.h, cudnn_graph.h).
OP_N, OP_T = 0, 1
R_32F, R_16F, R_16BF, R_64F = 0, 2, 14, 1
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
GEMM_DEFAULT = -1
TF32_TENSOR_OP_MATH = 3
SUCCESS, NOT_INITIALIZED, INVALID_VALUE, NOT_SUPPORTED = 0, 1, 7, 15
CUDNN_NOT_INITIALIZED, CUDNN_BAD_PARAM, CUDNN_NOT_SUPPORTED = 1001, 2000, 3000
# cublasLt attributes
DESC_TRANSA, DESC_TRANSB, DESC_EPILOGUE = 3, 4, 7
LAYOUT_BATCH_COUNT, LAYOUT_STRIDED_BATCH_OFFSET = 5, 6
PREF_MAX_WORKSPACE_BYTES = 1
EPILOGUE_BIAS = 4

TILE, SLICE_K = 128, 256  # mathlibs/gemm_model.h


def ceil_div(a, b):
    return -(-a // b)


def gemm_grid(m, n, k, batch=1):
    return [ceil_div(m, TILE), ceil_div(n, TILE), batch * max(1, ceil_div(k, SLICE_K))]


def xmma(ab, mma, c, ops, kt):
    return (f"sm90_xmma_gemm_{ab}{ab}_{mma}f32_{c}_{ops}_n_tilesize128x128x{kt}"
            "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas")


# Each mathlib test file has its prelude, loading its own libraries (here cuBLAS and cuBLASLt).
# Runs in a child process (a fresh stack and truth log per scenario); prints
# one "key value" line per check.
PRELUDE = textwrap.dedent("""
    import ctypes, os
    lib = os.environ["SIM_LIB_DIR"]
    rt = ctypes.CDLL(os.path.join(lib, "libcudart.so.13"))
    blas = ctypes.CDLL(os.path.join(lib, "libcublas.so.13"))
    lt = ctypes.CDLL(os.path.join(lib, "libcublasLt.so.13"))
    dnn = ctypes.CDLL(os.path.join(lib, "libcudnn.so.9"))
    for f in (lt.cublasLtGetVersion, dnn.cudnnGetVersion):
        f.restype = ctypes.c_size_t
    lt.cublasLtMatrixLayoutCreate.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64]
    dnn.cudnnGetErrorString.restype = ctypes.c_char_p
    def ptr():
        return ctypes.c_void_p()
    def out(key, value):
        print(key, value)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    def stream():
        s = ptr(); rt.cudaStreamCreate(ctypes.byref(s)); return s
    def dev(nbytes):
        d = ptr(); rt.cudaMalloc(ctypes.byref(d), ctypes.c_size_t(nbytes)); return d
    def mark(s, d):  # a memset on s: its truth line names the stream's id
        rt.cudaMemsetAsync(d, 0, ctypes.c_size_t(256), s)
    def gemm_ex(h, ta, tb, m, n, k, at, lda, bt, ldb, ct, ldc, compute, algo=-1, alpha=one, beta=zero, d=None):
        d = d or ptr()
        return blas.cublasGemmEx(h, ta, tb, m, n, k, None if alpha is None else ctypes.byref(alpha), d, at, lda, d, bt, ldb,
                                 None if beta is None else ctypes.byref(beta), d, ct, ldc, compute, algo)
    def set_attr(fn, obj, attr, ctype, value):
        v = ctype(value)
        return fn(obj, attr, ctypes.byref(v), ctypes.c_size_t(ctypes.sizeof(v)))
""")


def run_script(body, **env):
    return harness.run_sim_script(PRELUDE + textwrap.dedent(body), truth.read, **env)


class MathLibsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(*(os.path.join(harness.SIM_LIB_DIR, l)
                       for l in ("libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9")))

    def assert_kernel(self, kernel, name, grid, stream):
        self.assertEqual(kernel["name"], name)
        self.assertEqual(kernel["grid"], grid)
        self.assertEqual(kernel["stream"], stream)
        self.assertEqual(kernel["end_ns"] - kernel["start_ns"], truth.kernel_ns(kernel))
        self.assertEqual(kernel["api"], "cudaLaunchKernel")  # the runtime linked into NVIDIA's libraries

    def test_gemms_launch_one_kernel_on_the_handles_stream_named_and_timed_by_the_model(self):
        results, lines = run_script("""
            s = stream(); d = dev(1 << 20); mark(s, d)
            h = ptr(); out("create", blas.cublasCreate_v2(ctypes.byref(h)))
            out("set_stream", blas.cublasSetStream_v2(h, s))
            got = ptr(); blas.cublasGetStream_v2(h, ctypes.byref(got)); out("get_stream", got.value == s.value)
            out("gemm_ex", gemm_ex(h, 0, 1, 300, 200, 600, 14, 300, 14, 200, 14, 300, 68, d=d))
            out("sgemm", blas.cublasSgemm_v2(h, 0, 0, 128, 129, 64, ctypes.byref(one), d, 128, d, 64, ctypes.byref(zero), d, 128))
            out("math", blas.cublasSetMathMode(h, 3))
            out("sgemm_tf32", blas.cublasSgemm_v2(h, 1, 0, 64, 64, 512, ctypes.byref(one), d, 512, d, 512, ctypes.byref(zero), d, 64))
            out("strided", blas.cublasGemmStridedBatchedEx(h, 1, 0, 64, 256, 257, ctypes.byref(one), d, 2, 257, ctypes.c_longlong(0),
                d, 2, 257, ctypes.c_longlong(0), ctypes.byref(zero), d, 2, 64, ctypes.c_longlong(0), 12, 68, -1))
            out("empty", gemm_ex(h, 0, 0, 0, 16, 16, 0, 1, 0, 16, 0, 1, 68, d=d))
            out("sync", rt.cudaStreamSynchronize(s))
            out("destroy", blas.cublasDestroy_v2(h))
        """)
        self.assertEqual(set(results.values()) - {"True"}, {"0"}, results)
        stream = truth.of_type(lines, "memset")[0]["stream"]
        kernels = truth.of_type(lines, "kernel")
        self.assertEqual(len(kernels), 4)  # the empty GEMM launches nothing
        self.assert_kernel(kernels[0], xmma("bf16", "bf16", "bf16", "nt", 64), gemm_grid(300, 200, 600), stream)
        self.assert_kernel(kernels[1], "ampere_sgemm_128x128_nn", gemm_grid(128, 129, 64), stream)
        self.assert_kernel(kernels[2], xmma("f32", "tf32", "f32", "tn", 32), gemm_grid(64, 64, 512), stream)
        self.assert_kernel(kernels[3], xmma("f16", "f16", "f16", "tn", 64), gemm_grid(64, 256, 257, batch=12), stream)
        math = truth.of_type(lines, "math")
        self.assertEqual([(m["api"], m["m"], m["n"], m["k"], m["batch"]) for m in math],
                         [("cublasGemmEx", 300, 200, 600, 1), ("cublasSgemm_v2", 128, 129, 64, 1),
                          ("cublasSgemm_v2", 64, 64, 512, 1), ("cublasGemmStridedBatchedEx", 64, 256, 257, 12)])
        self.assertEqual([m["kernel"] for m in math], [k["name"] for k in kernels])

    def test_lt_matmul_launches_on_its_stream_argument_with_the_layouts_problem(self):
        results, lines = run_script("""
            s = stream(); d = dev(1 << 20); mark(s, d)
            h = ptr(); out("create", lt.cublasLtCreate(ctypes.byref(h)))
            desc = ptr(); out("desc", lt.cublasLtMatmulDescCreate(ctypes.byref(desc), 68, 0))
            out("transa", set_attr(lt.cublasLtMatmulDescSetAttribute, desc, 3, ctypes.c_int32, 1))
            out("epilogue", set_attr(lt.cublasLtMatmulDescSetAttribute, desc, 7, ctypes.c_uint32, 4))
            # D = op(A) op(B): m=96, n=320, k=1000, A stored k x m (transposed), batch 3, bfloat16
            layouts = []
            for rows, cols in ((1000, 96), (1000, 320), (96, 320), (96, 320)):
                l = ptr(); out("layout", lt.cublasLtMatrixLayoutCreate(ctypes.byref(l), 14, rows, cols, rows))
                out("batch", set_attr(lt.cublasLtMatrixLayoutSetAttribute, l, 5, ctypes.c_int32, 3))
                layouts.append(l)
            pref = ptr(); out("pref", lt.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)))
            out("ws", set_attr(lt.cublasLtMatmulPreferenceSetAttribute, pref, 1, ctypes.c_uint64, 1 << 20))
            res = (ctypes.c_char * 96)(); n = ctypes.c_int(-1)
            out("heuristic", lt.cublasLtMatmulAlgoGetHeuristic(h, desc, *layouts, pref, 1, res, ctypes.byref(n)))
            out("returned", n.value)
            a, b, c, dd = layouts
            out("matmul", lt.cublasLtMatmul(h, desc, ctypes.byref(one), d, a, d, b, ctypes.byref(zero), d, c, d, dd,
                                            res, d, ctypes.c_size_t(1 << 20), s))
            out("sync", rt.cudaStreamSynchronize(s))
            for l in layouts: lt.cublasLtMatrixLayoutDestroy(l)
            lt.cublasLtMatmulPreferenceDestroy(pref); lt.cublasLtMatmulDescDestroy(desc)
            out("destroy", lt.cublasLtDestroy(h))
        """)
        self.assertEqual(results.pop("returned"), "1")
        self.assertEqual(set(results.values()), {"0"}, results)
        stream = truth.of_type(lines, "memset")[0]["stream"]
        [kernel] = truth.of_type(lines, "kernel")
        self.assert_kernel(kernel, xmma("bf16", "bf16", "bf16", "tn", 64), gemm_grid(96, 320, 1000, batch=3), stream)
        [math] = truth.of_type(lines, "math")
        self.assertEqual((math["lib"], math["api"], math["m"], math["n"], math["k"], math["batch"], math["epilogue"]),
                         ("cublasLt", "cublasLtMatmul", 96, 320, 1000, 3, EPILOGUE_BIAS))

    def test_bad_arguments_get_the_documented_statuses(self):
        results, lines = run_script("""
            d = dev(1 << 16)
            out("create_null", blas.cublasCreate_v2(None))
            out("stream_null_handle", blas.cublasSetStream_v2(None, None))
            h = ptr(); blas.cublasCreate_v2(ctypes.byref(h))
            out("negative_m", gemm_ex(h, 0, 0, -1, 8, 8, 0, 8, 0, 8, 0, 8, 68))
            out("bad_op", gemm_ex(h, 5, 0, 8, 8, 8, 0, 8, 0, 8, 0, 8, 68))
            out("small_lda", gemm_ex(h, 0, 0, 8, 8, 8, 0, 7, 0, 8, 0, 8, 68))
            out("small_lda_transposed", gemm_ex(h, 1, 0, 8, 8, 16, 0, 8, 0, 16, 0, 8, 68))
            out("small_ldc", gemm_ex(h, 0, 0, 8, 8, 8, 0, 8, 0, 8, 0, 4, 68))
            out("null_alpha", gemm_ex(h, 0, 0, 8, 8, 8, 0, 8, 0, 8, 0, 8, 68, alpha=None))
            out("bad_types", gemm_ex(h, 0, 0, 8, 8, 8, 0, 8, 0, 8, 2, 8, 68))
            out("bad_algo", gemm_ex(h, 0, 0, 8, 8, 8, 0, 8, 0, 8, 0, 8, 68, algo=5000))
            out("unaligned_workspace", blas.cublasSetWorkspace_v2(h, ctypes.c_void_p(d.value + 8), ctypes.c_size_t(1024)))
            out("bad_math_mode", blas.cublasSetMathMode(h, 9))
            out("unsupported_entry", blas.cublasSgeam(h, 0, 0, 8, 8, None, d, 8, None, d, 8, d, 8))
            out("destroy", blas.cublasDestroy_v2(h))
            out("destroy_null", blas.cublasDestroy_v2(None))
            out("lt_destroy_null", lt.cublasLtDestroy(None))
            desc = ptr(); lt.cublasLtMatmulDescCreate(ctypes.byref(desc), 68, 0)
            out("attr_wrong_size", set_attr(lt.cublasLtMatmulDescSetAttribute, desc, 3, ctypes.c_int64, 1))
            out("attr_unknown", set_attr(lt.cublasLtMatmulDescSetAttribute, desc, 999, ctypes.c_int32, 1))
            need = ctypes.c_size_t(0)
            out("attr_size_query", lt.cublasLtMatmulDescGetAttribute(desc, 7, None, ctypes.c_size_t(0), ctypes.byref(need)))
            out("attr_size", need.value)
            out("attr_no_size_out", lt.cublasLtMatmulDescGetAttribute(desc, 7, None, ctypes.c_size_t(0), None))
            lh = ptr(); lt.cublasLtCreate(ctypes.byref(lh))
            ls = []
            for rows, cols in ((8, 16), (8, 8), (8, 8), (8, 8)):  # op(A) is 8 x 16 but B has 8 rows: k mismatch
                l = ptr(); lt.cublasLtMatrixLayoutCreate(ctypes.byref(l), 0, rows, cols, rows); ls.append(l)
            a, b, c, dd = ls
            out("lt_shape_mismatch", lt.cublasLtMatmul(lh, desc, ctypes.byref(one), d, a, d, b, ctypes.byref(zero), d, c,
                                                       d, dd, None, None, ctypes.c_size_t(0), None))
            out("lt_workspace_null", lt.cublasLtMatmul(lh, desc, ctypes.byref(one), d, b, d, b, ctypes.byref(zero), d, c,
                                                       d, dd, None, None, ctypes.c_size_t(64), None))
            out("cudnn_create_null", dnn.cudnnCreate(None))
            out("cudnn_stream_null_handle", dnn.cudnnSetStream(None, None))
            out("cudnn_unsupported_entry", dnn.cudnnConvolutionForward(*([None] * 13)))
            out("cudnn_error_string", dnn.cudnnGetErrorString(3000).decode())
        """)
        self.assertEqual(results, {
            "create_null": "7", "stream_null_handle": "1", "negative_m": "7", "bad_op": "7", "small_lda": "7",
            "small_lda_transposed": "7", "small_ldc": "7", "null_alpha": "7", "bad_types": "15", "bad_algo": "15",
            "unaligned_workspace": "7", "bad_math_mode": "7", "unsupported_entry": "15", "destroy": "0",
            "destroy_null": "1", "lt_destroy_null": "1", "attr_wrong_size": "7", "attr_unknown": "7",
            "attr_size_query": "0", "attr_size": "4", "attr_no_size_out": "7", "lt_shape_mismatch": "7",
            "lt_workspace_null": "7", "cudnn_create_null": "2000", "cudnn_stream_null_handle": "2000",
            "cudnn_unsupported_entry": "3000", "cudnn_error_string": "CUDNN_STATUS_NOT_SUPPORTED"})
        self.assertEqual(truth.of_type(lines, "kernel"), [])  # no failed call launched anything

    def test_cudnn_handle_keeps_its_stream_and_reports_a_cudnn_9(self):
        results, _ = run_script("""
            s = stream()
            h = ptr(); out("create", dnn.cudnnCreate(ctypes.byref(h)))
            out("set_stream", dnn.cudnnSetStream(h, s))
            got = ptr(); out("get_stream", dnn.cudnnGetStream(h, ctypes.byref(got))); out("same", got.value == s.value)
            out("version", dnn.cudnnGetVersion())
            major = ctypes.c_int(); dnn.cudnnGetProperty(0, ctypes.byref(major)); out("major", major.value)
            out("destroy", dnn.cudnnDestroy(h))
            out("lt_version", lt.cublasLtGetVersion())
            v = ctypes.c_int(); hb = ptr(); blas.cublasCreate_v2(ctypes.byref(hb))
            blas.cublasGetVersion_v2(hb, ctypes.byref(v)); out("blas_version", v.value)
        """, SIM_CUDNN_VERSION="92600")
        self.assertEqual((results["create"], results["set_stream"], results["get_stream"], results["same"],
                          results["destroy"]), ("0", "0", "0", "True", "0"))
        self.assertEqual((results["version"], results["major"]), ("92600", "9"))
        self.assertEqual(results["lt_version"], results["blas_version"])
        self.assertEqual(results["lt_version"][:2], "13")

    def test_without_a_driver_the_libraries_do_not_start(self):
        results, _ = run_script("""
            h = ptr()
            out("cublas", blas.cublasCreate_v2(ctypes.byref(h)))
            out("cublaslt", lt.cublasLtCreate(ctypes.byref(h)))
            out("cudnn", dnn.cudnnCreate(ctypes.byref(h)))
        """, SIM_NO_DRIVER="1")
        self.assertEqual(results, {"cublas": str(NOT_INITIALIZED), "cublaslt": str(NOT_INITIALIZED),
                                   "cudnn": str(CUDNN_NOT_INITIALIZED)})


# (sim library, NVIDIA's library of that soname, headers whose declarations it exports)
EXPORT_CASES = (("libcublas.so.13", ("cublas_v2.h", "cublasXt.h"), r"cublas(?!Lt)\w+"),
                ("libcublasLt.so.13", ("cublasLt.h",), r"cublasLt\w+"),
                ("libcudnn.so.9", ("cudnn.h",), r"cudnn\w+"))


def dynamic_symbols(path):
    """{name: version} of the defined dynamic symbols of a library."""
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", path],
                         capture_output=True, text=True, check=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            name, _, version = parts[2].partition("@")
            symbols[name] = version.lstrip("@")
    return symbols


def declared(include_dirs, header):
    """Names the preprocessed header declares as functions (`name(`)."""
    flags = [f for d in include_dirs for f in ("-I", d)]
    text = subprocess.run(["cc", "-E", "-x", "c"] + flags + ["-"], input=f'#include "{header}"\n',
                          capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"\b(\w+)\s*\(", text))


def find_nvidia(soname):
    """NVIDIA's library of that soname: in the toolkit, else where ldconfig knows it."""
    candidate = os.path.join(harness.CUDA_HOME, "lib64", soname)
    if os.path.exists(candidate):
        return candidate
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(soname + " "):
            return line.rsplit("=>", 1)[1].strip()
    return None


class MathLibsExportsTest(unittest.TestCase):
    def test_every_documented_export_of_nvidias_libraries_is_exported_with_its_version_node(self):
        include = os.path.join(harness.CUDA_HOME, "include")
        for soname, headers, pattern in EXPORT_CASES:
            with self.subTest(soname):
                ours = os.path.join(harness.SIM_LIB_DIR, soname)
                harness.need(ours)
                nvidia = find_nvidia(soname)
                if not nvidia:
                    self.skipTest(f"NVIDIA's {soname} is not installed")
                include_dirs = [include, os.path.dirname(os.path.dirname(nvidia)) + "/include"]
                documented = set()
                for h in headers:
                    documented |= declared(include_dirs, h)
                theirs = {n for n, v in dynamic_symbols(nvidia).items() if re.fullmatch(pattern, n) and v == soname}
                expected = theirs & documented
                self.assertGreater(len(expected), 40)  # the comparison saw the real API
                mine = dynamic_symbols(ours)
                missing = sorted(n for n in expected if mine.get(n) != soname)
                self.assertEqual(missing, [], f"{soname}: not exported as name@@{soname}")
                # Nothing else leaks out (the version script's local: *).
                self.assertEqual(sorted(n for n in mine if not re.fullmatch(pattern, n) and n != soname), [])

    def test_libraries_carry_nvidias_soname_and_no_dependency_on_cuda_libraries(self):
        for soname, _, _ in EXPORT_CASES:
            with self.subTest(soname):
                path = os.path.join(harness.SIM_LIB_DIR, soname)
                harness.need(path)
                dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
                self.assertIn(f"Library soname: [{soname}]", dyn)
                needed = re.findall(r"Shared library: \[([^\]]+)\]", dyn)
                self.assertEqual([n for n in needed if n.startswith(("libcuda", "libcudart", "libcublas"))], [])


if __name__ == "__main__":
    harness.main()
