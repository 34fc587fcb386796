"""The facts each rank writes beside its window (<stem>.job.json) give the
same job summary as the traces do: a four-rank data-parallel job on the
simulated stack (test/workloads ddp_train, started as torchrun starts it,
each rank in a directory of its own, LD_PRELOAD=libprof.so, no PROF_*
variable: the default window), rank 2 held 60 ms a step on the host.

  - every rank writes one facts file beside its one trace, a small fraction
    of its size; a process without a rank writes none;
  - `prof merge --summary-only` of the facts prints, byte for byte, the job
    summary `prof merge` writes beside the merged trace, and the one
    `--summary-only` computes from the traces alone; it names rank 2;
  - the same holds for sixteen ranks made of copies of the four, each copy's
    clock moved by its own offset (test/integration/job_copies.py);
  - `prof merge --ranks 2,3` writes the timeline of those two ranks and the
    job summary of all four;
  - a facts file that is not one is named in a one-line error, exit 1."""
import glob
import json
import os
import shutil
import subprocess
import unittest

import harness
import job_copies
import multirank

DDP = os.path.join(harness.WORKLOAD_DIR, "ddp_train")
LOOP = os.path.join(harness.WORKLOAD_DIR, "train_loop")
WORLD = 4
KERNEL_NS = "forward_layer=500000,backward_layer=500000"


def summary_only(*inputs):
    return subprocess.run([harness.PROF_TOOL, "merge", "--summary-only", *inputs], capture_output=True, text=True,
                          timeout=240)


class JobFacts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, harness.PROF_TOOL, DDP)

    def run_job(self):
        """[(trace, facts)] of ranks 0-3, each rank run in a directory of its own."""
        tmp = harness.scratch_dir(self, "libprof-job-facts-")
        hosts = [os.path.join(tmp, f"host{r}") for r in range(WORLD)]
        for h in hosts:
            os.makedirs(h)
        env = harness.sim_env(SIM_NCCL_TIMEOUT_MS=120000, SIM_KERNEL_NS=KERNEL_NS, LD_PRELOAD=harness.LIBPROF_SO)
        env.pop("NCCL_PROFILER_PLUGIN", None)
        results = multirank.launch([DDP, "--steps", "40"], WORLD, env, timeout=240, cwd=lambda r: hosts[r],
                                   per_rank=lambda r: {"WORKLOAD_SLOW_RANK": 2, "WORKLOAD_SLOW_US": 60000})
        ranks = []
        for r, (res, h) in enumerate(zip(results, hosts)):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
            traces = glob.glob(os.path.join(h, "prof-traces", "*.pt.trace.json"))
            facts = glob.glob(os.path.join(h, "prof-traces", "*.job.json"))
            self.assertEqual(len(traces), 1, f"rank {r}: {traces}")
            self.assertEqual(facts, [traces[0].replace(".pt.trace.json", ".job.json")], f"rank {r}")
            self.assertIn(os.path.basename(facts[0]), res.stderr, "the log names the file")
            self.assertLess(os.path.getsize(facts[0]), os.path.getsize(traces[0]) / 10)
            ranks.append((traces[0], facts[0]))
        return tmp, ranks

    def same_summaries(self, traces_dir, facts_dir, world):
        """The job summary from the facts, from the traces alone, and beside
        the merged trace are the same text; returns it."""
        from_facts = summary_only(facts_dir)
        self.assertEqual(from_facts.returncode, 0, from_facts.stderr)
        self.assertTrue(from_facts.stdout.startswith(f"Job: {world} ranks"), from_facts.stdout[:300])
        from_traces = summary_only(traces_dir)
        self.assertEqual(from_traces.returncode, 0, from_traces.stderr)
        self.assertEqual(from_facts.stdout, from_traces.stdout)
        merged = os.path.join(os.path.dirname(traces_dir), "merged.pt.trace.json")
        r = subprocess.run([harness.PROF_TOOL, "merge", traces_dir, "-o", merged], capture_output=True, text=True,
                           timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(merged.replace(".pt.trace.json", ".summary.txt")) as f:
            self.assertEqual(f.read(), from_facts.stdout)
        return from_facts.stdout

    def test_facts_give_the_traces_job_summary_for_four_ranks_and_sixteen(self):
        tmp, ranks = self.run_job()
        traces_dir, facts_dir = os.path.join(tmp, "traces"), os.path.join(tmp, "facts")
        os.makedirs(traces_dir)
        os.makedirs(facts_dir)
        for trace, facts in ranks:
            shutil.copy(trace, traces_dir)
            shutil.copy(facts, facts_dir)
        text = self.same_summaries(traces_dir, facts_dir, WORLD)
        self.assertIn("straggler: rank 2:", text)
        # Traces and facts side by side: a directory stands for the facts.
        both = os.path.join(tmp, "both")
        shutil.copytree(traces_dir, both)
        for f in glob.glob(os.path.join(facts_dir, "*")):
            shutil.copy(f, both)
        self.assertEqual(summary_only(both).stdout, text)
        # Sixteen ranks, copies of the four, each clock moved.
        job16 = os.path.join(tmp, "job16")
        job_copies.make_job(ranks, job16, 16)
        traces16, facts16 = os.path.join(tmp, "traces16"), os.path.join(tmp, "facts16")
        os.makedirs(traces16)
        os.makedirs(facts16)
        for f in glob.glob(os.path.join(job16, "*")):
            shutil.move(f, facts16 if f.endswith(".job.json") else traces16)
        text16 = self.same_summaries(traces16, facts16, 16)
        self.assertIn("Clocks: aligned to rank 0", text16)

    def test_the_timeline_of_the_ranks_asked_for_and_the_summary_of_all(self):
        tmp, ranks = self.run_job()
        merged = os.path.join(tmp, "two.pt.trace.json")
        r = subprocess.run([harness.PROF_TOOL, "merge", *(t for t, _ in ranks), "-o", merged, "--ranks", "2,3"],
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Job: 4 ranks", r.stdout)
        self.assertIn("straggler: rank 2:", r.stdout)
        with open(merged) as f:
            trace = json.load(f)
        self.assertEqual([i["rank"] for i in trace["libprof_merge"]["inputs"]], [2, 3])
        self.assertEqual(trace["distributedInfo"]["ranks"], [2, 3])
        labels = {e["args"]["labels"] for e in trace["traceEvents"] if e.get("name") == "process_labels"
                  and e["args"]["labels"].startswith("rank ")}
        self.assertEqual(labels, {"rank 2", "rank 3"})
        self.assertEqual(subprocess.run([harness.PROF_TOOL, "validate", merged], capture_output=True).returncode, 0)
        r = subprocess.run([harness.PROF_TOOL, "merge", *(t for t, _ in ranks), "-o", merged, "--ranks", "9"],
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip().splitlines(), ["prof merge: --ranks: no input is rank 9"])

    def test_a_process_without_a_rank_writes_no_facts(self):
        harness.need(LOOP)
        out = harness.scratch_dir(self, "libprof-job-facts-single-")
        env = harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out)
        proc = harness.run([LOOP, "--steps", "30"], env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(glob.glob(os.path.join(out, "*.pt.trace.json")))
        self.assertEqual(glob.glob(os.path.join(out, "*.job.json")), [])

    def test_a_file_that_is_not_facts_is_named_in_one_line(self):
        tmp = harness.scratch_dir(self, "libprof-job-facts-bad-")
        bad = os.path.join(tmp, "x.job.json")
        for text in ("{not json", '{"libprof_job_facts": 3}', '{"libprof_job_facts": 1, "rank": 0, "names": [""], '
                     '"steps": [[1, 2, 3]], "collectives": []}'):
            with open(bad, "w") as f:
                f.write(text)
            r = summary_only(bad)
            self.assertEqual(r.returncode, 1, text)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(bad, r.stderr)
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    harness.main()
