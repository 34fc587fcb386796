"""Holistic Trace Analysis reads libprof's multi-rank traces as `prof merge`
does: a four-rank data-parallel job on the simulated stack (test/workloads
ddp_train, started as torchrun starts it, each rank in a directory of its
own, LD_PRELOAD=libprof.so, no PROF_* variable: the default window) is
checked by scripts/hta-overlap-check.py, run under the tests' venv where HTA
is installed from PyPI: per rank, HTA's get_comm_comp_overlap and the
"Comm overlapped (%)" column of prof merge's job summary agree within 1
percentage point.

The figures are not trivial ones: each step's four bucketed all-reduces run
on a second stream beside 500 us backward kernels, so about three quarters of
the communication time is overlapped (less on a rank that waited for another
the scheduler held up, on a loaded machine); with rank 2 held 60 ms a step on
the host, the other ranks spend their all-reduces waiting with nothing to
compute (a few percent overlapped) while rank 2 keeps its three quarters.

Without the venv's HTA the test skips saying why (it fails under CI=true)."""
import glob
import os
import re
import shutil
import subprocess
import unittest

import harness
import multirank

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "hta-overlap-check.py")
DDP = os.path.join(harness.WORKLOAD_DIR, "ddp_train")
WORLD = 4
KERNEL_NS = "forward_layer=500000,backward_layer=500000"


class HtaOverlap(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, harness.PROF_TOOL, DDP)
        cls.python = harness.need_venv("hta.trace_analysis")

    def run_job(self, slow_rank=-1):
        """The four ranks' windows, copied into one directory."""
        tmp = harness.scratch_dir(self, "libprof-hta-overlap-")
        hosts = [os.path.join(tmp, f"host{r}") for r in range(WORLD)]
        for h in hosts:
            os.makedirs(h)
        env = harness.sim_env(SIM_NCCL_TIMEOUT_MS=120000, SIM_KERNEL_NS=KERNEL_NS, LD_PRELOAD=harness.LIBPROF_SO)
        env.pop("NCCL_PROFILER_PLUGIN", None)
        per_rank = lambda r: {"WORKLOAD_SLOW_RANK": slow_rank, "WORKLOAD_SLOW_US": 60000}
        results = multirank.launch([DDP, "--steps", "40", "--bucket-elems", "262144"], WORLD, env, timeout=240,
                                   per_rank=per_rank, cwd=lambda r: hosts[r])
        traces = os.path.join(tmp, "traces")
        os.makedirs(traces)
        for r, (res, h) in enumerate(zip(results, hosts)):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
            files = glob.glob(os.path.join(h, "prof-traces", "*.pt.trace.json"))
            self.assertEqual(len(files), 1, f"rank {r}: {files}")
            shutil.copy(files[0], traces)
        return traces

    def overlap(self, traces):
        """{rank: (libprof %, HTA %)} as the check printed them; asserts that it passed."""
        proc = subprocess.run([self.python, CHECK, traces, "--prof", harness.PROF_TOOL, "--tolerance", "1.0"],
                              capture_output=True, text=True, timeout=240, env=harness.clean_env())
        print(proc.stdout)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr[-3000:])
        rows = {}
        for line in proc.stdout.splitlines():
            m = re.match(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+ok$", line)
            if m:
                rows[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
        self.assertEqual(sorted(rows), list(range(WORLD)), proc.stdout)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "agree")
        return rows

    def test_every_rank_of_a_balanced_job_agrees(self):
        rows = self.overlap(self.run_job())
        for rank, (ours, theirs) in rows.items():
            # Not a trivial agreement: each rank overlaps a good part (three
            # quarters on a quiet machine; measured down to 30 % beside two
            # busy loops, when the scheduler holds ranks up).
            self.assertGreater(ours, 10.0, f"rank {rank}: {rows}")
            self.assertLessEqual(abs(ours - theirs), 1.0, f"rank {rank}")

    def test_a_slowed_rank_keeps_its_overlap_and_the_others_lose_theirs(self):
        rows = self.overlap(self.run_job(slow_rank=2))
        # Rank 2 keeps most of its overlap (three quarters on a quiet
        # machine, 65 % measured beside busy loops); the others, waiting for
        # it with nothing to compute, keep a few percent.
        self.assertGreater(rows[2][0], 40.0, str(rows))
        for rank in (0, 1, 3):
            self.assertLess(rows[rank][0], 20.0, f"rank {rank}: {rows}")
        for rank, (ours, theirs) in rows.items():
            self.assertLessEqual(abs(ours - theirs), 1.0, f"rank {rank}")


if __name__ == "__main__":
    harness.main()
