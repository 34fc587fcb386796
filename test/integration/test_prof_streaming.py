"""The streaming `prof` readers: the same output as the document-parsing
readers had (goldens in prof_golden/, see prof_golden.py), and hostile input
costs one clear message for its file, never a crash, a stack overflow, a
wrong number or the other files' results."""
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
import prof_golden


def prof(*args, cwd=None, timeout=300):
    return subprocess.run([harness.PROF_TOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


DEEP = 50000


class GoldenOutputs(unittest.TestCase):
    """Byte for byte what `prof` printed before it streamed."""

    @classmethod
    def setUpClass(cls):
        cls.work = tempfile.mkdtemp(prefix="prof-golden-")
        names = prof_golden.make_inputs(os.environ["KINETO_TRACES"], cls.work)
        cls.outputs = prof_golden.run_all(harness.PROF_TOOL, cls.work, names)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work)

    def test_every_command_prints_what_it_printed_before(self):
        goldens = sorted(os.listdir(prof_golden.GOLDEN_DIR))
        self.assertEqual(goldens, sorted(self.outputs), "a golden file is missing or unused")
        for name in goldens:
            with open(os.path.join(prof_golden.GOLDEN_DIR, name)) as f:
                expected = f.read()
            with self.subTest(name):
                self.assertEqual(self.outputs[name], expected)


class HostileInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="prof-hostile-")
        self.good = os.path.join(os.environ["KINETO_TRACES"], "simple_add.pt.trace.json.gz")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def trace(self, name, events, **top):
        doc = {"traceEvents": events, "distributedInfo": {"rank": 0}, **top}
        return self.write(name, json.dumps(doc))

    def test_validate_survives_50000_deep_nesting_in_a_described_field(self):
        deep = "[" * DEEP + "]" * DEEP
        path = self.write("deep.json", '{"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "X", "cat": "c", '
                          '"dur": 1, "pid": 1, "tid": 1, "ts": ' + deep + "}]}")
        r = prof("validate", path, self.good)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("rule field-types: event #0", r.stdout)
        self.assertIn("simple_add.pt.trace.json.gz: OK", r.stdout)

    def test_a_type_error_names_its_file_and_the_next_file_is_still_read(self):
        path = self.trace("cat5.json", [{"ph": "X", "cat": 5, "ts": 1, "dur": 1, "pid": 1, "tid": 1}])
        r = prof("validate", path, self.good)
        self.assertIn("cat5.json: OK", r.stdout, r.stdout + r.stderr)
        self.assertIn("simple_add.pt.trace.json.gz: OK", r.stdout)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_gzip_file_past_the_unpacked_cap_is_refused_and_the_others_read(self):
        bomb = os.path.join(self.tmp, "bomb.json.gz")
        with gzip.open(bomb, "wt") as f:
            f.write('{"traceEvents": [' + " " * (3 << 20) + "]}")
        self.assertLess(os.path.getsize(bomb), 64 << 10)
        r = prof("validate", "--max-unpacked-mb", "1", bomb, self.good)
        self.assertEqual(r.returncode, 1)
        self.assertIn("bomb.json.gz: FAIL", r.stdout)
        self.assertIn("more than 1 MB once unpacked", r.stdout)
        self.assertIn("simple_add.pt.trace.json.gz: OK", r.stdout)
        self.assertEqual(prof("validate", "--max-unpacked-mb", "4", bomb).returncode, 1)  # no distributedInfo
        self.assertNotIn("unpacked", prof("validate", "--max-unpacked-mb", "4", bomb).stdout)

    def test_strict_json_is_what_a_document_parser_accepts(self):
        bad = {
            "trailing comma": '{"traceEvents": [],}',
            "comment": '{"traceEvents": [] /* c */}',
            "number overflow": '{"traceEvents": [{"ts": 1e400}]}',
            "lone surrogate": '{"traceEvents": [{"name": "\\ud800"}]}',
            "invalid utf-8": b'{"traceEvents": [{"name": "\xc3\x28"}]}',
            "leading zero": '{"traceEvents": [{"ts": 01}]}',
            "text after": '{"traceEvents": []} x',
            "unterminated": '{"traceEvents": [{"ph": "X"',
            "control character": '{"traceEvents": [{"name": "a\x01b"}]}',
        }
        for what, text in bad.items():
            path = os.path.join(self.tmp, "bad.json")
            with open(path, "wb") as f:
                f.write(text if isinstance(text, bytes) else text.encode())
            with self.subTest(what):
                r = prof("validate", path)
                self.assertEqual(r.returncode, 1)
                self.assertIn("rule strict-json", r.stdout)
        ok = self.write("ok.json", '{"distributedInfo": {"rank": 0}, "traceEvents": [{"ph": "i", "ts": 1e-400, '
                        '"pid": 1, "tid": 1, "name": "\\u00e9\\ud83d\\ude00 \\/"}]}')
        self.assertEqual(prof("validate", ok).returncode, 0, prof("validate", ok).stdout)

    def test_summary_and_merge_survive_50000_deep_nesting_in_the_libprof_block(self):
        deep = "[" * DEEP + "]" * DEEP
        path = self.write("deep.json", '{"distributedInfo": {"rank": 0}, "libprof": {"config": {"deep": ' + deep +
                          '}}, "traceEvents": []}')
        r = prof("summary", path, self.good)
        # deep.json holds no event at all: read whole, then said to have no
        # CUDA activity (exit 1), and the next file is still summarized.
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(path + ": no CUDA activity", r.stderr)
        self.assertEqual(r.stdout.count("cuda_gpu_kern_sum"), 1)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", path, self.good, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            text = f.read()
        self.assertIn(deep, text)  # the libprof block is carried whole into libprof_merge

    def test_a_type_error_in_summary_names_nothing_lost_and_the_next_file_is_read(self):
        path = self.trace("types.json", [{"ph": 5, "cat": 5, "name": 7, "ts": "x", "pid": [1], "tid": {}},
                                         {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0,
                                          "tid": 7, "args": {"stream": 7, "correlation": 1.5e300, "grid": [1e300]}}])
        r = prof("summary", path, self.good)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("==> " + path, r.stdout)
        self.assertIn("2 windows compared", r.stdout)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", path, self.good, "-o", out)
        self.assertIn("events written", r.stdout, r.stderr)

    def test_merge_maps_hostile_numbers_without_overflow(self):
        a = self.trace("a.json", [
            {"ph": "X", "cat": "c", "name": "big pid", "ts": 1, "dur": 1, "pid": 1e30, "tid": 1},
            {"ph": "X", "cat": "c", "name": "negative pid", "ts": 1, "dur": 1, "pid": -1, "tid": 1},
            {"ph": "X", "cat": "c", "name": "pid past a block", "ts": 1, "dur": 1, "pid": 2 ** 40, "tid": 1},
            {"ph": "s", "cat": "ac2g", "name": "f", "ts": 1, "pid": 5, "tid": 1, "id": 1e300},
            {"ph": "f", "cat": "ac2g", "name": "f", "ts": 1, "pid": 5, "tid": 1, "id": 2 ** 50},
            {"ph": "M", "name": "process_sort_index", "ts": 0, "pid": 5, "tid": 0, "args": {"sort_index": 1e300}},
        ], baseTimeNanoseconds=1e300)
        b = self.trace("b.json", [{"ph": "X", "cat": "c", "name": "x", "ts": 1, "dur": 1, "pid": 3, "tid": 1}],
                       baseTimeNanoseconds=1000)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", a, b, "-o", out)
        self.assertIn("events written", r.stdout, r.stderr)
        with open(out) as f:
            merged = json.load(f)
        for e in merged["traceEvents"]:
            pid = e.get("pid")
            if isinstance(pid, (int, float)):
                self.assertEqual(pid // 100000000, {"a.json": 1, "b.json": 2}[self.source_of(merged, pid)], e)
            if isinstance(e.get("id"), (int, float)):
                self.assertTrue(0 <= e["id"] < 2 ** 42, e)
            if e.get("name") == "process_sort_index":
                self.assertEqual(e["args"]["sort_index"], 1e300)
        strings = [e["pid"] for e in merged["traceEvents"] if isinstance(e.get("pid"), str)]
        # A pid past any integer type is not a pid (rule field-types): left out, counted.
        self.assertNotIn("big pid", [e.get("name") for e in merged["traceEvents"]])
        self.assertIn("1 event skipped: pid, tid, ts or dur of the wrong type; the first: " + a + ": event #0", r.stdout)
        self.assertIn("rank 0: -1", strings)
        self.assertIn("rank 0: 1099511627776", strings)
        self.assertEqual(merged["baseTimeNanoseconds"], 0)  # a's base is not an integer: treated as absent

    @staticmethod
    def source_of(merged, pid):
        block = int(pid) // 100000000
        return os.path.basename(merged["libprof_merge"]["inputs"][block - 1]["file"])

    def test_merge_refuses_bases_too_far_apart_and_writes_nothing(self):
        a = self.trace("a.json", [], baseTimeNanoseconds=9000000000000000000)
        b = self.trace("b.json", [], baseTimeNanoseconds=-9000000000000000000)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", a, b, "-o", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a.json: baseTimeNanoseconds", r.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual(os.listdir(self.tmp), ["a.json", "b.json"], "a temporary file was left behind")

    def test_merge_names_every_unreadable_input_and_writes_nothing(self):
        bad = self.write("bad.json", '{"traceEvents": [,]}')
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", bad, os.path.join(self.tmp, "missing.json"), self.good, "-o", out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("rule strict-json: " + bad, r.stderr)
        self.assertIn("missing.json: No such file", r.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
