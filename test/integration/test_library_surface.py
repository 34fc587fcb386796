"""libprof.so's ELF surface: what it needs at load time and what it exports."""
import re
import subprocess
import unittest

import harness

FORBIDDEN_NEEDED = re.compile(r"lib(cudart|cuda|cupti|spdlog|fmt|stdc\+\+|gcc_s)\b")
ALLOWED_EXPORT = re.compile(r"^(cuda|__cuda|cu[A-Z]|nvtx|prof_|InitializeInjection)")


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
        foreign = [n for n in names if not ALLOWED_EXPORT.match(n)]
        self.assertEqual(foreign, [], f"symbols beyond the CUDA/NVTX/agent entry points: {foreign[:10]}")

    def test_exported_symbols_carry_no_version_node(self):
        # A named version node would stop cudaMalloc@libcudart.so.13 references binding to us.
        out = tool("readelf", "-V", harness.LIBPROF_SO)
        self.assertNotIn("Version definition section", out)


if __name__ == "__main__":
    harness.main()
