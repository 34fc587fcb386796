"""The report page in a real browser: Debian's chromium, headless, driven by
PyPI's playwright from the tests' venv (test/browser/probe_page.py), opens
each page from file:// with every network request refused. For the simulated
train_loop (what scripts/demo.sh runs), a Python model with call sites, and
each torch.profiler trace in ../shared/data/kineto-traces (through `prof
report`), it checks: no console error or warning, no request but the page
itself; the header, findings, kernel / CUDA API / memory tables, per-step
table, step-time breakdown, idle breakdown and call-site table show exactly
what the window's summary says; each flame graph's leaves add up to its
total, the kernel one's to the window's kernel time; clicking a box zooms
into it; hovering the timeline names a call. A screenshot of each page is
kept in report-artifacts/ under the test's build directory.

The folded stacks (<stem>.stacks.txt) follow the format's published rules
(flamegraph.pl's input: one `frame;frame;...;leaf weight` line per distinct
stack, no empty frame, a positive integer weight after the last space) and
their weights add up to the window's kernel time. No reader of the format is
packaged on PyPI or in Debian, so the rules are checked here.

Without the venv's playwright or without chromium the tests skip saying
which (they fail under CI=true)."""
import glob
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness
from test_agent_support import need, run_agent, workload

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "..", "browser", "probe_page.py")
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
ARTIFACTS = os.path.join(os.getcwd(), "report-artifacts")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
# A folded-stacks line: frames joined by ';', a space, the weight (flamegraph.pl's rules).
FOLDED_LINE = re.compile(r"^(?P<stack>[^;\r\n]+(?:;[^;\r\n]+)*) (?P<weight>[1-9][0-9]*)$")


def folded_stacks(text):
    """{stack: weight} of a folded-stacks file, or AssertionError naming the
    first line that breaks the format's rules: one line per distinct stack,
    each `frame;frame;...;leaf weight` with no empty frame (nor one that
    starts or ends with a space) and a positive integer weight."""
    if not text:
        return {}
    if not text.endswith("\n"):
        raise AssertionError("the last line has no newline")
    stacks = {}
    for number, line in enumerate(text[:-1].split("\n"), 1):
        m = FOLDED_LINE.match(line)
        if not m:
            raise AssertionError(f"line {number} is not 'frame;...;leaf weight': {line!r}")
        frames = m.group("stack").split(";")
        if any(not f.strip() or f != f.strip() for f in frames):
            raise AssertionError(f"line {number} has an empty or padded frame: {line!r}")
        if m.group("stack") in stacks:
            raise AssertionError(f"line {number} repeats a stack: {line!r}")
        stacks[m.group("stack")] = int(m.group("weight"))
    return stacks


def sections(text):
    """'== title ==' -> the lines under it."""
    out, current = {}, None
    for line in text.split("\n"):
        m = re.match(r"^== (.*) ==$", line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return out


def text_table(lines):
    """(header cells, rows of cells) of a summary table; ([], []) when none."""
    lines = [l for l in lines if l.strip()]
    if len(lines) < 2 or not set(lines[1].strip()) <= {"-", " "}:
        return [], []
    head = re.split(r"\s{2,}", lines[0].strip())
    rows = []
    for line in lines[2:]:
        if not line.startswith(" ") or line.startswith(" ...") or line.startswith(" ("):  # " (12 more operators...)"
            break
        rows.append(re.split(r"\s{2,}", line.strip(), maxsplit=len(head) - 1))
    return head, rows


def text_tables(lines):
    """Every (header cells, rows of cells) of a summary section, each table
    a header line over a dashed rule."""
    lines = [l for l in lines if l.strip()]
    rules = [i for i, l in enumerate(lines) if i > 0 and set(l.strip()) <= {"-", " "}]
    out = []
    for n, i in enumerate(rules):
        end = rules[n + 1] - 1 if n + 1 < len(rules) else len(lines)
        out.append(text_table(lines[i - 1:end]))
    return out


def section_table(text, prefix):
    for title, lines in sections(text).items():
        if title.startswith(prefix):
            return text_table(lines)
    raise AssertionError(f"no section '{prefix}' in the summary")


def findings(text):
    out = []
    for line in sections(text)["Findings"]:
        m = re.match(r"^ \[([\w-]+)\] (.*)$", line)
        if m:
            out.append({"id": m.group(1), "title": m.group(2)})
        elif line.startswith("     evidence: "):
            out[-1]["evidence"] = line[len("     evidence: "):]
        elif line.startswith("     try: "):
            out[-1]["advice"] = line[len("     try: "):]
    return out


def header(text):
    return text.split("\n\n== Findings ==")[0].split("\n==> ")[-1].split(" <==\n")[-1]


def kernel_ns(text):
    return sum(int(r[1].replace(",", "")) for r in section_table(text, "CUDA GPU Kernel Summary")[1])


class ReportPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(CHROMIUM, os.X_OK):
            harness.unavailable("chromium", f"{CHROMIUM} is not installed (scripts/setup-deps.sh installs Debian's)")
        cls.python = harness.need_venv("playwright")
        os.makedirs(ARTIFACTS, exist_ok=True)

    def probe(self, page, name):
        shot = os.path.join(ARTIFACTS, name + ".png")
        proc = subprocess.run([self.python, PROBE, page, shot],
                              capture_output=True, text=True, timeout=240, env=dict(os.environ, CHROMIUM=CHROMIUM))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        result = json.loads(proc.stdout)
        self.assertTrue(os.path.getsize(shot) > 10000, "screenshot")
        return result

    def check_page(self, page, summary, name):
        """Everything the page shows against the summary text of the same window."""
        r = self.probe(page, name)
        url = "file://" + os.path.abspath(page)
        self.assertEqual(r["errors"], [], "console errors")
        self.assertEqual(r["blocked"], [], "requests refused")
        self.assertEqual(r["requests"], [url], "the page asked for nothing but itself")
        self.assertEqual(r["header"], header(summary).rstrip("\n"))
        self.assertEqual([{k: f[k] for k in ("id", "title", "evidence", "advice")} for f in r["findings"]],
                         findings(summary))
        t = r["tables"]
        for table_id, prefix in (("table-kernels", "CUDA GPU Kernel Summary"), ("table-api", "CUDA API Summary"),
                                 ("table-mem-time", "GPU MemOps Summary by Time"),
                                 ("table-mem-size", "GPU MemOps Summary by Size")):
            head, rows = section_table(summary, prefix)
            if not rows:
                self.assertNotIn(table_id, t)
                continue
            self.assertEqual(t[table_id]["head"], head, table_id)
            self.assertEqual(t[table_id]["rows"], rows, table_id)
            self.assertEqual(t[table_id]["clipped"], [], f"{table_id}: names not shown whole")
        head, rows = section_table(summary, "Steps")
        if rows:
            self.assertEqual(t["table-steps"]["head"], head)
            self.assertEqual(t["table-steps"]["rows"], rows)
        if "no GPU timings" not in "\n".join(sections(summary).get(
                next(k for k in sections(summary) if k.startswith("Step time breakdown")), [])):
            head, rows = section_table(summary, "Step time breakdown")
            self.assertEqual(t["table-step-breakdown"]["head"], head)
            self.assertEqual(t["table-step-breakdown"]["rows"], rows)
            for row in rows:  # the categories add up to the wall time (to rounding)
                parts = [float(c.replace(",", "")) for c in row[2:]]
                self.assertAlmostEqual(sum(parts), float(row[1].replace(",", "")), delta=0.004 * len(parts))
            self.assertGreater(r["step_bars"], 0)
        tensor = sections(summary).get("Tensor memory (PyTorch's caching allocator)")
        if tensor:  # GPU 0's tables, told apart by their last column's title
            ids = {"Live at the peak, by Python line": "table-tensor-lines-0",
                   "Live at the peak, by module (allocated in the window)": "table-tensor-modules-0",
                   "Largest blocks live at the peak, allocated in the window": "table-tensor-largest-0"}
            for head, rows in text_tables(tensor):
                self.assertEqual(t[ids[head[-1]]]["head"], head)
                self.assertEqual(t[ids[head[-1]]]["rows"], rows)
        for table_id, prefix in (("table-operators", "GPU time by operator"), ("table-modules", "GPU time by module")):
            lines = next((v for k, v in sections(summary).items() if k.startswith(prefix)), None)
            if lines is None:
                self.assertNotIn(table_id, t)
                continue
            head, rows = text_table(lines)
            self.assertEqual(t[table_id]["head"], head, table_id)
            self.assertEqual(t[table_id]["rows"], rows, table_id)
            self.assertEqual(t[table_id]["clipped"], [], f"{table_id}: names not shown whole")
        head, rows = section_table(summary, "GPU idle between work on a stream")
        rows = [row for row in rows if row[0] != "all"]
        if rows:
            self.assertEqual(t["table-idle"]["head"], head)
            self.assertEqual(t["table-idle"]["rows"], rows)
        # Flame graphs: leaves add up to the total; the kernel one's is the window's kernel time.
        for kind, flame in r["flame"].items():
            self.assertEqual(flame["self_sum"], flame["total"], kind)
        self.assertEqual(r["flame"]["kernel"]["total"], kernel_ns(summary))
        if r["flame"]["kernel"]["total"]:
            self.assertIn("zoom", r)
            self.assertAlmostEqual(r["zoom"]["width"], r["zoom"]["box"], delta=2)
            self.assertEqual(r["zoom"]["focus_value"], r["zoom"]["value"])
            self.assertIn("call site", r.get("tooltip", ""))
        self.assertIn("open_trace_in_ui", r["perfetto"])
        return r

    def run_train_loop(self, out):
        """scripts/demo.sh's run, with folded stacks too."""
        env = harness.sim_env(PROF_FORMATS="chrome,summary,html,stacks")
        proc = harness.run([harness.PROF_TOOL, "run", "--step", "sync", "--wait", "5", "--warmup", "2", "--active", "5",
                            "--out", out, "--", workload("train_loop"), "--steps", "20"], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        pages = glob.glob(os.path.join(out, "*.report.html"))
        self.assertEqual(len(pages), 1, os.listdir(out))
        return pages[0][:-len(".report.html")]

    def test_demo_window(self):
        need(harness.LIBPROF_SO, harness.PROF_TOOL, workload("train_loop"))
        tmp = harness.scratch_dir(self, "libprof-report-")
        stem = self.run_train_loop(tmp)
        with open(stem + ".summary.txt") as f:
            summary = f.read()
        r = self.check_page(stem + ".report.html", summary, "demo")
        self.assertTrue(r["findings"], "the demo's loop triggers findings")
        self.assertGreater(r["flame"]["kernel"]["total"], 0)
        # `prof report` on the window's trace builds the same page.
        again = os.path.join(tmp, "again.report.html")
        proc = harness.run([harness.PROF_TOOL, "report", stem + ".pt.trace.json", "-o", again], harness.clean_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r2 = self.probe(again, "demo-from-trace")
        self.assertEqual(r2["tables"], r["tables"])
        self.assertEqual(r2["findings"], r["findings"])
        self.assertEqual(r2["flame"], r["flame"])
        # The folded stacks keep the format's rules and add up to the kernel time.
        self.check_stacks(stem + ".stacks.txt", kernel_ns(summary))

    def check_stacks(self, path, kernel_total):
        with open(path) as f:
            stacks = folded_stacks(f.read())
        self.assertEqual(sum(stacks.values()), kernel_total)

    def test_python_call_sites(self):
        model = workload("python_model.py")
        need(harness.LIBPROF_SO, harness.PROF_TOOL, model, workload("libctypes_workload.so"))
        run = run_agent([PYTHON, model], PROF_STEP="manual", PROF_WAIT="1", PROF_WARMUP="1", PROF_ACTIVE="3",
                        PROF_FORMATS="chrome,summary,html,stacks")
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        pages = glob.glob(os.path.join(run.out_dir, "*.report.html"))
        self.assertEqual(len(pages), 1, run.log_lines())
        stem = pages[0][:-len(".report.html")]
        with open(stem + ".summary.txt") as f:
            summary = f.read()
        r = self.check_page(pages[0], summary, "python-model")
        head, rows = section_table(summary, "GPU time by Python call site")
        self.assertTrue(any("python_model.py:" in row[-1] for row in rows), rows)
        self.assertEqual(r["tables"]["table-call-sites"]["head"], head)
        self.assertEqual(r["tables"]["table-call-sites"]["rows"], rows)
        # The kernel flame graph has the model's frames above the kernels.
        self.assertTrue(any(re.match(r"python_model\.py:\d+ in ", l) for l in r["flame"]["kernel"]["labels"]),
                        r["flame"]["kernel"]["labels"][:20])
        with open(stem + ".stacks.txt") as f:
            self.assertRegex(f.read(), r"(?m)^python_model\.py:\d+ in <module>;.*;__cudaLaunchKernel;\S.* \d+$")
        self.check_stacks(stem + ".stacks.txt", kernel_ns(summary))

    def test_merged_job(self):
        """Four ranks (copies of a real Kineto trace, each step ending in an
        all-reduce with Kineto's collective arguments; rank 2 arrives 100 ms
        late at each, rank 3's clock reads 1.5 ms late): `prof report` of
        `prof merge`'s output, and of the ranks' directory, shows the job
        summary prof merge wrote, its heat map and per-rank table hold the
        same numbers, and each rank's window has a tab."""
        need(harness.PROF_TOOL)
        source_path = os.path.join(harness.KINETO_TRACES or "/nonexistent", "sampled_rank0.pt.trace.json.gz")
        if not os.path.exists(source_path):
            self.skipTest("no Kineto traces (KINETO_TRACES)")
        with gzip.open(source_path, "rt") as f:
            source = json.load(f)
        steps = [e for e in source["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
        tmp = harness.scratch_dir(self, "libprof-report-job-")
        traces = os.path.join(tmp, "traces")
        os.makedirs(traces)
        for rank in range(4):
            trace = json.loads(json.dumps(source))
            trace["distributedInfo"].update(rank=rank, world_size=4)
            clock = 1500.0 if rank == 3 else 0.0
            for seq, step in enumerate(steps, 1):
                end = step["ts"] + step["dur"] - 1000.0
                start = end - (10000.0 if rank == 2 else 110000.0)
                trace["traceEvents"].append({
                    "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0,
                    "tid": 99, "ts": start, "dur": end - start,
                    "args": {"stream": 99, "correlation": 999990 + seq, "Collective name": "allreduce",
                             "In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 4, "dtype": "Float",
                             "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3]", "Seq": seq}})
            for e in trace["traceEvents"]:
                if "ts" in e:
                    e["ts"] += clock
            with open(os.path.join(traces, f"host_rank{rank}.551.pt.trace.json"), "w") as f:
                json.dump(trace, f)
        merged = os.path.join(tmp, "job.pt.trace.json")
        r = harness.run([harness.PROF_TOOL, "merge", traces, "-o", merged], harness.clean_env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(tmp, "job.summary.txt")) as f:
            job_summary = f.read()
        self.assertIn("straggler: rank 2", job_summary)
        for name, source_arg in (("job-merged", merged), ("job-dir", traces)):
            page = os.path.join(tmp, name + ".html")
            r = harness.run([harness.PROF_TOOL, "report", source_arg, "-o", page], harness.clean_env())
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            p = self.probe(page, name)
            self.assertEqual(p["errors"], [])
            self.assertEqual(p["requests"], ["file://" + os.path.abspath(page)])
            job = p["job"]
            self.assertIsNotNone(job, name)
            self.assertEqual(job["text"], job_summary, name)
            lines = job_summary.split("\n")
            straggler = next(l for l in lines if l.startswith("straggler:"))
            self.assertEqual(job["straggler"], straggler)
            self.assertEqual(len(job["tabs"]), 4)
            self.assertGreater(job["bars"], 0)
            # The heat map: each rank's step times, as the per-step table says.
            per_step = text_table(job_summary.split("Per step and rank")[1].split("\n", 1)[1].split("\n\n")[0].split("\n"))[1]
            heat = p["tables"]["job-heatmap"]
            self.assertEqual(heat["head"][1:], sorted({row[0] for row in per_step}, key=int))
            for row in per_step:
                step, rank, step_time = row[0], row[1], row[2]
                cells = next(r for r in heat["rows"] if r[0] == rank)
                self.assertEqual(cells[1 + heat["head"][1:].index(step)], step_time, row)
            per_rank = text_table(job_summary.split("Per rank (mean per step, ms):\n")[1].split("\n\n")[0].split("\n"))
            self.assertEqual(p["tables"]["table-job-ranks"]["head"], per_rank[0])
            self.assertEqual(p["tables"]["table-job-ranks"]["rows"], per_rank[1])

    def test_kineto_traces(self):
        need(harness.PROF_TOOL)
        traces = sorted(glob.glob(os.path.join(harness.KINETO_TRACES or "/nonexistent", "*.pt.trace.json.gz")))
        if not traces:
            self.skipTest("no Kineto traces (KINETO_TRACES)")
        tmp = harness.scratch_dir(self, "libprof-report-kineto-")
        for trace in traces:
            name = os.path.basename(trace).split(".")[0]
            with self.subTest(trace=name):
                page = os.path.join(tmp, name + ".report.html")
                proc = harness.run([harness.PROF_TOOL, "report", trace, "-o", page], harness.clean_env())
                self.assertEqual(proc.returncode, 0, proc.stderr)
                # Small: aggregated and downsampled, never the trace itself.
                self.assertLess(os.path.getsize(page), 4 << 20)
                summary = harness.run([harness.PROF_TOOL, "summary", trace], harness.clean_env()).stdout
                self.check_page(page, summary, "kineto-" + name)
                stacks = os.path.join(tmp, name + ".stacks.txt")
                proc = harness.run([harness.PROF_TOOL, "report", "--stacks", trace, "-o", stacks], harness.clean_env())
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.check_stacks(stacks, kernel_ns(summary))


    def test_tensor_memory(self):
        """A Kineto trace with profile_memory's [memory] events (added here to
        one of the real traces, in its first step, each with a Python line):
        the page's tensor tables are the summary's."""
        need(harness.PROF_TOOL)
        traces = sorted(glob.glob(os.path.join(harness.KINETO_TRACES or "/nonexistent", "*.pt.trace.json.gz")))
        if not traces:
            self.skipTest("no Kineto traces (KINETO_TRACES)")
        with gzip.open(traces[0], "rt") as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        step = min((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
        pid, tid = step["pid"], step["tid"]
        total, live = 5 << 20, []
        for i in range(40):  # blocks of 512 B to 20 KiB; every third freed again
            size = 512 * (1 + i % 40)
            total += size
            live.append((0x7f0000000000 + i * 0x10000, size))
            events.append(memory_event(pid, tid, step["ts"] + i * step["dur"] / 50, live[-1][0], size, total,
                                       f"model.py:{10 + i % 4} in forward"))
            peak = total
            if i % 3 == 2:
                addr, freed = live.pop(0)
                total -= freed
                events.append(memory_event(pid, tid, step["ts"] + (i + 0.5) * step["dur"] / 50, addr, -freed, total, None))
        tmp = harness.scratch_dir(self, "libprof-report-tensors-")
        path = os.path.join(tmp, "memory.pt.trace.json")
        with open(path, "w") as f:
            json.dump(trace, f)
        page = os.path.join(tmp, "memory.report.html")
        proc = harness.run([harness.PROF_TOOL, "report", path, "-o", page], harness.clean_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        summary = harness.run([harness.PROF_TOOL, "summary", path], harness.clean_env()).stdout
        self.assertIn(f"allocated ({peak} bytes)", summary)
        tensor = sections(summary)["Tensor memory (PyTorch's caching allocator)"]
        self.assertIn("model.py:10 in forward", "\n".join(tensor))
        r = self.check_page(page, summary, "tensor-memory")
        self.assertIn("table-tensor-lines-0", r["tables"])


def memory_event(pid, tid, ts, addr, size, total, line):
    args = {"Addr": addr, "Bytes": size, "Total Allocated": total, "Total Reserved": 32 << 20, "Device Id": 0,
            "Device Type": 1}
    if line:
        args["Python line"] = line
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid, "tid": tid, "ts": ts,
            "args": args}


class FoldedStacksRules(unittest.TestCase):
    """The format check above rejects each way a line can break the rules."""

    def test_folded_stacks_rules_reject_what_breaks_them(self):
        good = "a.py:1 in f;cudaLaunchKernel;k(float*) 12\nb;cudaMemcpy;k2 3\n"
        self.assertEqual(folded_stacks(good), {"a.py:1 in f;cudaLaunchKernel;k(float*)": 12, "b;cudaMemcpy;k2": 3})
        for bad in ("a;;k 3\n", ";a;k 3\n", "a;k; 3\n", "a;k 0\n", "a;k -3\n", "a;k 1.5\n", "a;k 03\n",
                    "a;k\n", "a;k 3", "a;k 3\na;k 4\n", "a; k 3\n", "\n", "a;k 3\r\n", "a;k 3\n\n"):
            with self.subTest(bad=bad), self.assertRaises(AssertionError):
                folded_stacks(bad)


if __name__ == "__main__":
    harness.main()
