"""Collectives in libprof's traces and summaries, on the simulated NCCL
with several real rank processes (torchrun's variables): under LD_PRELOAD
and CUDA_INJECTION64_PATH, with NCCL as a shared library (the wrappers)
and linked into the program (the profiler plugin, interfaces v6, v5 and
v4), every NCCL kernel in a window carries Kineto's collective args equal
to the sim's truth, each call
appears once (never counted twice when wrappers and plugin both apply),
distributedInfo names the rank as HTA reads it, and the summary's
collectives table and bandwidths equal what the truth gives. `prof summary`
of a rank's saved trace, and of the ranks' traces merged, prints the same
collectives table and GPU time split as the live summary."""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sim"))
import harness  # noqa: E402
import multirank  # noqa: E402
import sim_truth  # noqa: E402

DDP = os.path.join(harness.WORKLOAD_DIR, "ddp_train")
DDP_STATIC = os.path.join(harness.WORKLOAD_DIR, "ddp_train_static")
WORLD = 2
BUCKET_ELEMS = 65536
# HTA's rank pattern (hta/common/trace_file.py).
HTA_RANK = re.compile(r'"rank":\s+(\d+)')


def nccl_sections(summary):
    """(the GPU time split line, the NCCL collectives table) of a summary."""
    split = re.search(r"^GPU time: compute .*$", summary, re.M)
    table = re.search(r"^== NCCL collectives .*?(?=^== |\Z)", summary, re.M | re.S)
    return (split.group(0) if split else None, table.group(0).strip() if table else "")


class AgentNcclTest(unittest.TestCase):
    def run_job(self, mode, program, **extra):
        tmp = harness.scratch_dir(self, "agentnccl-")
        out = os.path.join(tmp, "traces")
        truth = os.path.join(tmp, "truth.jsonl")
        # PROF_STEP=auto numbers a rank's steps by the job's iteration once it
        # found the loop (8 to 25 iterations, docs/multi-rank.md): a window
        # earlier than the default PROF_WAIT puts it can be past before then.
        # Steps of a few ms: auto decides on libprof's own thread, which a
        # loaded machine may not run before a job of 40 tiny steps is over.
        env = harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth, PROF_WAIT=30, PROF_ACTIVE=4,
                              PROF_LOG_LEVEL="warn", SIM_NCCL_TIMEOUT_MS=60000,
                              SIM_KERNEL_NS="forward_layer=250000,backward_layer=250000", **extra)
        env.pop("NCCL_PROFILER_PLUGIN", None)  # libprof offers itself
        env[mode] = harness.LIBPROF_SO
        results = multirank.launch([program, "--steps", "40", "--bucket-elems", str(BUCKET_ELEMS)], WORLD, env)
        for r, res in enumerate(results):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
            self.assertIn(f"rank {r} of {WORLD}: done steps=40", res.stdout)
        return out, sim_truth.read(truth)

    def check_job(self, out, lines, source, version="2.28.9"):
        truth = [l for l in lines if l["type"] == "nccl"]
        seqs_by_rank = []
        for rank in range(WORLD):
            traces = glob.glob(os.path.join(out, f"*_rank{rank}.*.pt.trace.json"))
            self.assertEqual(len(traces), 1, os.listdir(out))
            with open(traces[0]) as f:
                text = f.read()
            m = HTA_RANK.search(text)
            self.assertIsNotNone(m, "HTA would not find the rank")
            self.assertEqual(int(m.group(1)), rank)
            trace = json.loads(text)
            info = trace["distributedInfo"]
            self.assertEqual((info["backend"], info["rank"], info["world_size"], info["nccl_version"]),
                             ("nccl", rank, WORLD, version))
            self.assertEqual(info["pg_count"], 1)
            pg = info["pg_config"][0]
            self.assertEqual((pg["pg_size"], pg["ranks"]), (WORLD, list(range(WORLD))))
            events = trace["traceEvents"]
            kernels = [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("ncclDevKernel")]
            calls = [e for e in events if e.get("cat") == "cpu_op" and e["name"].startswith("nccl")]
            self.assertGreater(len(kernels), 0)
            # One call per kernel, each once: never counted twice.
            self.assertEqual(len(calls), len(kernels))
            self.assertEqual(len({c["args"]["Seq"] for c in calls}), len(calls))
            self.assertTrue(all(c["args"]["source"] == source for c in calls), {c["args"]["source"] for c in calls})
            mine = {l["seq"]: l for l in truth if l["rank"] == rank}
            for k in kernels:
                a = k["args"]
                t = mine[a["Seq"]]
                self.assertEqual(a["Collective name"], {"AllReduce": "allreduce", "Broadcast": "broadcast"}[t["coll"]])
                self.assertEqual((a["In msg nelems"], a["Out msg nelems"]), (t["count"], t["count"]))
                self.assertEqual((a["dtype"], a["Group size"]), ("Float", WORLD))
                self.assertEqual(a["Process Group Name"], pg["pg_name"])
                self.assertEqual(a["Process Group Ranks"], "[0, 1]")
                self.assertEqual(k["name"], t["kernel"])
                # The kernel's duration is the truth's (its wait included), to the ns the trace keeps
                # (a slice clipped to an overlapping one on its track keeps it in "unclipped dur"), and
                # to the rate of libprof's clock (CLOCK_MONOTONIC, which NTP may slew by up to 500 ppm)
                # against the sim's (CLOCK_MONOTONIC_RAW).
                dur = a.get("unclipped dur", k["dur"])
                true_us = (t["end_ns"] - t["start_ns"]) / 1000
                self.assertAlmostEqual(dur, true_us, delta=0.005 + 5e-4 * true_us, msg=(k, t))
            # Every rank's window holds collectives the truth says this rank ran.
            self.assertTrue(all(k["args"]["Seq"] in mine for k in kernels))
            seqs_by_rank.append(sorted(k["args"]["Seq"] for k in kernels))
            # The summary's collectives table, from the same kernels.
            summaries = glob.glob(os.path.join(out, f"*_rank{rank}.*.summary.txt"))
            with open(summaries[0]) as f:
                summary = f.read()
            seqs = [k["args"]["Seq"] for k in kernels if k["args"]["Collective name"] == "allreduce"]
            durs = [mine[s]["end_ns"] - mine[s]["start_ns"] for s in seqs]
            s_bytes = BUCKET_ELEMS * 4
            busbw = s_bytes * (2 * (WORLD - 1) / WORLD) / (sum(durs) / len(durs))
            row = re.search(r"^\s+([\d,]+)\s+(\d+)\s+([\d,.]+)\s+([\d,]+)\s+(\d+)\s+([\d,.]+)\s+([\d,.]+)\s+AllReduce$",
                            summary, re.M)
            self.assertIsNotNone(row, summary)
            self.assertEqual(int(row.group(2)), len(seqs))
            self.assertEqual(int(row.group(4).replace(",", "")), s_bytes)
            self.assertEqual(int(row.group(5)), WORLD)
            self.assertAlmostEqual(float(row.group(7).replace(",", "")), busbw, delta=busbw * 0.01 + 0.001)
            split = re.search(r"GPU time: compute ([\d.]+)%, communication ([\d.]+)%, overlapped ([\d.]+)%, idle ([\d.]+)%",
                              summary)
            self.assertIsNotNone(split, summary)
            self.assertAlmostEqual(sum(float(x) for x in split.groups()), 100.0, delta=0.5)
        # The same collectives, by Seq, in every rank's window.
        self.assertTrue(all(s == seqs_by_rank[0] for s in seqs_by_rank), seqs_by_rank)
        self.check_saved_summaries(out)

    def check_saved_summaries(self, out):
        """`prof summary` of each rank's trace, and of their merge, has the
        live summary's collectives table and GPU time split (which
        check_job compared with the truth)."""
        live, traces = {}, []
        for rank in range(WORLD):
            traces += glob.glob(os.path.join(out, f"*_rank{rank}.*.pt.trace.json"))
            with open(glob.glob(os.path.join(out, f"*_rank{rank}.*.summary.txt"))[0]) as f:
                live[rank] = nccl_sections(f.read())
            self.assertIsNotNone(live[rank][0])
            self.assertIn("AllReduce", live[rank][1])
        for rank, trace in enumerate(traces):
            r = subprocess.run([harness.PROF_TOOL, "summary", trace], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(nccl_sections(r.stdout), live[rank], f"rank {rank}: prof summary of {trace}")
        merged = os.path.join(out, "job.pt.trace.json")
        r = subprocess.run([harness.PROF_TOOL, "merge", *traces, "-o", merged], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([harness.PROF_TOOL, "summary", merged], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        # One summary per rank, in rank order, each headed "==> ... <==".
        parts = re.split(r"^==> .* <==$", r.stdout, flags=re.M)[1:]
        self.assertEqual(len(parts), WORLD + 1, r.stdout[:2000])  # the ranks, then the comparison table
        for rank in range(WORLD):
            self.assertEqual(nccl_sections(parts[rank]), live[rank], f"rank {rank} of the merged trace")

    def test_shared_nccl_under_ld_preload_is_seen_by_the_wrappers_once(self):
        out, lines = self.run_job("LD_PRELOAD", DDP)
        # The plugin was offered and loaded too (NCCL_PROFILER_PLUGIN): the
        # wrappers' calls are recorded once.
        self.assertEqual({l["plugin_version"] for l in lines if l["type"] == "comm_init"}, {6})
        self.check_job(out, lines, "nccl wrapper")

    def test_shared_nccl_under_injection_is_seen_by_the_plugin(self):
        out, lines = self.run_job("CUDA_INJECTION64_PATH", DDP)
        self.check_job(out, lines, "nccl profiler plugin")

    def test_static_nccl_under_ld_preload_is_seen_by_the_plugin(self):
        out, lines = self.run_job("LD_PRELOAD", DDP_STATIC)
        # NCCL linked in exports nothing to ask its version with.
        self.check_job(out, lines, "nccl profiler plugin", version="unknown")

    def test_static_nccl_under_injection_is_seen_by_the_plugin(self):
        out, lines = self.run_job("CUDA_INJECTION64_PATH", DDP_STATIC)
        self.check_job(out, lines, "nccl profiler plugin", version="unknown")

    def test_static_nccl_with_an_older_plugin_interface_is_seen_by_the_plugin(self):
        # NCCL 2.27 probes from ncclProfiler_v4, 2.28 from v5 (libprof
        # exports v4, v5 and v6): v4's init takes the communicator's name and
        # hash, v5's its id; v4's descriptors are laid out apart.
        for version in (4, 5):
            with self.subTest(interface=version):
                out, lines = self.run_job("LD_PRELOAD", DDP_STATIC, SIM_NCCL_PROFILER_NEWEST=version)
                self.assertEqual({l["plugin_version"] for l in lines if l["type"] == "comm_init"}, {version})
                self.check_job(out, lines, "nccl profiler plugin", version="unknown")

    def test_a_child_started_without_libprof_is_not_profiled_through_the_inherited_plugin_variable(self):
        # libprof offers itself as NCCL's plugin in the processes it is
        # injected into (NCCL_PROFILER_PLUGIN), and their children inherit
        # the variable. A child started without LD_PRELOAD on purpose (here
        # by `env -u LD_PRELOAD`, under a preloaded shell) then has NCCL open
        # libprof as its plugin: libprof stays idle there, asks NCCL for no
        # event, and the job runs as without it.
        tmp = harness.scratch_dir(self, "agentnccl-")
        out = os.path.join(tmp, "traces")
        truth = os.path.join(tmp, "truth.jsonl")
        env = harness.sim_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth, PROF_WAIT=2, PROF_ACTIVE=2,
                              PROF_LOG_LEVEL="debug", SIM_NCCL_TIMEOUT_MS=60000)
        env.pop("NCCL_PROFILER_PLUGIN", None)
        env["LD_PRELOAD"] = harness.LIBPROF_SO
        cmd = ["sh", "-c", 'exec env -u LD_PRELOAD "$0" "$@"', DDP_STATIC, "--steps", "12", "--bucket-elems", "1024"]
        results = multirank.launch(cmd, WORLD, env)
        for r, res in enumerate(results):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-3000:]}")
            self.assertIn(f"rank {r} of {WORLD}: done steps=12", res.stdout)
            # Idle from whichever loaded libprof first: the driver, through
            # the CUDA_INJECTION64_PATH the shell offered, or NCCL.
            idle = re.search(r"(opened by NCCL as its profiler plugin|loaded by the driver through "
                             r"CUDA_INJECTION64_PATH as a profiled parent offered it)", res.stderr)
            self.assertTrue(idle, res.stderr[-3000:])
            self.assertNotIn("agent started", res.stderr[idle.end():])
        # NCCL did open libprof as its plugin (v6: libprof's newest) ...
        inits = [l for l in sim_truth.read(truth) if l["type"] == "comm_init"]
        self.assertEqual(len(inits), WORLD)
        self.assertEqual({l["plugin_version"] for l in inits}, {6})
        # ... and nothing was recorded in the ranks.
        self.assertEqual(glob.glob(os.path.join(out, "*.pt.trace.json")), [])


if __name__ == "__main__":
    harness.main()
