"""What a new user meets first, each checked with the real programs: `prof
--version`; a damaged gzip named as such; `prof summary` of a trace without
CUDA activity; `prof merge` of processes that have no rank; no data-loss
finding on a short window where nothing was lost; log lines that say what is
true (a run that made no CUDA call, the CUPTI detail at debug)."""
import gzip
import json
import os
import re
import subprocess
import sys
import unittest

import harness
from test_agent_support import need, run_agent, workload


def prof(*args, timeout=120):
    return subprocess.run([harness.PROF_TOOL, *args], capture_output=True, text=True, timeout=timeout)


# A torch.profiler trace of a run that made no CUDA call: CPU ops only.
CPU_ONLY = {"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 20.0, "dur": 5.0}]}


class ProfCommand(unittest.TestCase):
    def setUp(self):
        need(harness.PROF_TOOL)
        self.dir = harness.scratch_dir(self, "libprof-first-")

    def test_version(self):
        for flag in ("--version", "-V"):
            r = prof(flag)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertRegex(r.stdout.strip(), r"^prof \(libprof\) \d+\.\d+\.\d+$")
        self.assertIn("--version", prof("--help").stdout)

    def write_gz(self, name, payload):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(payload)
        return path

    def test_a_damaged_gzip_is_named_as_such_by_every_reader(self):
        good = gzip.compress(json.dumps(CPU_ONLY).encode() * 1)
        middle = len(good) // 2
        damaged = good[:10] + bytes(b ^ 0x5A for b in good[10:middle]) + good[middle:]
        cases = {
            "corrupt.pt.trace.json.gz": (damaged, "corrupt gzip file"),
            "truncated.pt.trace.json.gz": (good[:middle], "truncated gzip file"),
            "not_gzip.pt.trace.json.gz": (b"\x00\x01" + good[2:], "not a gzip file"),
        }
        for name, (payload, said) in cases.items():
            path = self.write_gz(name, payload)
            for cmd in (["summary", path], ["validate", path], ["merge", path, path, "-o",
                                                                 os.path.join(self.dir, "m.json")]):
                with self.subTest(file=name, command=cmd[0]):
                    r = prof(*cmd)
                    self.assertNotEqual(r.returncode, 0, r.stdout)
                    self.assertIn(said, r.stdout + r.stderr)
                    self.assertNotIn("at byte 0", r.stdout + r.stderr)

    def test_summary_of_a_trace_without_cuda_activity_says_so_and_fails(self):
        path = os.path.join(self.dir, "cpu_only.pt.trace.json")
        with open(path, "w") as f:
            json.dump(CPU_ONLY, f)
        r = prof("summary", path)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("no CUDA activity", r.stderr)
        self.assertNotIn("interception-only", r.stdout + r.stderr)
        self.assertNotIn("PROF_CUPTI_LIB", r.stdout + r.stderr)


class MergeUnranked(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, harness.PROF_TOOL, workload("train_loop"))
        self.dir = harness.scratch_dir(self, "libprof-merge-")

    def traces(self, **env):
        paths = []
        for _ in range(2):
            run = run_agent([workload("train_loop"), "--steps", "8"], PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=1,
                            PROF_ACTIVE=2, **env)
            self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
            self.assertEqual(len(run.traces), 1, run.proc.stderr)
            paths.append(run.traces[0][0])
        return paths

    def merged(self, paths):
        out = os.path.join(self.dir, "merged.json")
        r = prof("merge", *paths, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(out) as f:
            return json.load(f)

    def test_unranked_processes_are_named_by_program_and_pid_not_given_ranks(self):
        paths = self.traces()
        pids = []
        for p in paths:
            with open(p) as f:
                pids.append(json.load(f)["libprof"]["pid"])
        m = self.merged(paths)
        labels = {e["args"]["labels"] for e in m["traceEvents"]
                  if e.get("ph") == "M" and e.get("name") == "process_labels" and "rank" not in e["args"]["labels"]
                  and e["args"]["labels"] not in ("CPU",) and not e["args"]["labels"].startswith("GPU")}
        self.assertEqual(labels, {f"train_loop pid {pid}" for pid in pids})
        names = [e["args"]["name"] for e in m["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"]
        self.assertFalse([n for n in names if n.startswith("rank ")], names)
        # No rank is claimed for the merge either, and its job summary speaks
        # of processes, named as in the timeline.
        self.assertNotIn("distributedInfo", m)
        for source in m["libprof_merge"]["inputs"]:
            self.assertNotIn("rank", source)
        with open(os.path.join(self.dir, "merged.summary.txt")) as f:
            job = f.read()
        self.assertTrue(job.startswith("Job: 2 processes (their traces carry no rank)"), job)
        for pid in pids:
            self.assertIn(f"train_loop pid {pid}", job)
        self.assertNotRegex(job, r"\bRank\b")
        # Split back, each is still a process without a rank.
        r = prof("summary", os.path.join(self.dir, "merged.json"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_ranked_processes_keep_their_ranks(self):
        paths = [self.traces(PROF_RANK=0)[0], self.traces(PROF_RANK=1)[0]]
        m = self.merged(paths)
        self.assertEqual(m["distributedInfo"]["ranks"], [0, 1])
        with open(os.path.join(self.dir, "merged.summary.txt")) as f:
            self.assertTrue(f.read().startswith("Job: 2 ranks"))
        labels = {e["args"]["labels"] for e in m["traceEvents"]
                  if e.get("ph") == "M" and e.get("name") == "process_labels" and e["args"]["labels"].startswith("rank")}
        self.assertEqual(labels, {"rank 0", "rank 1"})


# A training loop written the way a ctypes user would: the runtime opened by
# name and called through the handle, two copies and a synchronize per step.
CTYPES_LOOP = """
import ctypes, sys, time
rt = ctypes.CDLL("{cudart}")
dev = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(1 << 16)) == 0
host = ctypes.create_string_buffer(1 << 16)
# At least the iterations asked for, and at least 2.5 s: libprof notices
# calls through the handle only once it sees CUDA loaded (within a second),
# and on an idle machine the iterations alone can end before that.
n, i, t0 = int(sys.argv[1]), 0, time.monotonic()
while i < n or time.monotonic() - t0 < 2.5:
    rt.cudaMemcpy(dev, host, ctypes.c_size_t(1 << 16), 1)
    rt.cudaMemcpy(host, dev, ctypes.c_size_t(1 << 16), 2)
    rt.cudaDeviceSynchronize()
    i += 1
rt.cudaFree(dev)
"""


# The scratch-script set-up of test_agent_processes.py's ForkedWorkers: each class writes its own.
class TrueFindings(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO)
        self.script = os.path.join(harness.scratch_dir(self, "libprof-findings-"), "loop.py")
        with open(self.script, "w") as f:
            f.write(CTYPES_LOOP.replace("{cudart}", harness.CUDART_SONAME))

    def test_no_data_loss_finding_where_nothing_was_lost(self):
        # A short window with the defaults (256 MB) loses nothing. Before the
        # fix, one run in five said "1 device records dropped (buffer pool
        # exhausted)": a copy of the next iteration, still running when a
        # forced flush handed its buffer over, arrived without timestamps and
        # was charged to the window. Several runs, each checked.
        for attempt in range(6):
            with self.subTest(run=attempt):
                run = run_agent([sys.executable, self.script, "400"], timeout=180)  # PROF_STEP=auto, the defaults
                self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
                self.assertEqual(len(run.traces), 1, run.proc.stderr)
                path, trace = run.traces[0]
                losses = trace["libprof"]["losses"]
                self.assertEqual({k: v for k, v in losses.items() if v}, {}, path)
                with open(path.replace(".pt.trace.json", ".summary.txt")) as f:
                    summary = f.read()
                self.assertNotIn("[data-loss]", summary)
                # Copies and no kernel: not "overhead-bound" (that needs kernels).
                self.assertNotIn("[overhead-bound]", summary)

    def test_log_lines_say_what_is_true(self):
        # Calls through the handle reach libprof through CUPTI's callbacks only
        # (once it notices CUDA, within a second): enough iterations that the
        # schedule runs after that. The window's calls are CUPTI's records.
        run = run_agent([sys.executable, self.script, "4000"], timeout=180, PROF_STEP="sync", PROF_WAIT=2,
                        PROF_WARMUP=1, PROF_ACTIVE=3)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        lines = run.log_lines()
        written = [l for l in lines if "written:" in l]
        self.assertEqual(len(written), 1, lines)
        # The window's calls are counted, whichever path recorded them.
        m = re.search(r"written: (\d+) CUDA calls, (\d+) kernels/copies/memsets on the GPU", written[0])
        self.assertIsNotNone(m, written[0])
        self.assertGreaterEqual(int(m.group(1)), 9)
        self.assertEqual(int(m.group(2)), 6)
        # Whose window it is and where it went: the pid, and every file.
        whose = re.search(r"window steps \d+-\d+ of pid (\d+) written: .*; files: (.+)$", written[0])
        self.assertIsNotNone(whose, written[0])
        path, trace = run.traces[0]
        self.assertEqual(int(whose.group(1)), trace["libprof"]["pid"])
        stem = path[:-len(".pt.trace.json")]
        self.assertEqual(whose.group(2).split(", "),
                         [path, stem + ".summary.txt", stem + ".report.html"])
        # Which CUPTI was loaded and how its records are read: debug detail.
        self.assertFalse([l for l in lines if "records read as" in l], lines)
        debug = run_agent([sys.executable, self.script, "4000"], timeout=180, PROF_STEP="sync", PROF_WAIT=2,
                          PROF_WARMUP=1, PROF_ACTIVE=3, PROF_LOG_LEVEL="debug")
        self.assertTrue([l for l in debug.log_lines() if "records read as" in l], debug.proc.stderr)

    def test_a_process_that_loads_cuda_and_makes_no_call_logs_nothing_at_info(self):
        code = f"import ctypes\nctypes.CDLL({harness.CUDART_SONAME!r})\n"
        run = run_agent([sys.executable, "-c", code], timeout=60)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.log_lines(), [])


if __name__ == "__main__":
    harness.main()
