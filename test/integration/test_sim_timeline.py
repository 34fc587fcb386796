"""The simulated device's timeline obeys its documented model
(test/sim/README.md): per-stream order, never before launch, durations from
the model and SIM_KERNEL_NS, legacy default-stream semantics, events, and
synchronise calls that return only after the work they wait for."""
import os
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402


def run_workload(args, **env):
    """Runs a workload on the sim with a truth log; returns (process, lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "truth.jsonl")
        proc = harness.run([os.path.join(harness.WORKLOAD_DIR, args[0])] + args[1:],
                           harness.sim_env(SIM_TRUTH_FILE=path, **env))
        return proc, truth.read(path)


class SimTimelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, cls.lines = run_workload(["train_loop", "--steps", "4", "--kernels-per-step", "6"])

    def test_train_loop_runs_and_logs_every_kernel(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        kernels = truth.of_type(self.lines, "kernel")
        self.assertEqual(len(kernels), 4 * 6)
        self.assertGreaterEqual(len({k["stream"] for k in kernels}), 2, "kernels on two streams")

    def test_work_on_each_stream_starts_after_its_launch_and_after_the_previous_work(self):
        ops = truth.of_type(self.lines, *truth.DEVICE_OPS)
        self.assertEqual(len(ops), 4 * (6 + 3 + 1))  # per step: kernels, 3 copies, 1 memset
        for stream, stream_ops in truth.by_stream(ops).items():
            previous_end = 0
            for op in stream_ops:  # file order == enqueue order (one thread per stream here)
                self.assertGreaterEqual(op["start_ns"], op["launch_ns"] + truth.LAUNCH_LATENCY_NS, op)
                self.assertGreaterEqual(op["start_ns"], previous_end, f"overlap on stream {stream}: {op}")
                self.assertGreater(op["end_ns"], op["start_ns"])
                previous_end = op["end_ns"]

    def test_kernel_copy_and_memset_durations_follow_the_model(self):
        for op in truth.of_type(self.lines, "kernel"):
            self.assertEqual(op["end_ns"] - op["start_ns"], truth.kernel_ns(op), op["name"])
        copies = truth.of_type(self.lines, "memcpy")
        self.assertEqual({c["copy_kind"] for c in copies}, {truth.HTOD, truth.DTOD, truth.DTOH})
        for op in copies:
            self.assertEqual(op["end_ns"] - op["start_ns"], truth.copy_ns(op), op)
        memsets = truth.of_type(self.lines, "memset")
        self.assertEqual(len(memsets), 4)
        for op in memsets:
            self.assertEqual(op["end_ns"] - op["start_ns"], truth.memset_ns(op), op)

    def test_pinned_buffers_are_reported_pinned_and_device_buffers_device(self):
        h2d = [c for c in truth.of_type(self.lines, "memcpy") if c["copy_kind"] == truth.HTOD]
        self.assertTrue(h2d)
        for c in h2d:
            self.assertEqual((c["src_kind"], c["dst_kind"]), (truth.PINNED, truth.DEVICE))
            self.assertEqual(c["bytes"], 1 << 20)

    def test_stream_synchronize_returns_after_the_end_of_the_streams_work(self):
        ops = self.lines
        syncs = [l for l in ops if l["type"] == "sync" and l["sync_type"] == truth.SYNC_STREAM]
        self.assertEqual(len(syncs), 4)
        for sync in syncs:
            index = ops.index(sync)
            before = [o for o in ops[:index] if o["type"] in truth.DEVICE_OPS and o["stream"] == sync["stream"]]
            self.assertEqual(sync["waited_until_ns"], max(o["end_ns"] for o in before))
            self.assertGreaterEqual(sync["end_ns"], sync["waited_until_ns"])
        for call in truth.api(ops, "cudaStreamSynchronize"):
            matching = [s for s in syncs if s["correlation"] == call["correlation"]]
            self.assertEqual(len(matching), 1)
            self.assertGreaterEqual(call["end_ns"], matching[0]["waited_until_ns"])

    def test_device_synchronize_waits_for_all_streams(self):
        ops = self.lines
        syncs = [l for l in ops if l["type"] == "sync" and l["sync_type"] == truth.SYNC_CONTEXT]
        self.assertEqual(len(syncs), 1)
        index = ops.index(syncs[0])
        device_ops = [o for o in ops[:index] if o["type"] in truth.DEVICE_OPS]
        self.assertEqual(syncs[0]["waited_until_ns"], max(o["end_ns"] for o in device_ops))
        self.assertGreaterEqual(syncs[0]["end_ns"], syncs[0]["waited_until_ns"])

    def test_stream_wait_event_delays_later_work_on_the_waiting_stream(self):
        ops = self.lines
        waits = [l for l in ops if l["type"] == "sync" and l["sync_type"] == truth.SYNC_STREAM_WAIT_EVENT]
        self.assertEqual(len(waits), 8)  # two per step
        for wait in waits:
            index = ops.index(wait)
            later = [o for o in ops[index:] if o["type"] in truth.DEVICE_OPS and o["stream"] == wait["stream"]]
            self.assertTrue(later)
            self.assertGreater(wait["waited_until_ns"], 0)
            self.assertGreaterEqual(later[0]["start_ns"], wait["waited_until_ns"])
        # The side stream's first kernel of each step starts after that step's H2D copy.
        h2d = [c for c in truth.of_type(ops, "memcpy") if c["copy_kind"] == truth.HTOD]
        compute = h2d[0]["stream"]
        side_kernels = [k for k in truth.of_type(ops, "kernel") if k["stream"] != compute]
        for step, copy in enumerate(h2d):
            self.assertGreaterEqual(side_kernels[step * 3]["start_ns"], copy["end_ns"])

    def test_nested_driver_calls_have_their_own_correlation_and_work_belongs_to_the_runtime_call(self):
        runtime_launches = {l["correlation"]: l for l in truth.api(self.lines, "__cudaLaunchKernel", "runtime")}
        driver_launches = truth.api(self.lines, "cuLaunchKernel", "driver")
        self.assertEqual(len(runtime_launches), 24)
        self.assertEqual(len(driver_launches), 24)
        for d in driver_launches:
            self.assertIn(d["outer_correlation"], runtime_launches)
            self.assertNotEqual(d["correlation"], d["outer_correlation"])
            outer = runtime_launches[d["outer_correlation"]]
            self.assertLessEqual(outer["start_ns"], d["start_ns"])
            self.assertLessEqual(d["end_ns"], outer["end_ns"])
        for k in truth.of_type(self.lines, "kernel"):
            self.assertIn(k["correlation"], runtime_launches)
            self.assertEqual(k["api"], "__cudaLaunchKernel")
            self.assertEqual(runtime_launches[k["correlation"]]["symbol"], k["name"])
        ids = [l["correlation"] for l in truth.api(self.lines)]
        self.assertEqual(len(ids), len(set(ids)), "correlation ids are unique")


class SimKernelTableTest(unittest.TestCase):
    def test_sim_kernel_ns_sets_exact_durations_by_name_substring(self):
        proc, lines = run_workload(["train_loop", "--steps", "2", "--kernels-per-step", "4"],
                                   SIM_KERNEL_NS="gemm_tile=50000,relu=7000")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        durations = {}
        for k in truth.of_type(lines, "kernel"):
            durations.setdefault(k["name"], set()).add(k["end_ns"] - k["start_ns"])
        self.assertEqual(durations["_ZN5model9gemm_tileEPfPKfi"], {50000})
        self.assertEqual(durations["_Z12relu_forwardPfi"], {7000})
        self.assertEqual(durations["_Z13scale_inplaceIfEvPT_S0_i"], {2000 + 10 * 1024})  # the model


class SimStreamSemanticsTest(unittest.TestCase):
    """stream_semantics with long_kernel = 2 ms (see test/workloads/README.md)."""

    @classmethod
    def setUpClass(cls):
        cls.proc, cls.lines = run_workload(["stream_semantics"], SIM_KERNEL_NS="long_kernel=2000000")
        cls.kernels = truth.of_type(cls.lines, "kernel")

    def test_runs(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(len(self.kernels), 7)

    def test_legacy_stream_waits_for_blocking_streams_and_blocking_streams_wait_for_it(self):
        a, b, c, d = self.kernels[:4]
        self.assertEqual(b["stream"], truth.LEGACY_STREAM)
        self.assertNotIn(a["stream"], (truth.LEGACY_STREAM, c["stream"]))
        self.assertEqual(a["end_ns"] - a["start_ns"], 2000000)
        self.assertGreaterEqual(b["start_ns"], a["end_ns"], "legacy work waits for the blocking stream")
        self.assertGreaterEqual(d["start_ns"], b["end_ns"], "blocking stream waits for the legacy stream")
        self.assertEqual(c["start_ns"], c["launch_ns"] + truth.LAUNCH_LATENCY_NS,
                         "a non-blocking stream ignores the legacy stream")
        self.assertLess(c["end_ns"], a["end_ns"])

    def test_event_timing_query_and_synchronize(self):
        self.assertIn("query before sync -> 600", self.proc.stdout)  # cudaErrorNotReady
        self.assertIn("query after sync -> 0", self.proc.stdout)
        e = self.kernels[4]
        # start is recorded on an idle stream (launch + latency), stop after E.
        elapsed_us = int(self.proc.stdout.split("elapsed_us ")[1].split()[0])
        self.assertGreaterEqual(elapsed_us, 2000)
        # Plus the host's gap between the two calls, which a loaded machine can
        # stretch to any length: bound it by the truth instead. The start event
        # is recorded after phase 1's cudaDeviceSynchronize returned.
        phase1_sync = [l for l in self.lines if l["type"] == "sync" and l["sync_type"] == truth.SYNC_CONTEXT][0]
        self.assertLessEqual(elapsed_us, (e["end_ns"] - phase1_sync["end_ns"]) / 1000 + 1)
        event_sync = [l for l in self.lines if l["type"] == "sync" and l["sync_type"] == truth.SYNC_EVENT][0]
        self.assertEqual(event_sync["waited_until_ns"], e["end_ns"])
        self.assertGreaterEqual(event_sync["end_ns"], e["end_ns"])

    def test_cross_stream_wait_event(self):
        g, f = self.kernels[5], self.kernels[6]
        self.assertNotEqual(g["stream"], f["stream"])
        self.assertGreaterEqual(f["start_ns"], g["end_ns"])

    def test_per_thread_default_stream_is_its_own_stream(self):
        memset = truth.of_type(self.lines, "memset")[0]
        used = {k["stream"] for k in self.kernels}
        self.assertNotIn(memset["stream"], used | {truth.LEGACY_STREAM})

    def test_every_synchronize_returns_after_what_it_waited_for(self):
        syncs = [l for l in self.lines if l["type"] == "sync" and l["sync_type"] != truth.SYNC_STREAM_WAIT_EVENT]
        self.assertEqual(len(syncs), 4)
        for s in syncs:
            self.assertGreaterEqual(s["end_ns"], s["waited_until_ns"], s)


if __name__ == "__main__":
    harness.main()
