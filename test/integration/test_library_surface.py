"""libprof.so's ELF surface: what it needs at load time and what it exports;
and libprof-inject.so's, which must load wherever NVIDIA's driver runs."""
import os
import platform
import re
import subprocess
import unittest

import harness

FORBIDDEN_NEEDED = re.compile(r"lib(cudart|cuda|cupti|nccl|spdlog|fmt|stdc\+\+|gcc_s)\b")
ALLOWED_EXPORT = re.compile(r"^(cuda|__cuda|cu[A-Z]|nvtx|prof_|InitializeInjection|nccl[A-Z]|_exit$)")
# The program's own calls of CUPTI's process-wide activity API (torch.profiler's
# Kineto), seen under LD_PRELOAD and forwarded (collectors/cupti/cupti_interpose.cpp).
CUPTI_EXPORTS = {
    "cuptiActivityRegisterCallbacks", "cuptiActivityRegisterTimestampCallback", "cuptiActivityEnable",
    "cuptiActivityDisable", "cuptiActivitySetAttribute", "cuptiSetThreadIdType", "cuptiActivityFlushAll",
    "cuptiFinalize"}
# NCCL's public API libprof interposes (collectors/nccl/wrappers.cpp) and its profiler-plugin tables.
NCCL_EXPORTS = {
    "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclCommInitAll", "ncclCommSplit",
    "ncclCommDestroy", "ncclCommAbort", "ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce",
    "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend", "ncclRecv",
    "ncclGroupStart", "ncclGroupEnd", "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6"}
# A dynamic relocation to an offset from the thread pointer: an initial-exec
# (static TLS) access (x86-64 R_X86_64_TPOFF64/32, AArch64 R_AARCH64_TLS_TPREL).
# Not DTPOFF/DTPMOD/TLSDESC, the models a dlopen'ed library may use.
STATIC_TLS_RELOC = re.compile(r"\bR_(X86_64_TPOFF(32|64)|AARCH64_TLS_TPREL\w*)\b")


def tool(*args):
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


class LibrarySurface(unittest.TestCase):
    def test_no_load_time_dependency_on_cuda_logging_or_cxx_runtime(self):
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", tool("readelf", "-d", harness.LIBPROF_SO))
        self.assertTrue(needed, "readelf found no NEEDED entries at all; wrong file?")
        bad = [n for n in needed if FORBIDDEN_NEEDED.search(n)]
        self.assertEqual(bad, [], f"libprof.so must not need {bad} at load time")

    def test_exports_only_cuda_nvtx_and_agent_entry_points(self):
        names = [line.split()[-1] for line in tool("nm", "-D", "--defined-only", harness.LIBPROF_SO).splitlines()
                 if line.strip()]
        self.assertIn("InitializeInjection", names)
        self.assertIn("prof_step", names)
        # _exit: a process leaving through it (os._exit) still writes its window (lifecycle.h).
        self.assertIn("_exit", names)
        foreign = [n for n in names if not ALLOWED_EXPORT.match(n) and n not in CUPTI_EXPORTS]
        self.assertEqual(foreign, [], f"symbols beyond the CUDA/NVTX/agent entry points: {foreign[:10]}")

    def test_nccl_exports_are_the_wrappers_and_the_plugin_tables_never_nccls_strong_names(self):
        names = {line.split()[-1] for line in tool("nm", "-D", "--defined-only", harness.LIBPROF_SO).splitlines()
                 if line.strip()}
        # pncclX is where a wrapper forwards: libprof must never define it.
        self.assertEqual({n for n in names if n.startswith("nccl") or n.startswith("pnccl")}, NCCL_EXPORTS)

    def test_cupti_exports_are_the_activity_api_calls_it_forwards(self):
        names = {line.split()[-1] for line in tool("nm", "-D", "--defined-only", harness.LIBPROF_SO).splitlines()
                 if line.strip()}
        self.assertEqual({n for n in names if n.startswith("cupti")}, CUPTI_EXPORTS)

    def test_exported_symbols_carry_no_version_node(self):
        # A named version node would stop cudaMalloc@libcudart.so.13 references binding to us.
        out = tool("readelf", "-V", harness.LIBPROF_SO)
        self.assertNotIn("Version definition section", out)

    def test_needs_no_static_tls_so_a_dlopen_into_a_loaded_process_succeeds(self):
        # CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH load libprof by
        # dlopen, when a process (PyTorch) may have used up glibc's static TLS
        # surplus; a library marked STATIC_TLS is then refused.
        flags = [l.strip() for l in tool("readelf", "-d", harness.LIBPROF_SO).splitlines() if "(FLAGS" in l]
        self.assertFalse(any("STATIC_TLS" in l for l in flags), flags)
        initial_exec = [l for l in tool("readelf", "-rW", harness.LIBPROF_SO).splitlines() if STATIC_TLS_RELOC.search(l)]
        self.assertEqual(initial_exec, [], "initial-exec thread-locals (or objects linked in with them)")
        load = "import ctypes, sys\nctypes.CDLL(sys.argv[1])\nprint('loaded')\n"
        proc = subprocess.run(["python3", "-c", load, harness.LIBPROF_SO], capture_output=True, text=True,
                              env=harness.clean_env(PROF_ENABLE="0", GLIBC_TUNABLES="glibc.rtld.optional_static_tls=0"))
        self.assertEqual(proc.stdout, "loaded\n", proc.stderr)


# libprof-inject.so (agent/process/inject_loader.c), built beside libprof.so.
INJECT_LOADER_SO = os.path.join(os.path.dirname(harness.LIBPROF_SO), "libprof-inject.so") if harness.LIBPROF_SO else ""
# The architecture's first glibc version: all a library bound to it needs.
OLDEST_GLIBC = {"x86_64": "GLIBC_2.2.5", "aarch64": "GLIBC_2.17"}


class InjectLoaderSurface(unittest.TestCase):
    def setUp(self):
        harness.need(INJECT_LOADER_SO)

    def test_no_tls_no_cxx_runtime_only_libc_and_libdl(self):
        self.assertNotIn(" TLS ", tool("readelf", "-lW", INJECT_LOADER_SO))
        dynamic = tool("readelf", "-d", INJECT_LOADER_SO)
        self.assertNotIn("STATIC_TLS", dynamic)
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
        self.assertLessEqual(needed, {"libc.so.6", "libdl.so.2"})

    def test_needs_only_the_oldest_glibc_symbol_versions(self):
        oldest = OLDEST_GLIBC.get(platform.machine())
        if oldest is None:
            self.skipTest(f"no oldest glibc version known for {platform.machine()}")
        versions = set(re.findall(r"Name: (\S+)", tool("readelf", "-V", INJECT_LOADER_SO)))
        self.assertEqual(versions, {oldest})

    def test_exports_only_the_injection_entry_points_and_prof_step(self):
        names = {line.split()[-1] for line in tool("nm", "-D", "--defined-only", INJECT_LOADER_SO).splitlines()
                 if line.strip()}
        self.assertEqual(names, {"InitializeInjection", "InitializeInjectionNvtx2", "prof_step"})


if __name__ == "__main__":
    harness.main()
