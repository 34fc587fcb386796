"""The simulated NCCL (test/sim/nccl, README "Collectives") held to its
documented model with several real processes per test: every rank's
collective kernel ends when the last rank's has started plus the modelled
transfer time, a synchronize on an early rank really waits for the late
one, kernels carry NCCL >= 2.19 names, every entry point behaves as NCCL
documents, and the profiler plugin receives the documented events."""
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sim"))
import harness  # noqa: E402
import multirank  # noqa: E402
import sim_truth  # noqa: E402

DDP = os.path.join(harness.WORKLOAD_DIR, "ddp_train")
DDP_STATIC = os.path.join(harness.WORKLOAD_DIR, "ddp_train_static")
CTYPES = os.path.join(harness.WORKLOAD_DIR, "nccl_ctypes.py")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "nccl_data.py")
PROBE_DIR = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "testing")

# The model's numbers (README "Collectives").
BASE_NS = 2000
STEP_NS = 1000
BUSBW_BYTES_PER_NS = 100.0


def transfer_ns(coll, bus_bytes, n):
    steps = 0 if n <= 1 else (2 * (n - 1) if coll == "AllReduce" else (1 if coll == "SendRecv" else n - 1))
    return BASE_NS + steps * STEP_NS + math.ceil(bus_bytes / BUSBW_BYTES_PER_NS)


def nccl_lines(lines):
    return [l for l in lines if l["type"] == "nccl"]


class SimNcclTest(unittest.TestCase):
    def run_ranks(self, cmd, world, truth, extra_env=None, per_rank=None, timeout=240):
        settings = {"SIM_TRUTH_FILE": truth, "SIM_NCCL_TIMEOUT_MS": 60000, "NCCL_PROFILER_PLUGIN": "none"}
        settings.update(extra_env or {})
        env = harness.sim_env(**settings)
        results = multirank.launch(cmd, world, env, timeout=timeout, per_rank=per_rank)
        for r, res in enumerate(results):
            self.assertEqual(res.returncode, 0, f"rank {r}: {res.stderr[-2000:]}")
        return results

    def test_a_late_rank_holds_every_ranks_collective_and_their_synchronize(self):
        tmp = harness.scratch_dir(self, "simnccl-")
        truth = os.path.join(tmp, "truth.jsonl")
        delay_us = 100000
        self.run_ranks([DDP, "--steps", "4", "--bucket-elems", "262144"], 4, truth,
                       extra_env={"WORKLOAD_SLOW_RANK": 2, "WORKLOAD_SLOW_US": delay_us})
        lines = sim_truth.read(truth)
        coll = nccl_lines(lines)
        by_rank = {}
        for l in coll:
            by_rank.setdefault(l["rank"], []).append(l)
        self.assertEqual(sorted(by_rank), [0, 1, 2, 3])
        # Broadcast + 4 steps x 4 buckets, the same sequence on every rank.
        for r, ls in by_rank.items():
            self.assertEqual([(l["coll"], l["seq"], l["count"]) for l in ls],
                             [(l["coll"], l["seq"], l["count"]) for l in by_rank[0]], f"rank {r}")
            self.assertEqual(len(ls), 1 + 4 * 4)
        pid_of = {r: ls[0]["pid"] for r, ls in by_rank.items()}
        kernels = {pid: [k for k in sim_truth.of_type(lines, "kernel") if k["pid"] == pid and "ncclDevKernel" in k["name"]]
                   for pid in pid_of.values()}
        for seq in range(1, 18):
            ops = [next(l for l in by_rank[r] if l["seq"] == seq) for r in range(4)]
            latest_start = max(o["start_ns"] for o in ops)
            n = ops[0]["nranks"]
            factor = 2 * (n - 1) / n if ops[0]["coll"] == "AllReduce" else 1.0
            expected_transfer = transfer_ns(ops[0]["coll"], ops[0]["count"] * 4 * factor, n)
            for o in ops:
                self.assertEqual(o["release_ns"], latest_start, o)
                self.assertEqual(o["transfer_ns"], expected_transfer, o)
                self.assertEqual(o["end_ns"], latest_start + expected_transfer, o)
                self.assertGreaterEqual(o["start_ns"], o["arrival_ns"] + sim_truth.LAUNCH_LATENCY_NS)
            # The device timeline (the kernel truth line CUPTI's record comes from) agrees.
            for r, o in zip(range(4), ops):
                k = kernels[pid_of[r]][seq - 1]
                self.assertEqual((k["start_ns"], k["end_ns"]), (o["start_ns"], o["end_ns"]))
        # The first bucket of each step waits for the late rank on every other
        # rank (a busy machine may delay another rank too, but not often).
        late_steps = 0
        for step in range(4):
            seq = 2 + step * 4
            ops = {r: next(l for l in by_rank[r] if l["seq"] == seq) for r in range(4)}
            if ops[2]["wait_ns"] == 0:
                late_steps += 1
                for r in (0, 1, 3):
                    self.assertGreater(ops[r]["wait_ns"], 0.5 * delay_us * 1000, (r, ops[r]))
        # A loaded machine can hold another rank back as long: most steps, not all.
        self.assertGreaterEqual(late_steps, 2)
        # Each step ends with a D2H copy of the loss into pageable memory,
        # which returns once the copy is done (as CUDA documents): on an early
        # rank it waits for the late rank's all-reduces.
        for r in (0, 1, 3):
            copies = [a for a in sim_truth.api(lines, "cudaMemcpyAsync") if a["pid"] == pid_of[r]]
            self.assertEqual(len(copies), 4)
            long_waits = 0
            for step in range(4):
                last = next(l for l in by_rank[r] if l["seq"] == 1 + (step + 1) * 4)
                self.assertGreaterEqual(copies[step]["end_ns"], last["end_ns"])
                long_waits += copies[step]["end_ns"] - copies[step]["start_ns"] > 0.5 * delay_us * 1000
            self.assertGreaterEqual(long_waits, 2)

    def test_a_synchronize_on_an_early_rank_waits_for_the_late_rank(self):
        tmp = harness.scratch_dir(self, "simnccl-")
        truth = os.path.join(tmp, "truth.jsonl")
        delay_us = 100000
        self.run_ranks([DDP, "--steps", "3", "--bucket-elems", "4096", "--pinned-loss"], 2, truth,
                       extra_env={"WORKLOAD_SLOW_RANK": 1, "WORKLOAD_SLOW_US": delay_us})
        lines = sim_truth.read(truth)
        coll = nccl_lines(lines)
        pid0 = next(l["pid"] for l in coll if l["rank"] == 0)
        ends = [l["end_ns"] for l in coll if l["rank"] == 0]
        # The copy into pinned memory does not wait; the synchronize does.
        copies = [a for a in sim_truth.api(lines, "cudaMemcpyAsync") if a["pid"] == pid0]
        self.assertTrue(all(c["end_ns"] - c["start_ns"] < 0.5 * delay_us * 1000 for c in copies))
        syncs = [a for a in sim_truth.api(lines, "cudaStreamSynchronize") if a["pid"] == pid0][1:]
        self.assertEqual(len(syncs), 3)
        for step, sync in enumerate(syncs):
            self.assertGreaterEqual(sync["end_ns"], ends[(step + 1) * 4])
        self.assertGreaterEqual(sum(s["end_ns"] - s["start_ns"] > 0.5 * delay_us * 1000 for s in syncs), 2)

    def test_kernel_names_sizes_and_every_entry_point(self):
        tmp = harness.scratch_dir(self, "simnccl-")
        truth = os.path.join(tmp, "truth.jsonl")
        results = self.run_ranks([sys.executable, CTYPES], 4, truth)
        for r, res in enumerate(results):
            checks = {c["check"]: c for c in map(json.loads, res.stdout.splitlines())}
            self.assertEqual(checks["version"]["value"], 22809)
            self.assertEqual(checks["comm"], {"check": "comm", "count": 4, "rank": r, "device": 0})
            e = checks["errors"]
            self.assertEqual((e["bad_type"], e["bad_op"], e["bad_root"], e["bad_peer"], e["null_comm"]), (4, 4, 4, 4, 4))
            self.assertEqual(e["group_end_alone"], 5)
            self.assertIn("ncclGroupEnd", checks["last_error"]["text"])
            # Split by parity, ordered by key = -rank: the higher parent rank first.
            self.assertEqual(checks["split"], {"check": "split", "count": 2, "rank": 1 if r < 2 else 0})
        coll = [l for l in nccl_lines(sim_truth.read(truth)) if l["rank"] == 0 and l["nranks"] == 4]
        expect = [
            ("AllReduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1024 * 4, 2 * 3 / 4),
            ("AllReduce", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 4096 * 2, 2 * 3 / 4),
            ("Broadcast", "ncclDevKernel_Broadcast_RING_LL", 2048 * 4, 1),
            ("Broadcast", "ncclDevKernel_Broadcast_RING_LL", 64, 1),
            ("Reduce", "ncclDevKernel_Reduce_Sum_f16_RING_LL", 512 * 2, 1),
            ("AllGather", "ncclDevKernel_AllGather_RING_LL", 1000 * 4 * 4, 3 / 4),
            ("ReduceScatter", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 1000 * 4 * 4, 3 / 4),
            ("AlltoAll", "ncclDevKernel_SendRecv", 256 * 4 * 4, 3 / 4),
            ("SendRecv", "ncclDevKernel_SendRecv", 300 * 4, 1),
            ("AllReduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100 * 4, 2 * 3 / 4),
            ("AllReduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 200 * 4, 2 * 3 / 4),
        ]
        self.assertEqual(len(coll), len(expect))
        for line, (name, kernel, bus_bytes_s, factor) in zip(coll, expect):
            self.assertEqual(line["coll"], name)
            self.assertEqual(line["kernel"], kernel + "(ncclDevKernelArgsStorage<4096ul>)")
            self.assertEqual(line["bus_bytes"], bus_bytes_s, line)
            self.assertEqual(line["transfer_ns"], transfer_ns(name, bus_bytes_s * factor, 4), line)
            dur = line["end_ns"] - line["start_ns"]
            self.assertAlmostEqual(line["busbw_gbps"], bus_bytes_s * factor / dur, places=4)
        sendrecv = next(l for l in coll if l["coll"] == "SendRecv")
        self.assertEqual([(o["func"], o["peer"]) for o in sendrecv["ops"]], [("Send", 1), ("Recv", 3)])
        # The split communicators: two of two ranks each, with their own hash.
        sub = [l for l in nccl_lines(sim_truth.read(truth)) if l["nranks"] == 2]
        self.assertEqual(len(sub), 4)
        self.assertEqual(len({l["comm"] for l in sub}), 2)

    def test_profiler_plugin_gets_the_documented_events_in_every_version(self):
        for version in (4, 5, 6):
            with self.subTest(version=version):
                tmp = harness.scratch_dir(self, "simnccl-")
                truth = os.path.join(tmp, "truth.jsonl")
                probe = os.path.join(tmp, "probe.jsonl")
                lib = os.path.join(PROBE_DIR, f"libnccl-profiler-probe{version}.so")
                self.run_ranks([DDP, "--steps", "2", "--bucket-elems", "4096"], 2, truth,
                               extra_env={"NCCL_PROFILER_PLUGIN": lib, "PLUGIN_PROBE_FILE": probe})
                events = sim_truth.read(probe)
                coll_truth = nccl_lines(sim_truth.read(truth))
                inits = [e for e in events if e["ev"] == "init"]
                self.assertEqual(sorted(e["rank"] for e in inits), [0, 1])
                self.assertEqual(len({e["comm"] for e in inits}), 1)
                self.assertEqual({e["comm"] for e in inits}, {l["comm"] for l in coll_truth})
                self.assertTrue(all(e["version"] == version for e in inits))
                self.assertEqual(len([e for e in events if e["ev"] == "finalize"]), 2)
                for pid in {l["pid"] for l in coll_truth}:
                    colls = [e for e in events if e["ev"] == "coll" and e["pid"] == pid]
                    truth_p = [l for l in coll_truth if l["pid"] == pid]
                    self.assertEqual([(e["func"], e["seq"], e["count"], e["datatype"]) for e in colls],
                                     [(l["coll"], l["nccl_seq"], l["count"], l["datatype"]) for l in truth_p])
                    self.assertTrue(all(e["algo"] == "RING" and e["proto"] == "LL" for e in colls))
                    starts = [e for e in events if e["ev"] == "kernel_ch_start" and e["pid"] == pid]
                    stops = [e for e in events if e["ev"] == "kernel_ch_stop" and e["pid"] == pid]
                    self.assertEqual(len(starts), sum(l["channels"] for l in truth_p))
                    # Channel 0 of each kernel: GPU timer span = the kernel's span.
                    ch0 = [i for i, e in enumerate(starts) if e["channel"] == 0]
                    spans = [stops[i]["ptimer"] - starts[i]["ptimer"] for i in ch0]
                    self.assertEqual(spans, [l["end_ns"] - l["start_ns"] for l in truth_p])
                    types = {e["type"] for e in events if e["ev"] == "type" and e["pid"] == pid}
                    # Group (1); v5+ also GroupApi (256), CollApi (512), KernelLaunch (2048).
                    self.assertEqual(types, {1} if version == 4 else {1, 256, 512, 2048})

    def test_plugin_lookup_follows_ncclprofilerplugin(self):
        tmp = harness.scratch_dir(self, "simnccl-")
        cases = {
            "none": ("none", None, 0),
            "short name": ("probe5", PROBE_DIR, 5),  # libnccl-profiler-probe5.so on the library path
            "static": ("STATIC_PLUGIN", None, 6),    # the program's global scope: a preloaded probe
            "init fails": (os.path.join(PROBE_DIR, "libnccl-profiler-probe4.so"), None, 4),
            "no context": (os.path.join(PROBE_DIR, "libnccl-profiler-probe6.so"), None, 6),
        }
        for name, (value, libdir, version) in cases.items():
            with self.subTest(case=name):
                probe = os.path.join(tmp, name.replace(" ", "_") + ".jsonl")
                truth = os.path.join(tmp, name.replace(" ", "_") + ".truth")
                env = harness.sim_env(SIM_TRUTH_FILE=truth, NCCL_PROFILER_PLUGIN=value, PLUGIN_PROBE_FILE=probe)
                if libdir:
                    env["LD_LIBRARY_PATH"] += ":" + libdir
                if name == "static":
                    env["LD_PRELOAD"] = os.path.join(PROBE_DIR, "libnccl-profiler-probe6.so")
                if name == "init fails":
                    env["PLUGIN_PROBE_FAIL_INIT"] = "1"
                if name == "no context":
                    env["PLUGIN_PROBE_NULL_CONTEXT"] = "1"
                results = multirank.launch([DDP, "--steps", "1", "--bucket-elems", "1024"], 2, env)
                self.assertEqual([r.returncode for r in results], [0, 0], [r.stderr for r in results])
                events = sim_truth.read(probe)
                inits = [l for l in sim_truth.read(truth) if l["type"] == "comm_init"]
                self.assertEqual({l["plugin_version"] for l in inits}, {version})
                if name in ("none", "init fails"):
                    self.assertEqual(events, [])
                else:
                    self.assertTrue(any(e["ev"] == "coll" for e in events))
                # Every rank's communicator is finalized, except where init
                # kept no context (NCCL finalizes only a context it was given);
                # events still flow there, with the null context.
                finalized = [e for e in events if e["ev"] == "finalize"]
                if name == "no context":
                    self.assertEqual(finalized, [])
                    channels = [e for e in events if e["ev"] == "kernel_ch_start"]
                    self.assertTrue(channels and all(e.get("null_context") for e in channels), channels[:3])
                elif name in ("short name", "static"):
                    self.assertEqual(len(finalized), 2)

    def test_collectives_move_the_bytes_nccl_documents(self):
        # test/workloads/nccl_data.py on four ranks, one device each, the last
        # rank late to every call: each collective's result (every reduction
        # and type, FP8 saturating, rooted, gathers, scatters, all-to-all,
        # send/receive) is in the receive buffer when a copy queued right
        # behind the kernel reads it, and a memset queued behind it wins.
        tmp = harness.scratch_dir(self, "simnccl-")
        truth = os.path.join(tmp, "truth.jsonl")
        results = self.run_ranks([sys.executable, DATA], 4, truth, extra_env={"SIM_DEVICE_COUNT": 4})
        for r, res in enumerate(results):
            checks = [json.loads(l) for l in res.stdout.splitlines()]
            self.assertEqual([c["check"] for c in checks if not c["ok"]], [], f"rank {r}: {checks}")
            self.assertEqual(len(checks), 20, res.stdout)
        # Every kernel moved its bytes, but the one given memory the sim never
        # allocated (the last all-reduce on each rank).
        lines = sim_truth.read(truth)
        coll = nccl_lines(lines)
        for r in range(4):
            mine = sorted((l for l in coll if l["rank"] == r), key=lambda l: l["arrival_ns"])
            self.assertEqual([l["data"] for l in mine], [True] * (len(mine) - 1) + [False])
        # The bytes went through shared-memory objects named after the
        # communicator (rank 0's pid): the last reader of each removed it.
        creator = next(l["pid"] for l in lines if l["type"] == "comm_init" and l["rank"] == 0)
        self.assertEqual([n for n in os.listdir("/dev/shm") if n.startswith(f"simnccl.{creator}.")], [])

    def test_static_nccl_runs_the_same_job(self):
        tmp = harness.scratch_dir(self, "simnccl-")
        truth = os.path.join(tmp, "truth.jsonl")
        self.run_ranks([DDP_STATIC, "--steps", "2", "--bucket-elems", "4096"], 2, truth)
        coll = nccl_lines(sim_truth.read(truth))
        self.assertEqual(len(coll), 2 * (1 + 2 * 4))


if __name__ == "__main__":
    unittest.main()
