"""CUPTI collection through the whole agent: libprof.so preloaded into the
nvcc workload train_loop on the simulated stack, windows written as traces,
compared with the sim's truth log. Complements test_cupti_sim.py (which
drives the collector directly) by proving the session's calls and the
exporters carry the records through unchanged.

Proves (issue "CUPTI collection", Done when), through the agent:
- each window holds exactly the GPU work of its steps (6 kernels, 3 copies,
  1 memset per train_loop step), each op once, with the sim's stream,
  correlation, duration and relative start on the reported clock;
- every kernel's correlation ties it to the runtime call that launched it;
- faults leave the workload's output and exit status unchanged, the window
  still holds the host-side API events, and one warning names the cause;
- after the last window nothing is enabled and the subscriber is released.
"""
import collections
import glob
import gzip
import json
import os
import tempfile
import unittest

import harness

from harness import LIBPROF_SO, WORKLOAD_DIR, main, run, sim_env

TRAIN_LOOP = os.path.join(WORKLOAD_DIR, "train_loop")
SCHEDULE = dict(PROF_STEP="manual", PROF_WAIT=2, PROF_WARMUP=1, PROF_ACTIVE=3, PROF_REPEAT=1)
STEPS = 10
KERNELS_PER_STEP, COPIES_PER_STEP, MEMSETS_PER_STEP = 6, 3, 1


def read_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


class Run:
    def __init__(self, proc, out_dir, truth):
        self.proc = proc
        self.traces = [read_trace(p) for p in sorted(glob.glob(os.path.join(out_dir, "*.pt.trace.json*")))]
        self.truth = truth
        self.cupti_warnings = [l for l in proc.stderr.splitlines() if "[libprof] warning" in l and "CUPTI" in l]

    def events(self, trace, cat):
        return [e for e in trace["traceEvents"] if e.get("cat") == cat]

    def truth_ops(self, kind):
        return {t["correlation"]: t for t in self.truth if t.get("type") == kind}

    def state(self):
        return [t for t in self.truth if t.get("op") == "cupti_state"]


def run_train_loop(profiled=True, schedule=None, args=(), **env):
    harness.need(LIBPROF_SO, TRAIN_LOOP)
    with tempfile.TemporaryDirectory() as tmp:
        truth_file = os.path.join(tmp, "truth.jsonl")
        extra = dict(SIM_TRUTH_FILE=truth_file, **env)
        if profiled:
            extra.update(LD_PRELOAD=LIBPROF_SO, PROF_OUTPUT_DIR=tmp, **(schedule or SCHEDULE))
        proc = run([TRAIN_LOOP, "--steps", str(STEPS), "--manual-steps", *args], sim_env(**extra), timeout=120)
        truth = []
        if os.path.exists(truth_file):
            with open(truth_file) as f:
                truth = [json.loads(l) for l in f if l.startswith("{")]
        return Run(proc, tmp, truth)


def require_agent(r):
    """Every run here is scheduled to write windows: none is a failure (it
    used to be a skip while the agent's session had not landed)."""
    if not r.traces:
        raise AssertionError("libprof.so wrote no window:\n" + r.proc.stderr[-2000:])


class ThroughTheAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = run_train_loop()
        require_agent(cls.r)

    def test_one_window_with_gpu_timings(self):
        self.assertEqual(self.r.proc.returncode, 0, self.r.proc.stderr)
        self.assertEqual(len(self.r.traces), 1)
        meta = self.r.traces[0]["libprof"]
        self.assertEqual(meta["cupti_mode"], "activity")
        self.assertTrue(meta["gpu_timings"])
        self.assertEqual(self.r.cupti_warnings, [])
        for key in ("device_records_dropped", "cupti_records_dropped", "device_records_missing",
                    "unknown_activity_kinds"):
            self.assertEqual(meta["losses"][key], 0, key)

    def test_each_op_of_the_window_once_with_the_sims_stream_correlation_and_times(self):
        trace = self.r.traces[0]
        active = SCHEDULE["PROF_ACTIVE"]
        for cat, kind, per_step in (("kernel", "kernel", KERNELS_PER_STEP), ("gpu_memcpy", "memcpy", COPIES_PER_STEP),
                                    ("gpu_memset", "memset", MEMSETS_PER_STEP)):
            events = self.r.events(trace, cat)
            self.assertEqual(len(events), active * per_step, cat)
            ids = [e["args"]["correlation"] for e in events]
            self.assertEqual(len(set(ids)), len(ids), f"{cat}: an op appears twice")
            truth = self.r.truth_ops(kind)
            for e in events:
                op = truth.get(e["args"]["correlation"])
                self.assertIsNotNone(op, f"{cat} {e['name']} has no op in the truth log")
                self.assertEqual(e["args"]["stream"], op["stream"])
                self.assertAlmostEqual(harness.true_dur_ns(e), op["end_rep_ns"] - op["start_rep_ns"], delta=2)
        # Relative start times match the sim's timeline to the nanosecond.
        kernels = sorted(self.r.events(trace, "kernel"), key=lambda e: e["ts"])
        truth = self.r.truth_ops("kernel")
        t0, s0 = kernels[0]["ts"] * 1000, truth[kernels[0]["args"]["correlation"]]["start_rep_ns"]
        for e in kernels:
            self.assertAlmostEqual(e["ts"] * 1000 - t0, truth[e["args"]["correlation"]]["start_rep_ns"] - s0, delta=2)

    def test_each_synchronization_record_is_a_sim_sync_inside_its_span(self):
        trace = self.r.traces[0]
        syncs = self.r.events(trace, "cuda_sync")
        # One cudaStreamSynchronize per train_loop step.
        self.assertGreaterEqual(len(syncs), SCHEDULE["PROF_ACTIVE"])
        truth = self.r.truth_ops("sync")
        for e in syncs:
            op = truth.get(e["args"]["correlation"])
            self.assertIsNotNone(op, f"sync {e['name']} has no op in the truth log")
            self.assertLessEqual(e["dur"] * 1000, op["end_rep_ns"] - op["start_rep_ns"] + 2)
            self.assertGreater(e["dur"], 0)

    def test_calls_are_seen_by_cupti_only_where_the_release_has_a_callback_id(self):
        # nvcc's launch stubs call __cudaPopCallConfiguration before each
        # launch: CUPTI 13.0 has an id for it (RUNTIME records), a 12.x CUPTI
        # has none (its table ends at 486), so on CUDA 12 it never appears.
        names = {e["name"] for e in self.r.events(self.r.traces[0], "cuda_runtime")
                 if e["args"].get("source") == "cupti"}
        if harness.SIM_PERSONALITY == "12":
            self.assertNotIn("__cudaPopCallConfiguration", names)
        else:
            self.assertIn("__cudaPopCallConfiguration", names)

    def test_every_kernel_is_tied_to_the_runtime_call_that_launched_it(self):
        trace = self.r.traces[0]
        launches = {e["args"]["correlation"]: e for e in self.r.events(trace, "cuda_runtime")
                    if "correlation" in e.get("args", {})}
        for k in self.r.events(trace, "kernel"):
            call = launches.get(k["args"]["correlation"])
            self.assertIsNotNone(call, f"no runtime call for kernel {k['name']}")
            self.assertIn("LaunchKernel", call["name"])
            self.assertGreaterEqual(k["ts"], call["ts"], "GPU work before the call that launched it")

    def test_cupti_released_after_the_last_window(self):
        # Released either by cuptiFinalize at the first API exit after the
        # writer collected the last window or, when the process ends before
        # such a call, by the exit path; which one depends on thread timing
        # (test_cupti_sim.py pins the finalize with a deterministic driver).
        state = self.r.state()
        self.assertEqual(len(state), 1)
        self.assertEqual(state[0]["subscribed"], 0)
        self.assertEqual(state[0]["enabled_activity_kinds"], [])
        self.assertEqual(state[0]["enabled_callback_domains"], [])


@unittest.skipIf(harness.SIM_PERSONALITY == "12", "CUPTI 13.2 is a CUDA 13 release")
class ThroughTheAgentOnCupti132(ThroughTheAgent):
    """The same window with the sim reporting CUPTI 13.2 (130202, the CUPTI
    of PyTorch's cu13 wheels): kernels come as CUpti_ActivityKernel11,
    libprof reads them as such (record_layouts.cpp), every test above holds."""

    @classmethod
    def setUpClass(cls):
        cls.r = run_train_loop(SIM_CUPTI_API_VERSION=130202)
        require_agent(cls.r)

    def test_the_window_says_cupti_13_2(self):
        self.assertEqual(self.r.traces[0]["libprof"]["cupti_api_version"], 130202)


class RepeatedWindows(unittest.TestCase):
    """PROF_REPEAT=2: CUPTI is paused between the windows and attached again;
    each window holds its own steps' work and nothing of the other's. Steps
    last 100 ms here, so the wait step outlasts the first window's records:
    recording stops once they are in and 50 ms have passed since the window's
    end (not at the step boundary, when calls of the window may still be
    running, one with no callback unseen) and before the next warmup."""

    def test_each_window_holds_only_its_own_steps_work(self):
        schedule = dict(PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_REPEAT=2)
        r = run_train_loop(schedule=schedule, args=("--host-sleep-us", "100000"))
        require_agent(r)
        self.assertEqual(r.proc.returncode, 0, r.proc.stderr)
        self.assertEqual(len(r.traces), 2)
        seen = set()
        kernels_truth = r.truth_ops("kernel")
        for trace in r.traces:
            ids = [e["args"]["correlation"] for e in r.events(trace, "kernel")]
            self.assertEqual(len(ids), 2 * KERNELS_PER_STEP)
            self.assertTrue(all(i in kernels_truth for i in ids))
            self.assertFalse(seen & set(ids), "a kernel landed in two windows")
            seen |= set(ids)
            self.assertEqual(trace["libprof"]["losses"]["device_records_missing"], 0)
        state = r.state()
        self.assertEqual((state[0]["subscribed"], state[0]["enabled_activity_kinds"]), (0, []))
        # Activity was switched off between the windows and on again.
        enables = [t for t in r.truth if t.get("call") == "cuptiActivityEnable"]
        disables = [t for t in r.truth if t.get("call") == "cuptiActivityDisable"]
        self.assertEqual(len(enables), 2 * len({t["kind"] for t in enables}))
        self.assertGreaterEqual(len(disables), len(enables))


class FaultsThroughTheAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = {}

    def baseline(self, **env):
        key = tuple(sorted(env.items()))
        if key not in self.plain:
            self.plain[key] = run_train_loop(profiled=False, **env)
        return self.plain[key]

    def check_host_unchanged_and_interception_only(self, cause, **env):
        r = run_train_loop(**env)
        require_agent(r)
        base = self.baseline(**env)
        self.assertEqual(r.proc.returncode, base.proc.returncode)
        self.assertEqual(r.proc.stdout, base.proc.stdout)
        self.assertEqual(len(r.cupti_warnings), 1, r.proc.stderr)
        self.assertIn(cause, r.cupti_warnings[0])
        for trace in r.traces:
            meta = trace["libprof"]
            self.assertTrue(meta["cupti_mode"].startswith("interception-only ("), meta["cupti_mode"])
            self.assertIn(cause, meta["cupti_mode"])
            self.assertFalse(meta["gpu_timings"])
            self.assertEqual(r.events(trace, "kernel"), [])
            self.assertTrue(r.events(trace, "cuda_runtime"), "host-side API events still in the window")
        return r

    def test_another_subscriber(self):
        # CUPTI 13's cuptiSubscribe_v2 names the holder; CUDA 12's CUPTI has
        # only cuptiSubscribe, which cannot.
        cause = "another tool already holds CUPTI" if harness.SIM_PERSONALITY == "12" else "Nsight Systems"
        self.check_host_unchanged_and_interception_only(cause, SIM_CUPTI_SUBSCRIBER="Nsight Systems")

    def test_a_cupti_older_than_12_0_gives_one_line_naming_file_version_and_range(self):
        cupti = os.path.join(harness.SIM_LIB_DIR, harness.CUPTI_SONAME)
        self.check_host_unchanged_and_interception_only(
            f"{cupti} reports CUPTI API version 18 (CUDA 11.8 or older), outside the range libprof decodes "
            "(CUPTI API version 19 (CUDA 12.0) to 28 (CUDA 12.9 Update 1) and 130000 to 130299 (CUDA 13.0 to 13.2))",
            SIM_CUPTI_API_VERSION=18)

    def test_a_cupti_newer_than_the_newest_known_layout_is_not_misread(self):
        cupti = os.path.join(harness.SIM_LIB_DIR, harness.CUPTI_SONAME)
        self.check_host_unchanged_and_interception_only(
            f"{cupti} reports CUPTI API version 130300 (CUDA 13.3), outside the range libprof decodes",
            SIM_CUPTI_API_VERSION=130300)

    def test_cupti_init_failure(self):
        self.check_host_unchanged_and_interception_only("CUPTI_ERROR_NOT_INITIALIZED", SIM_CUPTI_INIT_FAIL=1)

    def test_no_driver_leaves_the_failing_host_exactly_as_it_fails_alone(self):
        # train_loop stops at its first CUDA call (error 35) before any step,
        # so CUPTI is never attempted; the collector-level no-driver case is
        # in test_cupti_sim.py and, with NVIDIA's library, test_cupti_real.py.
        r = run_train_loop(SIM_NO_DRIVER=1)
        base = self.baseline(SIM_NO_DRIVER=1)
        self.assertNotEqual(base.proc.returncode, 0, "the fault did not bite")
        self.assertEqual(r.proc.returncode, base.proc.returncode)
        self.assertEqual(r.proc.stdout, base.proc.stdout)
        self.assertEqual(r.cupti_warnings, [], "CUPTI is never attempted before a step")

    def test_null_buffers_count_what_cupti_dropped(self):
        r = run_train_loop(SIM_CUPTI_NULL_BUFFERS=1, PROF_FLUSH_TIMEOUT_MS=100)
        require_agent(r)
        base = self.baseline()
        self.assertEqual((r.proc.returncode, r.proc.stdout), (base.proc.returncode, base.proc.stdout))
        meta = r.traces[0]["libprof"]
        self.assertEqual(meta["cupti_mode"], "activity")
        self.assertEqual(r.events(r.traces[0], "kernel"), [])
        self.assertGreater(meta["losses"]["cupti_records_dropped"], 0)
        self.assertLessEqual(meta["losses"]["cupti_records_dropped"], r.state()[0]["records_dropped"])

    def test_buffers_are_handed_to_cupti_zeroed_so_cupti_does_not_clear_them_on_the_app_thread(self):
        # The sim checks the promise (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER)
        # on every buffer it is given, reused ones included.
        # One window per step: buffers CUPTI filled come back and are handed out again.
        every_step = dict(PROF_STEP="manual", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=1, PROF_REPEAT=0)
        r = run_train_loop(schedule=every_step, SIM_CUPTI_CHECK_ZEROED="1")
        require_agent(r)
        full = [t for t in r.traces if not t["libprof"]["window"]["partial"]]
        self.assertGreaterEqual(len(full), STEPS - 1)
        for trace in full:
            self.assertEqual(len(r.events(trace, "kernel")), KERNELS_PER_STEP)
        state = r.state()[0]
        self.assertEqual(state["client_zeroes_buffers"], 1)
        self.assertEqual(state["dirty_buffers"], 0)

    def test_late_records_still_land_in_their_window(self):
        r = run_train_loop(SIM_CUPTI_LATE_MS=150)
        require_agent(r)
        kernels = r.events(r.traces[0], "kernel")
        self.assertEqual(len(kernels), SCHEDULE["PROF_ACTIVE"] * KERNELS_PER_STEP)
        self.assertEqual(r.traces[0]["libprof"]["losses"]["device_records_missing"], 0)


if __name__ == "__main__":
    main()
