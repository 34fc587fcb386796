"""The `prof` command: validate accepts the real torch.profiler traces and
rejects broken ones by rule, merge of four ranks keeps every event and
validates, run passes the command's exit status through and sets the
environment libprof reads, and every subcommand has --help."""
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import harness

REAL_TRACES = ["simple_add.pt.trace.json.gz", "training_rank0.pt.trace.json.gz", "sampled_rank0.pt.trace.json.gz"]


def prof(*args, env=None, timeout=120):
    return subprocess.run([harness.PROF_TOOL, *args], capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else harness.clean_env())


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


class ProfCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="libprof-cli-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def real(self, name):
        path = os.path.join(harness.KINETO_TRACES, name)
        if not os.path.exists(path):
            self.skipTest(f"{path} missing")
        return path

    def test_every_subcommand_has_help(self):
        for command in ("run", "summary", "validate", "merge"):
            r = prof(command, "--help")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"usage: prof {command}", r.stdout)
        self.assertEqual(prof("--help").returncode, 0)
        self.assertEqual(prof("bogus").returncode, 2)

    def test_validate_accepts_the_real_kineto_traces(self):
        paths = [self.real(n) for n in REAL_TRACES]
        r = prof("validate", *paths)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count(": OK"), 3, r.stdout)

    def test_validate_rejects_a_broken_trace_naming_rule_and_event(self):
        trace = load(self.real("simple_add.pt.trace.json.gz"))
        kernel = next(i for i, e in enumerate(trace["traceEvents"]) if e.get("cat") == "kernel")
        del trace["traceEvents"][kernel]["args"]["stream"]
        broken = os.path.join(self.tmp, "broken.json")
        with open(broken, "w") as f:
            json.dump(trace, f)
        r = prof("validate", broken)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"rule kernel-args: event #{kernel}", r.stdout)
        self.assertIn("FAIL", r.stdout)

    def test_validate_rejects_non_json(self):
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            f.write('{"traceEvents": [], }')
        r = prof("validate", bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("rule strict-json", r.stdout)

    def test_merge_of_four_ranks_keeps_every_event_and_validates(self):
        source = load(self.real("simple_add.pt.trace.json.gz"))
        inputs, total = [], 0
        for rank in range(4):
            trace = json.loads(json.dumps(source))
            trace["distributedInfo"]["rank"] = rank
            path = os.path.join(self.tmp, f"rank{rank}.json")
            with open(path, "w") as f:
                json.dump(trace, f)
            inputs.append(path)
            total += len(trace["traceEvents"])
        out = os.path.join(self.tmp, "merged.pt.trace.json.gz")
        r = prof("merge", *inputs, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        merged = load(out)
        events = merged["traceEvents"]
        labels = [e for e in events if e.get("name") == "process_labels" and
                  str(e.get("args", {}).get("labels", "")).startswith("rank ")]
        self.assertEqual(len(events), total + len(labels), "an input event was lost or duplicated")
        # Every kernel of every rank is there, in its rank's own process block.
        kernels = [e for e in events if e.get("cat") == "kernel"]
        self.assertEqual(len(kernels), 4 * sum(1 for e in source["traceEvents"] if e.get("cat") == "kernel"))
        self.assertEqual(len({e["pid"] // 100000000 for e in kernels}), 4)
        self.assertEqual(prof("validate", out).returncode, 0)

    def test_events_with_wrongly_typed_fields_are_rejected_by_validate_and_skipped_by_summary_and_merge(self):
        source = load(self.real("simple_add.pt.trace.json.gz"))
        events = source["traceEvents"]
        kernels = [i for i, e in enumerate(events) if e.get("cat") == "kernel"]
        calls = [i for i, e in enumerate(events) if e.get("cat") == "cuda_runtime"]
        broken = json.loads(json.dumps(source))
        # A nested array as pid (once reported OK), an object as tid, a string as ts, null as dur.
        broken["traceEvents"][kernels[0]]["pid"] = [[0]]
        broken["traceEvents"][kernels[1]]["tid"] = {"stream": 7}
        broken["traceEvents"][calls[0]]["ts"] = "12"
        broken["traceEvents"][calls[1]]["dur"] = None
        path = os.path.join(self.tmp, "broken.json")
        with open(path, "w") as f:
            json.dump(broken, f)

        r = prof("validate", path)
        self.assertEqual(r.returncode, 1, r.stdout)
        for i, field in ((kernels[0], "pid=[[0]]"), (kernels[1], 'tid={"stream":7}'), (calls[0], 'ts="12"'),
                         (calls[1], "dur=null")):
            self.assertRegex(r.stdout, rf"rule field-types: event #{i} \(ph=\"X\".*\) has {re.escape(field)}, not ")

        # summary: the four events are left out, counted, the first named;
        # the rest is read as from a trace without them.
        r = prof("summary", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"4 events skipped: pid, tid, ts or dur of the wrong type; the first: event #{min(kernels[0], calls[0])}",
                      r.stdout)
        without = json.loads(json.dumps(source))
        without["traceEvents"] = [e for i, e in enumerate(events) if i not in (kernels[0], kernels[1], calls[0], calls[1])]
        clean = os.path.join(self.tmp, "without.json")
        with open(clean, "w") as f:
            json.dump(without, f)
        expected = prof("summary", clean)
        self.assertEqual(expected.returncode, 0, expected.stderr)
        strip = lambda text: [l for l in text.splitlines() if not l.startswith("==>") and "skipped" not in l]
        self.assertEqual(strip(r.stdout), strip(expected.stdout))

        # merge: left out of the output, counted, named with their input; the output is valid.
        good = os.path.join(self.tmp, "good.json")
        with open(good, "w") as f:
            json.dump(source, f)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", good, path, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"4 events skipped: pid, tid, ts or dur of the wrong type; the first: {path}: event #", r.stdout)
        merged = load(out)["traceEvents"]
        labels = [e for e in merged if e.get("name") == "process_labels" and
                  str(e.get("args", {}).get("labels", "")).startswith("rank ")]
        self.assertEqual(len(merged), 2 * len(events) - 4 + len(labels))
        self.assertEqual(sum(1 for e in merged if not isinstance(e.get("pid"), (int, str))), 0)
        self.assertEqual(prof("validate", out).returncode, 0)

    def test_merge_of_a_directory_writes_the_job_summary_and_skips_its_own_output(self):
        # Four ranks' copies of a real Kineto trace, each given one all-reduce
        # (Kineto's collective arguments) ending at the same true instant; rank
        # 2's clock reads 1.5 ms late and it arrives 2 ms after the others.
        source = load(self.real("simple_add.pt.trace.json.gz"))
        end_us = max(e["ts"] + e.get("dur", 0) for e in source["traceEvents"] if "ts" in e) + 10000.0
        traces = os.path.join(self.tmp, "traces")
        os.makedirs(traces)
        for rank in range(4):
            trace = json.loads(json.dumps(source))
            trace["distributedInfo"]["rank"] = rank
            clock = 1500.0 if rank == 2 else 0.0
            start = end_us - (500.0 if rank == 2 else 2500.0)
            trace["traceEvents"].append({
                "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 99,
                "ts": start + clock, "dur": end_us - start,
                "args": {"stream": 99, "correlation": 999999, "Collective name": "allreduce", "In msg nelems": 1024,
                         "Out msg nelems": 1024, "Group size": 4, "dtype": "Float", "Process Group Name": "0",
                         "Process Group Ranks": "[0, 1, 2, 3]", "Seq": 1}})
            with open(os.path.join(traces, f"host_rank{rank}.1.pt.trace.json"), "w") as f:
                json.dump(trace, f)
        out = os.path.join(traces, "job.pt.trace.json")
        for attempt in range(2):  # the second run finds the first's output in the directory and leaves it out
            r = prof("merge", traces, "-o", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("4 inputs", r.stdout)
        with open(os.path.join(traces, "job.summary.txt")) as f:
            summary = f.read()
        self.assertEqual(summary, r.stdout[:len(summary)])
        self.assertIn("Clocks: aligned to rank 0 on the end times of 1 collectives", summary)
        self.assertIn("rank 2 +1.500 ms", summary)
        merged = load(out)
        # Within a microsecond: this trace's ts are epoch microseconds, whose doubles keep about 0.2 us.
        offsets = [i["clock_offset_ns"] for i in merged["libprof_merge"]["inputs"]]
        for got, want in zip(offsets, [0, 0, 1500000, 0]):
            self.assertLessEqual(abs(got - want), 1000, offsets)
        ends = [e["ts"] + e["dur"] for e in merged["traceEvents"] if e.get("name", "").startswith("ncclDev")]
        self.assertEqual(len(ends), 4)
        self.assertLessEqual(max(ends) - min(ends), 1.0, "the all-reduce ends at one instant on every rank once aligned")
        # A merged trace is not an input.
        r = prof("merge", out, os.path.join(traces, "host_rank0.1.pt.trace.json"), "-o", os.path.join(self.tmp, "x.json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("already a merge", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.json")))

    def test_merge_of_traces_without_a_rank_names_processes_not_ranks(self):
        # libprof's own traces (rank_known false) are labelled by program and
        # pid; another producer's traces without distributedInfo by file name.
        source = load(self.real("simple_add.pt.trace.json.gz"))
        inputs = []
        for k in range(3):
            trace = json.loads(json.dumps(source))
            trace.pop("distributedInfo", None)
            path = os.path.join(self.tmp, f"worker{k}.pt.trace.json")
            with open(path, "w") as f:
                json.dump(trace, f)
            inputs.append(path)
        out = os.path.join(self.tmp, "merged.json")
        r = prof("merge", *inputs, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("Job: 3 processes (their traces carry no rank)"), r.stdout)
        self.assertNotRegex(r.stdout, r"\bRank\b|\brank [0-9]")
        self.assertIn("worker2.pt.trace.json", r.stdout)
        merged = load(out)
        self.assertNotIn("distributedInfo", merged)
        self.assertEqual(prof("validate", out).returncode, 0)
        # The control: the same traces with their ranks are ranks.
        for k, path in enumerate(inputs):
            with open(path) as f:
                trace = json.load(f)
            trace["distributedInfo"] = {"rank": k, "world_size": 3}
            with open(path, "w") as f:
                json.dump(trace, f)
        r = prof("merge", *inputs, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("Job: 3 ranks"), r.stdout)
        self.assertEqual(load(out)["distributedInfo"]["ranks"], [0, 1, 2])

    def test_errors_name_the_output_path_given_not_a_temporary(self):
        trace = self.real("simple_add.pt.trace.json.gz")
        missing = os.path.join(self.tmp, "missing", "dir")
        for command in (["merge", trace, trace, "-o", os.path.join(missing, "out.json")],
                        ["report", trace, "-o", os.path.join(missing, "out.html")]):
            with self.subTest(command=command[0]):
                r = prof(*command)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn(f"prof {command[0]}: cannot write {command[-1]}: No such file or directory (ENOENT)",
                              r.stderr)
                self.assertNotIn(".tmp", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "missing")))

    def test_summary_reads_several_traces_and_compares_them(self):
        paths = [self.real(n) for n in REAL_TRACES[:2]]
        r = prof("summary", *paths)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("cuda_gpu_kern_sum"), 2)
        self.assertIn("2 windows compared", r.stdout)

    def test_run_passes_the_exit_status_through(self):
        for code in (0, 3, 77):
            r = prof("run", "-q", "--lib", harness.LIBPROF_SO, "--", "sh", "-c", f"exit {code}")
            self.assertEqual(r.returncode, code, r.stderr)

    def test_run_passes_a_terminating_signal_through(self):
        r = prof("run", "-q", "--lib", harness.LIBPROF_SO, "--", "sh", "-c", "kill -TERM $$")
        self.assertEqual(r.returncode, -signal.SIGTERM)

    def test_run_sets_preload_nvtx_injection_and_schedule(self):
        env = harness.clean_env(LD_PRELOAD="libm.so.6")
        r = prof("run", "-q", "--wait", "3", "--warmup", "1", "--active", "2", "--repeat", "4", "--skip-first", "5",
                 "--step", "sync", "--out", self.tmp, "--gzip", "--", "sh", "-c",
                 'echo "$LD_PRELOAD|$NVTX_INJECTION64_PATH|$PROF_WAIT $PROF_WARMUP $PROF_ACTIVE $PROF_REPEAT '
                 '$PROF_SKIP_FIRST|$PROF_STEP|$PROF_OUTPUT_DIR|$PROF_COMPRESS"', env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        preload, nvtx, counts, step, out, compress = r.stdout.strip().split("|")
        lib = os.path.realpath(harness.LIBPROF_SO)
        self.assertEqual(harness.without_sanitizer_preload(preload), "libm.so.6:" + lib,
                         "libprof must be appended to an existing LD_PRELOAD")
        self.assertEqual(nvtx, lib)
        self.assertEqual(counts, "3 1 2 4 5")
        self.assertEqual((step, out, compress), ("sync", self.tmp, "gzip"))

    def test_run_range_sets_prof_range_and_the_windows_are_the_programs_ranges(self):
        r = prof("run", "-q", "--range", "nvtx:^step$", "--", "sh", "-c", 'echo "$PROF_RANGE"', env=harness.clean_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "nvtx:^step$")
        iter_loop = os.path.join(harness.WORKLOAD_DIR, "iter_loop")
        if not os.path.exists(iter_loop):
            self.skipTest("iter_loop not built")
        # iter_loop calls cudaProfilerStart/Stop around iterations 5-7 of every 20: three ranges in 50 iterations.
        r = prof("run", "-q", "--lib", harness.LIBPROF_SO, "--range", "cudaProfilerApi", "--repeat", "0", "--step", "sync",
                 "--out", self.tmp, "--", iter_loop, "--mode", "profiler-api", "--iters", "50", env=harness.sim_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        traces = sorted(glob.glob(os.path.join(self.tmp, "*.pt.trace.json")))
        ranges = []
        for path in traces:
            with open(path) as f:
                meta = json.load(f)["libprof"]
            ranges.append((meta["range"], meta["window"]["first_step"], meta["window"]["last_step"]))
        self.assertEqual(sorted(ranges), [(f"cudaProfilerStart/Stop range {k + 1}", 3 * k, 3 * k + 2) for k in range(3)])
        # The summary names the range, and `prof summary` reads it back from the trace.
        with open(traces[0].replace(".pt.trace.json", ".summary.txt")) as f:
            self.assertIn("\nrange = cudaProfilerStart/Stop range ", f.read())
        r = prof("summary", traces[0])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\nrange = cudaProfilerStart/Stop range ", r.stdout)

    def test_run_rejects_bad_counts_and_missing_commands(self):
        r = prof("run", "--active", "two", "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--active 'two'", r.stderr)
        self.assertEqual(prof("run", "--lib", harness.LIBPROF_SO).returncode, 2)
        self.assertEqual(prof("run", "-q", "--lib", harness.LIBPROF_SO, "--", "/nonexistent/cmd").returncode, 127)

    def test_install_puts_libprof_and_prof_in_standard_places(self):
        # PROF_TOOL is <build>/tools/prof/prof.
        build = os.path.dirname(os.path.dirname(os.path.dirname(harness.PROF_TOOL)))
        prefix = os.path.join(self.tmp, "prefix")
        r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        tool = os.path.join(prefix, "bin", "prof")
        libs = [os.path.join(root, f) for root, _, files in os.walk(prefix) for f in files if f == "libprof.so"]
        self.assertTrue(os.access(tool, os.X_OK), "bin/prof missing")
        self.assertEqual(len(libs), 1, libs)
        self.assertIn(os.path.basename(os.path.dirname(libs[0])), ("lib", "lib64", "x86_64-linux-gnu"))
        # The installed prof finds the installed library by itself.
        r = subprocess.run([tool, "run", "-q", "--", "sh", "-c", "echo $LD_PRELOAD"], capture_output=True,
                           text=True, env=harness.clean_env(), timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(harness.without_sanitizer_preload(r.stdout.strip()), os.path.realpath(libs[0]))


if __name__ == "__main__":
    harness.main()
