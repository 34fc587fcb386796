"""Every process of a job accounted for, each against real Python processes
under LD_PRELOAD on the simulated stack: a multiprocessing worker forked
before the parent loaded CUDA is profiled like any process, and its window
is written although it leaves through os._exit; a worker forked after the
parent loaded CUDA writes host calls only and says why in one line; _exit
keeps its status; the default file names carry the program's name."""
import glob
import os
import re
import socket
import sys
import unittest

import harness
from test_agent_support import need, run_agent, workload

# A worker pool the way multiprocessing builds one with the fork method: the
# parent has not touched CUDA; each worker opens the CUDA runtime itself,
# runs `steps` iterations of two copies and a synchronize, and returns (then
# multiprocessing's fork start method ends it with os._exit).
POOL = """
import ctypes, multiprocessing as mp, os, sys
STEPS = int(sys.argv[1])
PARENT_LOADS_CUDA = sys.argv[2] == "1"
if PARENT_LOADS_CUDA:
    ctypes.CDLL("{cudart}")
def work(_):
    # Called through the global scope, as a linked program (or PyTorch's
    # libraries) calls the runtime: libprof's wrappers see each call.
    ctypes.CDLL("{cudart}", mode=os.RTLD_GLOBAL)
    rt = ctypes.CDLL(None)
    dev = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(1 << 16)) == 0
    host = ctypes.create_string_buffer(1 << 16)
    for _ in range(STEPS):
        rt.cudaMemcpy(dev, host, ctypes.c_size_t(1 << 16), 1)
        rt.cudaMemcpy(host, dev, ctypes.c_size_t(1 << 16), 2)
        rt.cudaDeviceSynchronize()
    return os.getpid()
if __name__ == "__main__":
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=work, args=(i,)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    print("workers", " ".join(str(p.pid) for p in procs), "exit codes", [p.exitcode for p in procs])
    sys.exit(0 if all(p.exitcode == 0 for p in procs) else 1)
"""


def worker_pids(run):
    m = re.search(r"workers (\d+) (\d+)", run.proc.stdout)
    return {int(m.group(1)), int(m.group(2))} if m else set()


class ForkedWorkers(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO)
        self.script = os.path.join(harness.scratch_dir(self, "libprof-processes-"), "pool.py")
        with open(self.script, "w") as f:
            f.write(POOL.replace("{cudart}", harness.CUDART_SONAME))

    def pool(self, steps, parent_loads_cuda, **env):
        return run_agent([sys.executable, self.script, str(steps), "1" if parent_loads_cuda else "0"], timeout=180,
                         **env)

    def test_a_worker_forked_before_cuda_gets_a_whole_profile_although_it_leaves_through_os_exit(self):
        # The window is still open when the worker returns (10 steps of a
        # 100-step window): only libprof's _exit writes it.
        run = self.pool(10, False, PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=100)
        self.assertEqual(run.proc.returncode, 0, run.proc.stdout + run.proc.stderr)
        workers = worker_pids(run)
        self.assertEqual(len(workers), 2, run.proc.stdout)
        by_pid = {t["libprof"]["pid"]: t for _, t in run.traces}
        self.assertEqual(set(by_pid), workers, "each worker wrote its window; the parent (no CUDA) none")
        for pid, trace in by_pid.items():
            meta = trace["libprof"]
            self.assertTrue(meta["window"]["partial"], meta["window"])
            # Like any process: CUPTI in the worker, its copies timed on the GPU.
            self.assertEqual(meta["cupti_mode"], "activity")
            self.assertTrue(meta["gpu_timings"])
            copies = [e for e in trace["traceEvents"] if e.get("cat") == "gpu_memcpy"]
            self.assertEqual(len(copies), 2 * 8, f"steps 2-9 of worker {pid}: two copies each")
            calls = [e for e in trace["traceEvents"] if e.get("name") == "cudaMemcpy"]
            self.assertEqual(len(calls), 2 * 8)

    def test_a_worker_of_a_parent_that_loaded_cuda_records_host_calls_and_says_why_in_one_line(self):
        run = self.pool(10, True, PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=100)
        self.assertEqual(run.proc.returncode, 0, run.proc.stdout + run.proc.stderr)
        workers = worker_pids(run)
        by_pid = {t["libprof"]["pid"]: t for _, t in run.traces}
        self.assertEqual(set(by_pid), workers)
        for trace in by_pid.values():
            self.assertFalse(trace["libprof"]["gpu_timings"])
            self.assertIn("fork child", trace["libprof"]["cupti_mode"])
        why = [l for l in run.log_lines() if "forked from pid" in l]
        self.assertEqual(len(why), 2, run.proc.stderr)
        for line in why:
            self.assertIn("spawn", line)

    def test_a_worker_that_ends_before_its_window_says_so_in_one_line(self):
        run = self.pool(3, False, PROF_STEP="sync", PROF_WAIT=30, PROF_WARMUP=2, PROF_ACTIVE=5)
        self.assertEqual(run.proc.returncode, 0, run.proc.stdout + run.proc.stderr)
        self.assertEqual(run.traces, [])
        lines = [l for l in run.log_lines() if "before the first window" in l]
        self.assertEqual(len(lines), 2, run.proc.stderr)
        for line in lines:
            self.assertIn("PROF_WAIT=30", line)
            self.assertNotIn("PROF_SKIP_FIRST=0", line)


class UnderscoreExit(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("libctypes_workload.so"))

    def test_os_exit_keeps_its_status_and_writes_the_open_window(self):
        code = ("import ctypes, os\n"
                f"lib = ctypes.CDLL({workload('libctypes_workload.so')!r}, mode=os.RTLD_LOCAL)\n"
                "lib.run_steps.restype = ctypes.c_longlong\n"
                "lib.run_steps.argtypes = [ctypes.c_int]\n"
                "lib.run_steps(6)\n"
                "os._exit(7)\n")
        run = run_agent([sys.executable, "-c", code], PROF_STEP="sync", PROF_WAIT=0, PROF_WARMUP=1, PROF_ACTIVE=50)
        self.assertEqual(run.proc.returncode, 7, run.proc.stderr)
        self.assertEqual(len(run.traces), 1, run.proc.stderr)
        self.assertTrue(run.traces[0][1]["libprof"]["window"]["partial"])

    def test_a_failed_exec_in_a_vfork_child_leaves_the_parent_and_its_window_alone(self):
        # Another child program, loading the library as the one above does.
        # subprocess uses vfork: the child shares the parent's memory until it
        # execs, and calls _exit when the exec fails. libprof's _exit must do
        # nothing there (the agent belongs to the parent).
        code = ("import ctypes, os, subprocess\n"
                f"lib = ctypes.CDLL({workload('libctypes_workload.so')!r}, mode=os.RTLD_LOCAL)\n"
                "lib.run_steps.restype = ctypes.c_longlong\n"
                "lib.run_steps.argtypes = [ctypes.c_int]\n"
                "lib.run_steps(3)\n"
                "for _ in range(20):\n"
                "    try:\n"
                "        subprocess.run(['/nonexistent/program'])\n"
                "    except OSError:\n"
                "        pass\n"
                "print(lib.run_steps(6))\n")
        run = run_agent([sys.executable, "-c", code], PROF_STEP="sync", PROF_WAIT=0, PROF_WARMUP=1, PROF_ACTIVE=4)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.windows(), [(1, 4)], run.proc.stderr)
        self.assertFalse(run.traces[0][1]["libprof"]["window"]["partial"])


class FileNames(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))

    def test_default_names_carry_host_program_and_pid(self):
        run = run_agent([workload("train_loop"), "--steps", "10"], PROF_STEP="sync", PROF_WAIT=1, PROF_WARMUP=1,
                        PROF_ACTIVE=2)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(len(run.traces), 1, run.proc.stderr)
        path, trace = run.traces[0]
        pid = trace["libprof"]["pid"]
        self.assertEqual(os.path.basename(path), f"{socket.gethostname()}_train_loop_{pid}.2.pt.trace.json")
        self.assertEqual(trace["libprof"]["process"], "train_loop")
        self.assertTrue(glob.glob(os.path.join(run.out_dir, f"*_train_loop_{pid}.2.summary.txt")))


if __name__ == "__main__":
    harness.main()
