"""Every workload runs on the simulated stack; train_loop's output does not
change under libprof; the toolkit's real libcudart fails fast without a
driver; SIM_NO_DRIVER makes the sim behave like that machine."""
import glob
import os
import sys
import tempfile
import time
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402


def workload(name):
    return os.path.join(harness.WORKLOAD_DIR, name)


def run_with_truth(cmd, **env):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "truth.jsonl")
        proc = harness.run(cmd, harness.sim_env(SIM_TRUTH_FILE=path, **env))
        return proc, truth.read(path)


class SimWorkloadsTest(unittest.TestCase):
    def test_train_loop_prints_one_checksum_per_step_and_exits_zero(self):
        proc, lines = run_with_truth([workload("train_loop"), "--steps", "3"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        steps = [l for l in proc.stdout.splitlines() if l.startswith("train step")]
        self.assertEqual(len(steps), 3)
        self.assertEqual(len(set(l.split()[-1] for l in steps)), 3, "each step copies back different data")
        self.assertTrue(proc.stdout.endswith("done steps=3\n"))
        self.assertEqual(len(truth.of_type(lines, "kernel")), 18)

    def test_train_loop_flags_change_what_reaches_the_device(self):
        proc, lines = run_with_truth([workload("train_loop"), "--steps", "2", "--alloc-in-loop", "--d2h-mid-step",
                                      "--pageable", "--tiny", "--kernels-per-step", "10"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        allocs = truth.of_type(lines, "mem_alloc")
        self.assertEqual(sum(1 for a in allocs if a["bytes"] == 4 << 20), 2, "--alloc-in-loop: one 4 MiB per step")
        self.assertEqual(len(truth.api(lines, "cudaMemcpy")), 2, "--d2h-mid-step: one sync copy per step")
        kinds = {(c["copy_kind"], c["src_kind"], c["dst_kind"]) for c in truth.of_type(lines, "memcpy")}
        self.assertIn((truth.HTOD, truth.PAGEABLE, truth.DEVICE), kinds)
        self.assertIn((truth.DTOH, truth.DEVICE, truth.PAGEABLE), kinds)
        kernels = truth.of_type(lines, "kernel")
        self.assertEqual(len(kernels), 20)
        self.assertEqual({k["name"] for k in kernels}, {"_Z11tiny_kernelPf"})
        self.assertEqual({tuple(k["grid"]) for k in kernels}, {(1, 1, 1)})

    def test_train_loop_output_is_deterministic_across_runs(self):
        first = harness.run([workload("train_loop"), "--steps", "3"], harness.sim_env())
        second = harness.run([workload("train_loop"), "--steps", "3"], harness.sim_env())
        self.assertEqual(first.stdout, second.stdout)

    def test_train_loop_exit_signal_and_exit_code_flags(self):
        exited = harness.run([workload("train_loop"), "--steps", "5", "--exit-at", "2"], harness.sim_env())
        self.assertEqual(exited.returncode, 3)
        self.assertIn("exit(3) at step 2", exited.stdout)
        raised = harness.run([workload("train_loop"), "--steps", "5", "--raise-at", "1:TERM"], harness.sim_env())
        self.assertEqual(raised.returncode, -15)
        coded = harness.run([workload("train_loop"), "--steps", "1", "--exit-code", "7"], harness.sim_env())
        self.assertEqual(coded.returncode, 7)

    def test_after_fork_the_child_gets_initialization_errors_and_the_parent_continues(self):
        proc, lines = run_with_truth([workload("train_loop"), "--steps", "3", "--fork-at", "1"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        child_steps = [l for l in proc.stdout.splitlines() if l.startswith("child step")]
        self.assertEqual(child_steps, [f"child step {i}: cudaErrorInitializationError" for i in range(3)])
        self.assertIn("child exited 0", proc.stdout)
        self.assertEqual(sum(1 for l in proc.stdout.splitlines() if l.startswith("train step")), 3)
        parent = {l["pid"] for l in truth.of_type(lines, "kernel")}
        self.assertEqual(len(parent), 1, "only the parent ran device work")
        child_calls = [l for l in truth.api(lines, "cudaMemcpyAsync") if l["pid"] not in parent]
        self.assertEqual([c["result"] for c in child_calls], [3, 3, 3])
        self.assertEqual(len(truth.of_type(lines, "kernel")), 3 * 6, "the parent's steps all ran")

    def test_multithread_runs_every_launch_in_order_on_its_own_stream(self):
        proc, lines = run_with_truth([workload("multithread"), "--threads", "16", "--launches", "25"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("threads=16 launches=25 waves=1 failures=0", proc.stdout)
        kernels = truth.of_type(lines, "kernel")
        self.assertEqual(len(kernels), 16 * 25)
        streams = truth.by_stream(kernels)
        self.assertEqual(len(streams), 16)
        for ops in streams.values():
            ops.sort(key=lambda o: o["start_ns"])
            for previous, op in zip(ops, ops[1:]):
                self.assertGreaterEqual(op["start_ns"], previous["end_ns"])
        threads = {l["thread"] for l in truth.api(lines, "__cudaLaunchKernel")}
        self.assertEqual(len(threads), 16)

    def test_runtime_api_workload_round_trips_data_on_the_sim(self):
        proc, lines = run_with_truth([workload("runtime_api")])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("round trip ok", proc.stdout)
        self.assertIn("failures=0", proc.stdout)
        names = {k["name"] for k in truth.of_type(lines, "kernel")}
        self.assertEqual(names, {"_ZN3ops4fillEPffi", "_Z5saxpyfPKfPfi"})
        self.assertEqual(len(truth.api(lines, "cudaLaunchKernel")), 1)
        self.assertEqual(len(truth.api(lines, "cudaLaunchKernelExC")), 1)
        self.assertEqual(len(truth.api(lines, "cuLaunchKernelEx", "driver")), 1)

    def test_ctypes_rtld_local_load_runs_on_the_sim(self):
        proc, lines = run_with_truth([sys.executable, workload("ctypes_driver.py"), "--steps", "3"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("run_steps(3) = 55278", proc.stdout)
        self.assertEqual(len(truth.of_type(lines, "kernel")), 3)


class SimWithLibprofTest(unittest.TestCase):
    def test_train_loop_stdout_and_exit_code_are_identical_with_and_without_libprof(self):
        if not os.path.exists(harness.LIBPROF_SO):
            self.skipTest("libprof.so not built")
        args = [workload("train_loop"), "--steps", "6", "--exit-code", "5"]
        bare = harness.run(args, harness.sim_env())
        with tempfile.TemporaryDirectory() as out:
            profiled = harness.run(args, harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR=out))
        self.assertEqual(bare.returncode, 5, bare.stderr)
        self.assertEqual(profiled.returncode, bare.returncode, profiled.stderr)
        self.assertEqual(profiled.stdout, bare.stdout)


class NoDriverTest(unittest.TestCase):
    def assert_every_call_failed_with_35(self, stdout):
        results = [l for l in stdout.splitlines() if " -> " in l]
        self.assertGreaterEqual(len(results), 10)
        for line in results:
            self.assertTrue(line.split(" -> ")[1].startswith("35"), line)

    def test_real_libcudart_without_a_driver_fails_fast_with_insufficient_driver(self):
        lib64 = os.path.join(harness.CUDA_HOME, "lib64")
        if not glob.glob(os.path.join(lib64, "libcudart.so.13*")):
            self.skipTest("no toolkit libcudart.so.13")
        if glob.glob("/dev/nvidia[0-9]*"):
            self.skipTest("a real GPU is present")
        env = harness.clean_env(LD_LIBRARY_PATH=lib64)
        began = time.monotonic()
        proc = harness.run([workload("runtime_api")], env)
        self.assertLess(time.monotonic() - began, 10.0)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_every_call_failed_with_35(proc.stdout)
        self.assertIn("cudaGetLastError -> 35 (cudaErrorInsufficientDriver)", proc.stdout)

    def test_sim_no_driver_behaves_like_the_real_runtime_without_a_driver(self):
        proc, lines = run_with_truth([workload("runtime_api")], SIM_NO_DRIVER=1)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assert_every_call_failed_with_35(proc.stdout)
        self.assertIn("cudaGetLastError -> 35 (cudaErrorInsufficientDriver)", proc.stdout)
        init = truth.api(lines, "cuInit", "driver")
        self.assertEqual([c["result"] for c in init], [100])  # CUDA_ERROR_NO_DEVICE, tried once
        self.assertEqual(truth.of_type(lines, *truth.DEVICE_OPS), [])
        self.assertEqual(truth.api(lines, "cuMemAlloc_v2"), [], "nothing reaches the driver after cuInit fails")

    def test_sim_no_driver_train_loop_stops_with_its_error_message(self):
        proc = harness.run([workload("train_loop"), "--steps", "2"], harness.sim_env(SIM_NO_DRIVER=1))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("CUDA driver version is insufficient for CUDA runtime version (35)", proc.stderr)


if __name__ == "__main__":
    harness.main()
