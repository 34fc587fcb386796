"""The simulated libcupti.so.13 under a profiler-like client, end to end
through the simulated runtime and driver: what the client sees (callbacks,
records, drops, delivery) must match the hub's truth log exactly.

The client (test/sim/cupti/tests/cupti_client.cpp) prints JSON lines; the
hub writes one truth line per API call and per op (SIM_TRUTH_FILE), and
libcupti one per attach-related call plus its state at exit."""
import json
import os
import tempfile
import unittest

from harness import SIM_LIB_DIR, main, run, sim_env

CLIENT = os.path.join(SIM_LIB_DIR, os.pardir, "bin", "sim_cupti_client")
CLIENT_OFFSET_NS = 10**12  # the client's clock: CLOCK_MONOTONIC + this

KIND_DRIVER, KIND_RUNTIME = 4, 5
OP_KIND = {"kernel": 10, "memcpy": 1, "memset": 2, "sync": 38, "mem_alloc": 49, "mem_free": 49}


def lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class Run:
    """One client run: its stdout events and the truth log."""

    def __init__(self, scenario, **env):
        with tempfile.TemporaryDirectory() as tmp:
            truth_path = os.path.join(tmp, "truth.jsonl")
            proc = run([CLIENT, scenario], sim_env(SIM_TRUTH_FILE=truth_path, **env), timeout=60)
            self.returncode = proc.returncode
            self.stderr = proc.stderr
            self.events = lines(proc.stdout)
            with open(truth_path) as f:
                self.truth = lines(f.read())

    def ev(self, name):
        return [e for e in self.events if e["ev"] == name]

    def one(self, name):
        found = self.ev(name)
        assert len(found) == 1, (name, found)
        return found[0]

    def records(self, kind=None):
        return [e for e in self.ev("record") if kind is None or e["kind"] == kind]

    def calls(self, call):
        return [t for t in self.truth if t.get("type") == "cupti_call" and t["call"] == call]

    def state(self):
        states = [t for t in self.truth if t.get("type") == "cupti_state"]
        assert len(states) == 1, states
        return states[0]

    def window(self):
        """Truth API lines and ops between the last cuptiActivityEnable and the first disable."""
        begin = max(t["sim_ns"] for t in self.calls("cuptiActivityEnable"))
        end = min(t["sim_ns"] for t in self.calls("cuptiActivityDisable"))
        apis = [t for t in self.truth if t.get("type") == "api" and begin <= t["start_ns"] and t["end_ns"] <= end]
        ops = [t for t in self.truth if t.get("type") in OP_KIND and begin <= t["launch_ns"] <= end]
        return apis, ops


@unittest.skipUnless(os.path.exists(CLIENT), "sim_cupti_client not built")
class SimCuptiClientTest(unittest.TestCase):
    def assertClean(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.ev("error"), [], "a CUPTI or CUDA call failed unexpectedly")

    def test_callbacks_records_and_truth_agree_on_ids_and_times(self):
        r = Run("trace")
        self.assertClean(r)
        apis, ops = r.window()
        self.assertGreater(len(apis), 10)
        self.assertEqual({t["type"] for t in ops}, set(OP_KIND))

        # API records: one per call in the window, same id, cbid, result and
        # times as the truth log reports (on the client's clock).
        by_corr = {e["corr"]: e for e in r.records() if e["kind"] in (KIND_DRIVER, KIND_RUNTIME)}
        self.assertEqual(set(by_corr), {t["correlation"] for t in apis})
        for t in apis:
            rec = by_corr[t["correlation"]]
            self.assertEqual(rec["kind"], KIND_RUNTIME if t["domain"] == "runtime" else KIND_DRIVER, t)
            self.assertEqual((rec["cbid"], rec["ret"]), (t["cbid"], t["result"]), t)
            self.assertEqual((rec["start"], rec["end"]), (t["start_rep_ns"], t["end_rep_ns"]), t)

        # Callbacks: an enter and an exit per call, same id and name, and the
        # correlationData stored at enter is read back at exit.
        callbacks = r.ev("cb")
        self.assertTrue(all(c["data_ok"] == 1 for c in callbacks))
        for t in apis:
            seen = [c for c in callbacks if c["corr"] == t["correlation"]]
            self.assertEqual(sorted(c["site"] for c in seen), [0, 1], t)
            self.assertTrue(all(c["name"] == t["name"] for c in seen), (t, seen))

        # Device records carry their launching call's id and the truth's times.
        for t in ops:
            matches = [e for e in r.records(OP_KIND[t["type"]]) if e["corr"] == t["correlation"]
                       and e["start"] == t["start_rep_ns"]]
            self.assertEqual(len(matches), 1, t)
            if "end" in matches[0] and t["type"] not in ("mem_alloc", "mem_free"):
                self.assertEqual(matches[0]["end"], t["end_rep_ns"], t)
        kernel = r.records(10)[0]
        launch = [c for c in callbacks if c["corr"] == kernel["corr"] and c["site"] == 0]
        self.assertEqual([c["name"] for c in launch], ["cudaLaunchKernel"])
        self.assertEqual(launch[0]["symbol"], "_Z5scalePfi")
        self.assertEqual(kernel["name"], "_Z5scalePfi")
        self.assertEqual((kernel["grid"], kernel["block"]), (4, 256))

    def test_timestamp_callback_puts_every_time_on_the_client_clock(self):
        r = Run("trace")
        self.assertClean(r)
        apis, ops = r.window()
        # CLOCK_MONOTONIC vs the sim's CLOCK_MONOTONIC_RAW differ by far less
        # than a minute; the raw sim clock would be 10^12 ns away.
        for t in apis + ops:
            self.assertLess(abs(t["start_rep_ns"] - t["start_ns"] - CLIENT_OFFSET_NS), 60 * 10**9, t)
        self.assertTrue(all(e["start"] > CLIENT_OFFSET_NS for e in r.records()))

    def test_timestamp_callback_in_ticks_reports_ticks(self):
        # A client clock of 3 ticks per ns (a TSC-like count): every record is
        # in ticks, so durations and gaps are 3x the sim's ns, and records
        # still equal the truth's reported times exactly.
        r = Run("trace", CLIENT_TICKS_PER_NS=3)
        self.assertClean(r)
        apis, ops = r.window()
        devices = [t for t in ops if t["type"] in ("kernel", "memcpy", "memset")]
        self.assertGreater(len(devices), 2)
        for t in devices:
            rec = [e for e in r.records(OP_KIND[t["type"]]) if e["corr"] == t["correlation"]][0]
            self.assertEqual((rec["start"], rec["end"]), (t["start_rep_ns"], t["end_rep_ns"]), t)
            ns = t["end_ns"] - t["start_ns"]
            self.assertAlmostEqual(rec["end"] - rec["start"], 3 * ns, delta=3 * ns * 0.001 + 30, msg=t)
        # Gaps between calls far apart in time: 3x too, to 0.1%.
        first, last = apis[0], apis[-1]
        span_ns = last["end_ns"] - first["start_ns"]
        self.assertGreater(span_ns, 10000)
        self.assertAlmostEqual(last["end_rep_ns"] - first["start_rep_ns"], 3 * span_ns, delta=3 * span_ns * 0.001 + 30)
        # And on the client's base: its clock reads ~3x CLOCK_MONOTONIC + offset.
        for t in apis:
            self.assertLess(abs(t["start_rep_ns"] - 3 * t["start_ns"] - CLIENT_OFFSET_NS), 3 * 60 * 10**9, t)

    def test_second_subscriber_is_refused_and_told_the_holder(self):
        r = Run("trace")
        second = r.one("second_subscriber")
        self.assertEqual(second["result"], 39)
        self.assertEqual(second["holder"], "CUPTI for sim-cupti-client")
        self.assertIn(1, [e["cbid"] for e in r.ev("resource")])  # CONTEXT_CREATED

    def test_state_at_exit_shows_cupti_detached_and_every_record_delivered(self):
        r = Run("trace")
        state = r.state()
        self.assertEqual((state["subscribed"], state["finalized"]), (0, 1))
        self.assertEqual((state["enabled_activity_kinds"], state["enabled_callback_domains"]), ([], []))
        self.assertEqual(state["records_delivered"], len(r.records()))
        self.assertEqual(state["records_dropped"], 0)
        # Attached only while needed: subscribe first, finalize last.
        calls = [t for t in r.truth if t.get("type") == "cupti_call"]
        self.assertEqual(calls[-1]["call"], "cuptiFinalize")
        self.assertLess(r.calls("cuptiSubscribe_v2")[0]["sim_ns"], r.calls("cuptiActivityEnable")[0]["sim_ns"])

    def test_unforced_flush_withholds_unfinished_work_forced_delivers_it_without_end(self):
        r = Run("flush", SIM_KERNEL_NS="slow=300000000")
        self.assertClean(r)
        # The slow kernel's buffer also holds the launch's API record: all withheld.
        self.assertEqual(r.one("after_unforced")["records"], 0)
        self.assertGreaterEqual(r.one("after_forced")["records"], 2)
        kernels = r.records(10)
        self.assertEqual(len(kernels), 1, "a record is delivered once, never again after it completes")
        truth = [t for t in r.truth if t.get("type") == "kernel"]
        self.assertEqual(kernels[0]["corr"], truth[0]["correlation"])
        self.assertEqual(kernels[0]["end"], 0)
        self.assertIn(kernels[0]["start"], (0, truth[0]["start_rep_ns"]))

    def test_declined_buffers_drop_exactly_the_records_the_truth_says_were_made(self):
        for scenario, env in (("drops", {}), ("drops_fault", {"SIM_CUPTI_NULL_BUFFERS": "1"})):
            with self.subTest(scenario=scenario):
                r = Run(scenario, **env)
                self.assertClean(r)
                apis, ops = r.window()
                expected = len(apis) + len(ops)
                self.assertGreater(expected, 20)
                self.assertEqual(r.records(), [])
                self.assertEqual(r.one("dropped")["count"], expected)
                self.assertEqual(r.state()["records_dropped"], expected)
                if env:
                    self.assertEqual(r.one("dropped")["requests"], 0, "the fault never asks the client")

    def test_late_delivery_arrives_on_the_worker_after_the_delay(self):
        r = Run("late", SIM_CUPTI_LATE_MS="400")
        self.assertClean(r)
        returned = r.one("unforced_returned")
        self.assertLess(returned["flush_ns"], 200 * 10**6)
        self.assertEqual(returned["records"], 0)
        self.assertGreaterEqual(r.one("waited")["deliveries"], 1)
        records = r.records()
        self.assertTrue(records)
        self.assertTrue(all(e["on_main"] == 0 for e in records))
        self.assertGreaterEqual(min(e["at_ns"] for e in records) - returned["at_ns"],
                                400 * 10**6 - returned["flush_ns"])

    def test_subscription_faults(self):
        cases = [
            ({"SIM_CUPTI_SUBSCRIBER": "Nsight Systems"}, 39, 39, "Nsight Systems", None),
            ({"SIM_NO_DRIVER": "1"}, 999, 999, "", 999),
            ({"SIM_CUPTI_INIT_FAIL": "1"}, 15, 15, "", 15),
        ]
        for env, plain, v2, holder, enable in cases:
            with self.subTest(env=env):
                r = Run("subscribe", **env)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = r.one("subscribe")
                self.assertEqual((got["plain"], got["v2"], got["holder"]), (plain, v2, holder))
                if enable is not None:
                    self.assertEqual(got["enable"], enable)
                self.assertEqual(r.state()["subscribed"], 0)


if __name__ == "__main__":
    main()
