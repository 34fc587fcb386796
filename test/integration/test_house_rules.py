"""The shape of the code (../shared/DESIGN.md, "Shape of the code"), checked
on the source tree: layers point down only, every product folder and each
folder directly inside one says what it owns in a README, no product
function is over 100 lines, docs/architecture.md names only paths that
exist, and docs/performance.md stays a page, not a diary."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PRODUCT = ["model", "base", "collectors", "exporters", "agent", "tools"]
SOURCE_EXT = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# What each layer's files may include of ours, by top-level folder. A
# folder's own files are always allowed. exporters/ may use the file-system
# seam of base/ only (exporters log nothing: they return errors).
ALLOWED = {
    "model": {"model"},
    "base": {"model", "base"},
    "collectors": {"model", "base", "collectors"},
    "exporters": {"model", "exporters", "base/file_system.h"},
    "tools": {"model", "base", "exporters", "tools"},
    "agent": {"model", "base", "collectors", "exporters", "agent"},
}


def product_sources():
    for top in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def ours(include):
    return include.split("/", 1)[0] in PRODUCT


def layer_violations(sources):
    """sources: (path, text) pairs; the includes in them against ALLOWED."""
    bad = []
    for path, text in sources:
        allowed = ALLOWED[path.split("/", 1)[0]]
        for inc in INCLUDE.findall(text):
            if ours(inc) and inc.split("/", 1)[0] not in allowed and inc not in allowed:
                bad.append(f"{path} includes {inc}")
    return bad


class LayersPointDown(unittest.TestCase):
    def test_includes_follow_the_layers(self):
        def read(path):
            with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
                return f.read()
        bad = layer_violations((path, read(path)) for path in product_sources())
        self.assertEqual(bad, [], "includes against the layers:\n" + "\n".join(bad))

    def test_the_check_refuses_an_upward_include(self):
        sources = [
            ("collectors/cupti/x.cpp", '#include "base/log.h"\n#include "agent/session/session.h"\n#include <cupti.h>\n'),
            ("exporters/trace/y.cpp", '#include "base/file_system.h"\n#include "base/log.h"\n'),
            ("model/z.h", '#include "model/events.h"\n  #  include "base/clock.h"\n'),
        ]
        self.assertEqual(layer_violations(sources), [
            "collectors/cupti/x.cpp includes agent/session/session.h",
            "exporters/trace/y.cpp includes base/log.h",
            "model/z.h includes base/clock.h",
        ])


class Readmes(unittest.TestCase):
    def test_every_product_folder_and_each_inside_one_has_a_readme(self):
        missing = []
        for top in PRODUCT:
            folders = [top] + [os.path.join(top, d) for d in sorted(os.listdir(os.path.join(ROOT, top)))
                               if os.path.isdir(os.path.join(ROOT, top, d))]
            for folder in folders:
                readme = os.path.join(ROOT, folder, "README.md")
                if not os.path.isfile(readme) or os.path.getsize(readme) < 80:
                    missing.append(folder)
        self.assertEqual(missing, [], "folders without a README: " + ", ".join(missing))


class FunctionLengths(unittest.TestCase):
    def test_no_product_function_over_100_lines(self):
        script = os.path.join(ROOT, "scripts", "function-lengths.py")
        r = subprocess.run([sys.executable, script], cwd=ROOT, capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, r"0 of \d+ functions over 100 lines")

    def test_the_script_counts_lines_it_is_given(self):
        script = os.path.join(ROOT, "scripts", "function-lengths.py")
        r = subprocess.run([sys.executable, script, "--self-test"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class ArchitectureNamesRealPaths(unittest.TestCase):
    def test_every_path_it_names_exists(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            text = f.read()
        tops = "|".join(PRODUCT + ["test", "scripts", "docs", "include", "cmake"])
        # Backticked in the text, or anywhere in the diagrams.
        named = set(re.findall(r"(?<![\w/.])((?:%s)/[A-Za-z0-9_./{},*-]*[A-Za-z0-9_}*/])" % tops, text))
        missing = []
        for path in sorted(named):
            # `a/{b,c}.h` names a/b.h and a/c.h; `a/b.*` any file a/b.<ext>.
            m = re.match(r"(.*)\{([^}]*)\}(.*)", path)
            candidates = [m.group(1) + part + m.group(3) for part in m.group(2).split(",")] if m else [path]
            for c in candidates:
                c = c.rstrip("/")
                if c.endswith(".*"):
                    d, stem = os.path.split(c[:-2])
                    ok = os.path.isdir(os.path.join(ROOT, d)) and any(
                        n.startswith(stem + ".") for n in os.listdir(os.path.join(ROOT, d)))
                else:
                    ok = os.path.exists(os.path.join(ROOT, c))
                if not ok:
                    missing.append(c)
        self.assertGreater(len(named), 20, "docs/architecture.md names too few paths to be a map")
        self.assertEqual(missing, [], "docs/architecture.md names paths that do not exist: " + ", ".join(missing))


class PerformanceDocIsShort(unittest.TestCase):
    def test_performance_md_has_at_most_300_lines(self):
        # Method, the latest figure for every target, how to reproduce: no
        # dated diary (history lives in git).
        with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertLessEqual(len(lines), 300)
        self.assertFalse([l for l in lines if re.match(r"^#+ .*\b20\d\d-\d\d-\d\d\b", l)], "dated section headings")


if __name__ == "__main__":
    unittest.main(verbosity=2)
