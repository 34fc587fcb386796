"""`cmake --install` of this build tree into a fresh prefix, used as a user
would: libprof.so without debug info (under 5 MB) whose separate debug file
gdb finds, prof, and libprof.h with which a program marks its own steps
whether or not libprof is loaded, under LD_PRELOAD and under
CUDA_INJECTION64_PATH, on the simulated stack."""
import glob
import json
import os
import re
import shutil
import subprocess
import unittest

import harness

BUILD_DIR = os.environ.get("LIBPROF_BUILD_DIR", "")

# A program that knows nothing of libprof but its header: the runtime opened
# by name, one synchronize per step, libprof_step() after each.
PROGRAM = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <libprof.h>

int main(void) {
  void* rt = dlopen("%s", RTLD_NOW);
  if (!rt) { fprintf(stderr, "%%s\n", dlerror()); return 2; }
  int (*sync)(void) = (int (*)(void))dlsym(rt, "cudaDeviceSynchronize");
  int (*mset)(void*, int, size_t) = (int (*)(void*, int, size_t))dlsym(rt, "cudaMemset");
  int (*alloc)(void**, size_t) = (int (*)(void**, size_t))dlsym(rt, "cudaMalloc");
  void* dev = 0;
  if (!sync || !mset || !alloc || alloc(&dev, 4096) != 0) return 3;
  for (int step = 0; step < 10; ++step) {
    mset(dev, step, 4096);
    sync();
    libprof_step();
  }
  printf("done\n");
  return 0;
}
"""


def sh(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=300, **kw)


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BUILD_DIR or not os.path.exists(os.path.join(BUILD_DIR, "CMakeCache.txt")):
            raise unittest.SkipTest("LIBPROF_BUILD_DIR is not a configured build tree")
        cls.tmp = __import__("tempfile").mkdtemp(prefix="libprof-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.result = sh("cmake", "--install", BUILD_DIR, "--prefix", cls.prefix)
        cls.lib = os.path.join(cls.prefix, "lib", "libprof.so")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_installs_the_library_the_tool_and_the_header(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        self.assertTrue(os.path.exists(self.lib))
        # The injection loader opens the libprof.so of its own folder.
        self.assertTrue(os.path.exists(os.path.join(self.prefix, "lib", "libprof-inject.so")))
        self.assertTrue(os.access(os.path.join(self.prefix, "bin", "prof"), os.X_OK))
        self.assertTrue(os.path.exists(os.path.join(self.prefix, "include", "libprof.h")))
        r = sh(os.path.join(self.prefix, "bin", "prof"), "--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^prof \(libprof\) \d+\.\d+\.\d+")

    def test_the_installed_library_is_small_and_its_debug_info_separate(self):
        self.assertLess(os.path.getsize(self.lib), 5 * 1000 * 1000)
        sections = sh("readelf", "-S", "-W", self.lib).stdout
        self.assertNotIn(".debug_info", sections)
        self.assertIn(".gnu_debuglink", sections)
        link = sh("readelf", "--string-dump=.gnu_debuglink", self.lib).stdout
        self.assertIn("libprof.so.debug", link)
        debug = os.path.join(self.prefix, "lib", ".debug", "libprof.so.debug")
        self.assertIn(".debug_info", sh("readelf", "-S", "-W", debug).stdout)
        # gdb follows the link: line information for an entry point.
        if shutil.which("gdb"):
            r = sh("gdb", "-nx", "-batch", "-ex", "info line prof_step", self.lib)
            self.assertRegex(r.stdout, r'Line \d+ of ".*entry\.cpp"', r.stdout + r.stderr)

    def test_a_program_built_with_the_header_runs_with_and_without_libprof(self):
        src = os.path.join(self.tmp, "steps.c")
        exe = os.path.join(self.tmp, "steps")
        with open(src, "w") as f:
            f.write(PROGRAM % harness.CUDART_SONAME)
        r = sh("cc", "-O1", "-I", os.path.join(self.prefix, "include"), src, "-o", exe, "-ldl")
        self.assertEqual(r.returncode, 0, r.stderr)
        bare = sh(exe, env=harness.sim_env())
        self.assertEqual((bare.returncode, bare.stdout), (0, "done\n"), bare.stderr)
        for mode in ("LD_PRELOAD", "CUDA_INJECTION64_PATH"):
            with self.subTest(mode=mode):
                out = os.path.join(self.tmp, "out-" + mode)
                env = harness.sim_env(PROF_OUTPUT_DIR=out, PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1,
                                      PROF_ACTIVE=3)
                env[mode] = self.lib
                r = sh(exe, env=env)
                self.assertEqual((r.returncode, r.stdout), (0, "done\n"), r.stderr)
                traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
                self.assertEqual(len(traces), 1, r.stderr)
                with open(traces[0]) as f:
                    window = json.load(f)["libprof"]["window"]
                self.assertEqual((window["first_step"], window["last_step"]), (2, 4))


if __name__ == "__main__":
    harness.main()
