"""collectors/cupti/cupti_13_2.h declares, under libprof's own names, what
libprof uses of CUPTI 13.1/13.2 that the toolkit's 13.0 headers lack (the
Kernel11 record, cuptiSubscribe_v2's allowMultipleSubscribers, the
per-subscriber activity functions and attributes). check_cupti_13_2.cpp
asserts each against NVIDIA's own 13.2 headers, those of the
nvidia-cuda-cupti wheel PyTorch's cu13 build ships in the tests' venv: this
test compiles it with those headers first on the include path."""
import glob
import os
import re
import subprocess
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CHECK = os.path.join(HERE, "check_cupti_13_2.cpp")


def cupti_13_2_include_dir():
    """The venv's CUPTI include directory whose cupti_version.h says 13.2 or
    later, or None."""
    pattern = os.path.join(harness.VENV, "lib", "python3*", "site-packages", "nvidia", "*", "include",
                           "cupti_version.h")
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            m = re.search(r"#define\s+CUPTI_API_VERSION\s+(\d+)", f.read())
        if m and int(m.group(1)) >= 130200:
            return os.path.dirname(path)
    return None


def compile_check(include_dir, *defines):
    cmd = [os.environ.get("CXX", "c++"), "-std=c++20", "-fsyntax-only", *defines, "-I", include_dir,
           "-I", os.path.join(harness.CUDA_HOME, "include"), "-I", ROOT, CHECK]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Cupti132Declarations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need_venv()
        cls.include = cupti_13_2_include_dir()
        if cls.include is None:
            harness.unavailable("CUPTI 13.2 headers", f"no nvidia/*/include/cupti_version.h of 13.2 in {harness.VENV}")

    def test_every_declaration_is_nvidias(self):
        proc = compile_check(self.include)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])

    def test_the_check_fails_against_the_toolkits_13_0_headers(self):
        # The same file against CUDA 13.0's cupti.h, which lacks what 13.2
        # added: the check is of 13.2's headers, not a file that always compiles.
        proc = compile_check(os.path.join(harness.CUDA_HOME, "include"))
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("compile against CUPTI 13.2's headers", proc.stderr)


if __name__ == "__main__":
    harness.main()
