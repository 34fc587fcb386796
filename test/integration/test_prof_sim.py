"""`prof run` on the simulated stack's train_loop: the windows DESIGN.md
promises appear (named by first step, valid traces, summaries), the exit
status is the workload's, the summary's numbers equal those computed from
the simulator's truth log, and each finding fires on a loop built to trigger
it and stays silent otherwise."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

TRAIN_LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
# --step sync: each cudaStreamSynchronize (one per loop iteration) ends a
# step, so step k >= 1 is loop iteration k. wait 2, warmup 1, active 3,
# repeat 2: windows hold steps 3-5 and 9-11.
SCHEDULE = ["--step", "sync", "--skip-first", "0", "--wait", "2", "--warmup", "1", "--active", "3", "--repeat", "2"]
WINDOWS = {3: (3, 5), 9: (9, 11)}
COPY_OPS = {truth.HTOD: "[CUDA memcpy Host-to-Device]", truth.DTOH: "[CUDA memcpy Device-to-Host]",
            truth.DTOD: "[CUDA memcpy Device-to-Device]"}


table = harness.summary_table


def number(cell):
    return float(cell.replace(",", ""))


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    return dict(zip(names, out))


class ProfRunOnSim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(TRAIN_LOOP, harness.LIBPROF_SO, harness.PROF_TOOL)

    def run_loop(self, *flags, steps=13, schedule=SCHEDULE, **env):
        tmp = tempfile.mkdtemp(prefix="libprof-sim-")
        out = os.path.join(tmp, "out")
        truth_path = os.path.join(tmp, "truth.jsonl")
        cmd = [harness.PROF_TOOL, "run", "-q", *schedule, "--out", out, "--name", "train", "--",
               TRAIN_LOOP, "--steps", str(steps), *flags]
        proc = harness.run(cmd, harness.sim_env(SIM_TRUTH_FILE=truth_path, **env), timeout=240)
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        return proc, out, truth.read(truth_path)

    def summary(self, out, first_step):
        with open(os.path.join(out, f"train.{first_step}.summary.txt")) as f:
            return f.read()

    def iteration_bounds(self, lines):
        """Sim-clock end of each loop iteration: its cudaStreamSynchronize return."""
        syncs = sorted(truth.api(lines, "cudaStreamSynchronize", "runtime"), key=lambda l: l["start_ns"])
        return [s["end_ns"] for s in syncs]

    def ops_in(self, lines, first, last, *types):
        """Truth ops launched during loop iterations first..last."""
        ends = self.iteration_bounds(lines)
        lo, hi = ends[first - 1], ends[last]
        return [o for o in truth.of_type(lines, *types) if lo < o["launch_ns"] <= hi]

    def findings(self, out, first_step=3):
        return set(re.findall(r"^ \[([a-z0-9-]+)\]", self.summary(out, first_step), re.M))

    def test_windows_appear_as_promised_and_validate(self):
        proc, out, _ = self.run_loop(steps=13)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(sum(1 for l in proc.stdout.splitlines() if l.startswith("train step")), 13)
        names = sorted(os.listdir(out))
        self.assertEqual(names, ["train.3.pt.trace.json", "train.3.report.html", "train.3.summary.txt",
                                 "train.9.pt.trace.json", "train.9.report.html", "train.9.summary.txt"],
                         "exactly the promised files")
        traces = [os.path.join(out, n) for n in names if n.endswith(".json")]
        r = subprocess.run([harness.PROF_TOOL, "validate", *traces], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        for first, (lo, hi) in WINDOWS.items():
            steps = [int(row[0]) for row in table(self.summary(out, first), "Steps")]
            self.assertEqual(steps, list(range(lo, hi + 1)))

    def test_exit_status_is_the_workloads(self):
        proc, _, _ = self.run_loop("--exit-code", "5", steps=4)
        self.assertEqual(proc.returncode, 5, proc.stderr)

    def test_summary_numbers_equal_the_truth_log(self):
        proc, out, lines = self.run_loop("--alloc-in-loop", steps=13)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for first, (lo, hi) in WINDOWS.items():
            text = self.summary(out, first)
            kernels = self.ops_in(lines, lo, hi, "kernel")
            self.assertTrue(kernels)
            names = demangle(sorted({k["name"] for k in kernels}))
            want = {}
            for k in kernels:
                count, total = want.get(names[k["name"]], (0, 0))
                # On the clock CUPTI reports (the agent's): the sim's map to it
                # is linear with a measured rate, so a duration there can
                # differ by a rounding from the sim clock's.
                want[names[k["name"]]] = (count + 1, total + k["end_rep_ns"] - k["start_rep_ns"])
            got = {row[-1]: (int(number(row[2])), int(number(row[1]))) for row in
                   table(text, "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)")}
            self.assertEqual(got, want, f"window {first}: kernel instances and total ns per name")
            for row in table(text, "CUDA GPU Kernel Summary (cuda_gpu_kern_sum)"):
                count, total = want[row[-1]]
                self.assertAlmostEqual(number(row[3]), total / count, delta=0.05)  # Avg (ns)

            copies = {}
            for c in self.ops_in(lines, lo, hi, "memcpy"):
                op = COPY_OPS[c["copy_kind"]]
                n, b = copies.get(op, (0, 0))
                copies[op] = (n + 1, b + c["bytes"])
            got = {row[-1]: (int(number(row[1])), row[0]) for row in
                   table(text, "GPU MemOps Summary by Size (cuda_gpu_mem_size_sum)") if "memcpy" in row[-1]}
            self.assertEqual(got, {op: (n, f"{b / 1e6:,.3f}") for op, (n, b) in copies.items()},
                             f"window {first}: copies and MB per direction")

            # Peak device memory: the running total over every allocation
            # and free so far, at its highest during the window.
            ends = self.iteration_bounds(lines)
            total, peak = 0, 0
            for m in sorted(truth.of_type(lines, "mem_alloc", "mem_free"), key=lambda m: m["start_ns"]):
                if m["dst_kind"] != truth.DEVICE:
                    continue
                total += m["bytes"] if m["type"] == "mem_alloc" else -m["bytes"]
                if ends[lo - 1] < m["start_ns"] <= ends[hi]:
                    peak = max(peak, total)
            rows = [r for r in table(text, "Memory (allocator calls)") if r[0] == "0" and r[1] == "device"]
            self.assertEqual(len(rows), 1, text)
            self.assertEqual(int(number(rows[0][6])), peak, f"window {first}: peak live device bytes")

    def test_prof_summary_recomputes_the_agents_summary(self):
        proc, out, _ = self.run_loop(steps=13)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        r = subprocess.run([harness.PROF_TOOL, "summary", os.path.join(out, "train.3.pt.trace.json")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        recomputed = r.stdout.split("\n", 1)[1]  # after the "==> file <==" line
        self.assertEqual(recomputed, self.summary(out, 3))

    def test_four_ranks_merge_into_one_valid_timeline_keeping_every_event(self):
        schedule = ["--step", "sync", "--wait", "1", "--warmup", "1", "--active", "2", "--repeat", "1"]
        tmp = tempfile.mkdtemp(prefix="libprof-ranks-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        procs = [subprocess.Popen([harness.PROF_TOOL, "run", "-q", *schedule, "--out", tmp, "--name", "train", "--",
                                   TRAIN_LOOP, "--steps", "5"], env=harness.sim_env(RANK=rank, WORLD_SIZE=4),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for rank in range(4)]
        for p in procs:
            _, err = p.communicate(timeout=240)
            self.assertEqual(p.returncode, 0, err)
        traces = [os.path.join(tmp, f"train_rank{r}.2.pt.trace.json") for r in range(4)]
        total = 0
        for t in traces:
            self.assertTrue(os.path.exists(t), sorted(os.listdir(tmp)))
            with open(t) as f:
                total += len(json.load(f)["traceEvents"])
        merged = os.path.join(tmp, "merged.json")
        r = subprocess.run([harness.PROF_TOOL, "merge", *traces, "-o", merged], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(merged) as f:
            events = json.load(f)["traceEvents"]
        labels = [e for e in events if e.get("name") == "process_labels" and
                  str(e.get("args", {}).get("labels", "")).startswith("rank ")]
        self.assertEqual(len(events), total + len(labels))
        self.assertEqual({l["args"]["labels"] for l in labels}, {f"rank {r}" for r in range(4)})
        r = subprocess.run([harness.PROF_TOOL, "summary", merged], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4 windows compared", r.stdout)

    def test_findings_fire_on_the_loop_built_for_them_and_not_otherwise(self):
        _, plain, _ = self.run_loop(steps=13)
        quiet = self.findings(plain)
        for flags, finding in ((["--alloc-in-loop"], "allocator-churn"), (["--d2h-mid-step"], "d2h-copy-in-step"),
                               (["--pageable"], "pageable-copy")):
            with self.subTest(finding=finding):
                self.assertNotIn(finding, quiet)
                proc, out, _ = self.run_loop(*flags, steps=13)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn(finding, self.findings(out), self.summary(out, 3))
        self.assertNotIn("sync-in-step", quiet, "the step-marking synchronize is not a finding")
        self.assertNotIn("data-loss", quiet)

    def test_overhead_bound_and_compute_bound_tell_tiny_kernels_from_long_ones(self):
        # A thousand 500 ns kernels a step, launched back to back: each launch
        # call outlasts the kernel before it, so every kernel waits for its
        # launch (the host's per-step work outside CUDA is a small part).
        _, tiny, _ = self.run_loop("--tiny", "--kernels-per-step", "1000", steps=13, SIM_KERNEL_NS="tiny_kernel=500")
        # Tiny kernels, then 200 ms a step of host work outside CUDA: the GPU
        # idles for that work, not for launches (the demo's shape). On a
        # loaded machine the 2 us kernels outrun their launches (18 ms of
        # launch waits in 3 steps measured beside busy loops), which is still
        # a trifle next to the host's 600 ms.
        _, elsewhere, _ = self.run_loop("--tiny", "--host-sleep-us", "200000", steps=13)
        # Every kernel takes 50 ms: the GPU is busy (even if a loaded CI host wakes late).
        long_ns = ",".join(f"{k}=50000000" for k in ("gemm_tile", "scale_inplace", "relu_forward", "optimizer_step"))
        _, heavy, _ = self.run_loop(steps=13, SIM_KERNEL_NS=long_ns)
        self.assertIn("overhead-bound", self.findings(tiny), self.summary(tiny, 3))
        self.assertNotIn("compute-bound", self.findings(tiny))
        self.assertNotIn("overhead-bound", self.findings(elsewhere), self.summary(elsewhere, 3))
        self.assertIn("idle-gaps", self.findings(elsewhere), self.summary(elsewhere, 3))
        self.assertIn("compute-bound", self.findings(heavy), self.summary(heavy, 3))
        self.assertNotIn("overhead-bound", self.findings(heavy))


if __name__ == "__main__":
    harness.main()
