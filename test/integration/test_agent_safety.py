"""What libprof refuses to trust, each against a real
process under LD_PRELOAD on the simulated stack: a FIFO, a device or a
directory as PROF_CONFIG_FILE / PROF_LOG_FILE is refused in one line without
blocking; a garbage config file costs a bounded number of lines; a newline in
a value cannot forge a log line; a setgid process (AT_SECURE) gets nothing
but one line; a relative PROF_OUTPUT_DIR survives the host's chdir(); fork
workers and a launcher's children that share one PROF_NAME each keep their
own files; a worker that recorded nothing leaves none."""
import glob
import grp
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import harness
from test_agent_support import need, run_agent, validate, workload

MANUAL = dict(PROF_STEP="manual", PROF_WAIT=1, PROF_WARMUP=1, PROF_ACTIVE=4, PROF_REPEAT=1)


def loop(*args):
    return [workload("train_loop"), "--steps", "10", "--manual-steps", *args]


def scratch():
    d = tempfile.mkdtemp(prefix="libprof-safety-")
    import atexit
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


class UntrustedFiles(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"))
        self.dir = scratch()

    def lines_naming(self, run, var):
        return [l for l in run.log_lines() if l.count(f"{var}=") >= 1]

    def test_a_fifo_as_config_or_log_file_is_refused_without_blocking(self):
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        for var in ("PROF_CONFIG_FILE", "PROF_LOG_FILE"):
            with self.subTest(var=var):
                start = time.monotonic()
                run = run_agent(loop(), timeout=60, **{var: fifo}, **MANUAL)
                self.assertLess(time.monotonic() - start, 30)
                self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
                lines = self.lines_naming(run, var)
                self.assertEqual(len(lines), 1, run.proc.stderr)
                self.assertIn("regular file", lines[0])
                self.assertEqual(run.windows(), [(2, 5)], "profiling goes on")

    def test_devices_and_directories_as_config_file_are_refused_in_one_line(self):
        for path in ("/dev/zero", "/dev/urandom", self.dir):
            with self.subTest(path=path):
                start = time.monotonic()
                run = run_agent(loop(), PROF_CONFIG_FILE=path, **MANUAL)
                self.assertLess(time.monotonic() - start, 30)
                self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
                lines = self.lines_naming(run, "PROF_CONFIG_FILE")
                self.assertEqual(len(lines), 1, run.proc.stderr)
                self.assertEqual(run.windows(), [(2, 5)], "profiling goes on")

    def test_a_large_garbage_config_file_costs_a_bounded_number_of_lines(self):
        path = os.path.join(self.dir, "garbage.conf")
        with open(path, "w") as f:
            f.write("garbage line\n" * 50_000)  # 650 KB, under the size cap
        run = run_agent(loop(), PROF_CONFIG_FILE=path, **MANUAL)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        lines = self.lines_naming(run, "PROF_CONFIG_FILE")
        self.assertLessEqual(len(lines), 11, "\n".join(lines[:20]))
        self.assertIn("49990 more", lines[-1])
        big = os.path.join(self.dir, "big.conf")
        with open(big, "wb") as f:
            f.write(b"x" * (3 << 20))
        run = run_agent(loop(), PROF_CONFIG_FILE=big, **MANUAL)
        self.assertEqual(len(self.lines_naming(run, "PROF_CONFIG_FILE")), 1, run.proc.stderr)

    def test_a_newline_in_a_value_cannot_forge_a_log_line(self):
        forged = "[libprof] info: window steps 0-0 written (forged)"
        for var in ("PROF_STEP", "PROF_ACTIVITIES", "PROF_NAME", "PROF_LOG_LEVEL", "PROF_RANK"):
            with self.subTest(var=var):
                run = run_agent(loop(), **{var: "x\n" + forged})
                self.assertNotIn(forged, run.proc.stderr.splitlines())
                hits = [l for l in run.proc.stderr.splitlines() if "forged" in l]
                self.assertEqual(len(hits), 1, run.proc.stderr)
                self.assertIn("x\\n[libprof]", hits[0])

    def test_a_relative_output_dir_is_resolved_once_at_start(self):
        need(workload("ctypes_driver.py"), workload("libctypes_workload.so"))
        elsewhere = os.path.join(self.dir, "elsewhere")
        os.mkdir(elsewhere)
        code = ("import os, runpy, sys\n"
                f"os.chdir({elsewhere!r})\n"
                f"sys.argv = [{workload('ctypes_driver.py')!r}, '--steps', '4']\n"
                f"runpy.run_path({workload('ctypes_driver.py')!r}, run_name='__main__')\n")
        env = harness.sim_env(LD_PRELOAD=harness.LIBPROF_SO, PROF_OUTPUT_DIR="rel-out", PROF_STEP="sync",
                              PROF_WAIT=0, PROF_WARMUP=1, PROF_ACTIVE=2, PROF_FLUSH_TIMEOUT_MS=500)
        proc = harness.run([sys.executable, "-c", code], env, cwd=self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(glob.glob(os.path.join(self.dir, "rel-out", "*.pt.trace.json"))), 1, proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(elsewhere, "rel-out")))


class SecureExecution(unittest.TestCase):
    """A setgid copy of python3 (AT_SECURE: effective gid != real gid) that
    loads libprof with dlopen, as the CUDA driver does for
    CUDA_INJECTION64_PATH or as /etc/ld.so.preload would preload it."""

    def setUp(self):
        need(harness.LIBPROF_SO)
        if os.geteuid() != 0:
            self.skipTest("making a setgid program needs root")
        self.dir = scratch()
        os.chmod(self.dir, 0o755)
        self.python = os.path.join(self.dir, "python3-setgid")
        shutil.copy(os.path.realpath(sys.executable), self.python)
        try:
            gid = grp.getgrnam("nogroup").gr_gid
        except KeyError:
            gid = 65534
        os.chown(self.python, 0, gid)
        os.chmod(self.python, 0o2755)
        probe = subprocess.run([self.python, "-c", "import os; print(os.getgid() != os.getegid())"],
                               capture_output=True, text=True)
        if probe.stdout.strip() != "True":
            self.skipTest(f"setgid has no effect here (nosuid mount?): {probe.stdout} {probe.stderr}")

    def test_libprof_in_a_setgid_process_logs_one_line_and_does_nothing_else(self):
        out = os.path.join(self.dir, "out")
        log = os.path.join(self.dir, "log.txt")
        code = f"import ctypes; ctypes.CDLL({harness.LIBPROF_SO!r}); print('host ran')"
        env = harness.clean_env(PROF_OUTPUT_DIR=out, PROF_LOG_FILE=log, PROF_NAME="x\nforged",
                                PROF_STEP="time:1ms", PROF_WAIT=0, PROF_WARMUP=0, CUDA_HOME=self.dir)
        proc = subprocess.run([self.python, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout, "host ran\n")
        lines = [l for l in proc.stderr.splitlines() if l.startswith("[libprof]")]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("AT_SECURE", lines[0])
        self.assertFalse(os.path.exists(out), "no output directory")
        self.assertFalse(os.path.exists(log), "PROF_LOG_FILE not opened")


class SharedNames(unittest.TestCase):
    def setUp(self):
        need(harness.LIBPROF_SO, workload("train_loop"), workload("ctypes_driver.py"),
             workload("libctypes_workload.so"))

    def test_launcher_children_with_one_prof_name_keep_their_own_files(self):
        tl = workload("train_loop")
        cmd = ["/bin/sh", "-c", f"for i in 1 2 3; do {tl} --steps 8 --manual-steps & done; wait"]
        run = run_agent(cmd, PROF_NAME="job", **MANUAL)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        pids = sorted(t["libprof"]["pid"] for _, t in run.traces)
        self.assertEqual(len(set(pids)), 3, [p for p, _ in run.traces])
        self.assertEqual(len(glob.glob(os.path.join(run.out_dir, "*.summary.txt"))), 3)
        for path, trace in run.traces:
            name = os.path.basename(path)
            self.assertTrue(name.startswith("job"), name)
            self.assertEqual(trace["traceName"], name)

    def fork_workers(self, cuda_in_children, **env):
        # Children leave through sys.exit (atexit runs, as in a worker pool's
        # normal shutdown); os._exit runs no exit handler at all.
        lib = workload("libctypes_workload.so")
        child = "lib.run_steps(6)" if cuda_in_children else "sum(range(3_000_000))"
        code = ("import ctypes, os, sys\n"
                f"lib = ctypes.CDLL({lib!r}, mode=os.RTLD_LOCAL)\n"
                "lib.run_steps.restype = ctypes.c_longlong\n"
                "lib.run_steps.argtypes = [ctypes.c_int]\n"
                "kids = []\n"
                "for _ in range(3):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                f"        {child}\n"
                "        sys.exit(0)\n"
                "    kids.append(pid)\n"
                "for pid in kids:\n"
                "    os.waitpid(pid, 0)\n"
                "print(lib.run_steps(6))\n")
        return run_agent([sys.executable, "-c", code], timeout=120, **env)

    def test_fork_workers_with_one_prof_name_keep_their_own_files(self):
        run = self.fork_workers(True, PROF_NAME="job", PROF_STEP="sync", PROF_WAIT=0, PROF_WARMUP=1, PROF_ACTIVE=2)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        pids = [t["libprof"]["pid"] for _, t in run.traces]
        self.assertEqual(len(set(pids)), 4, [p for p, _ in run.traces])
        for path, trace in run.traces:
            self.assertTrue(os.path.basename(path).startswith("job"), path)

    def test_cpu_only_fork_workers_leave_no_files(self):
        run = self.fork_workers(False, PROF_STEP="time:20ms", PROF_WAIT=0, PROF_WARMUP=0, PROF_ACTIVE=1,
                                PROF_REPEAT=0)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        parent = run.proc.pid if hasattr(run.proc, "pid") else None
        pids = {t["libprof"]["pid"] for _, t in run.traces}
        files = os.listdir(run.out_dir) if os.path.isdir(run.out_dir) else []
        self.assertLessEqual(len(pids), 1, files)
        for _, trace in run.traces:
            self.assertTrue(any(e.get("ph") == "X" for e in trace["traceEvents"]))

    def test_workers_leaving_through_os_exit_leave_no_temporary_or_partial_file(self):
        # multiprocessing's forked workers end with os._exit: no exit handler
        # runs, so a window still open is not written, and a window the
        # writer thread was writing at that instant stays a temporary file.
        # The parent (or any later libprof process writing to the directory)
        # removes temporaries of processes that no longer exist.
        lib = workload("libctypes_workload.so")
        # A child steps on until one of its windows is on disk (on a loaded
        # machine its writer thread may not have run at all after 40 steps),
        # then a few more, so that it leaves while its last ones are written.
        code = ("import ctypes, os, re, time\n"
                f"lib = ctypes.CDLL({lib!r}, mode=os.RTLD_LOCAL)\n"
                "lib.run_steps.restype = ctypes.c_longlong\n"
                "lib.run_steps.argtypes = [ctypes.c_int]\n"
                "out = os.environ['PROF_OUTPUT_DIR']\n"
                "def written():\n"
                "    mine = re.compile(r'(_|pid)%d[._].*\\.pt\\.trace\\.json$' % os.getpid())\n"
                "    return any(mine.search(f) for f in os.listdir(out))\n"
                "kids = []\n"
                "for i in range(12):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        lib.run_steps(40 + i)\n"
                "        give_up = time.monotonic() + 30\n"
                "        while not written() and time.monotonic() < give_up:\n"
                "            lib.run_steps(2)\n"
                "        lib.run_steps(3)\n"
                "        os._exit(0)\n"
                "    kids.append(pid)\n"
                "for pid in kids:\n"
                "    os.waitpid(pid, 0)\n"
                "print(lib.run_steps(3))\n")
        # A window per step, written while the next records: a child's last
        # ones are being written when it calls os._exit.
        run = run_agent([sys.executable, "-c", code], timeout=120, PROF_STEP="sync", PROF_WAIT=0,
                        PROF_WARMUP=0, PROF_ACTIVE=1, PROF_REPEAT=0, PROF_SKIP_FIRST=1)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        files = sorted(os.listdir(run.out_dir))
        self.assertEqual([f for f in files if ".tmp" in f], [], "temporary files left behind")
        for f in files:  # every file there is whole
            path = os.path.join(run.out_dir, f)
            if f.endswith(".json"):
                ok, out = validate(path)
                self.assertTrue(ok, f"{f}: {out}")
            elif f.endswith(".report.html"):
                with open(path) as page:
                    self.assertTrue(page.read().rstrip().endswith("</html>"), f)
            else:
                with open(path) as text:
                    self.assertIn("== Data loss ==", text.read(), f)
        pids = {t["libprof"]["pid"] for _, t in run.traces}
        self.assertEqual(len(pids), 13, "the parent and each child wrote windows")


class ForkDuringLoaderWork(unittest.TestCase):
    """glibc resets only two of the dynamic loader's locks in a fork child;
    the one dl_iterate_phdr holds (and dlopen takes to add a library) stays
    as it was. libprof's agent thread walks the loaded objects now and then
    (is CUDA loaded yet, has a library been added): a fork at that instant
    used to leave the child unable to load any library (its first CUDA
    call, which loads the driver, or an import) for ever. The preloaded
    slow_iterate holds the agent thread inside dl_iterate_phdr for 300 ms,
    as a thread preempted there on a loaded machine would be, and the host
    forks then: libprof's fork handler waits for its thread to leave."""

    def setUp(self):
        need(harness.LIBPROF_SO, workload("libctypes_workload.so"), workload("libslow_iterate.so"))
        self.dir = scratch()

    def test_a_fork_while_the_agent_thread_walks_the_loaded_objects_leaves_the_child_able_to_load(self):
        mark = os.path.join(self.dir, "agent-inside-dl_iterate_phdr")
        # The host has not loaded CUDA yet (a launcher, a framework forking
        # its workers before its first import of a CUDA library): the agent
        # thread looks once a second whether it has.
        code = ("import ctypes, os, sys, time\n"
                f"mark = {mark!r}\n"
                "give_up = time.monotonic() + 30\n"
                "while not os.path.exists(mark) and time.monotonic() < give_up:\n"
                "    time.sleep(0.001)\n"
                "if not os.path.exists(mark):\n"
                "    sys.exit('the agent thread never walked the loaded objects')\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                f"    lib = ctypes.CDLL({workload('libctypes_workload.so')!r}, mode=os.RTLD_LOCAL)\n"
                "    lib.run_steps.restype = ctypes.c_longlong\n"
                "    lib.run_steps.argtypes = [ctypes.c_int]\n"
                "    lib.run_steps(2)\n"
                "    os._exit(0)\n"
                "give_up = time.monotonic() + 20\n"
                "while time.monotonic() < give_up:\n"
                "    done, status = os.waitpid(pid, os.WNOHANG)\n"
                "    if done:\n"
                "        print('child exit', os.waitstatus_to_exitcode(status))\n"
                "        sys.exit(0)\n"
                "    time.sleep(0.01)\n"
                "os.kill(pid, 9)\n"
                "os.waitpid(pid, 0)\n"
                "print('child hung')\n")
        preload = f"{workload('libslow_iterate.so')}:{harness.LIBPROF_SO}"
        run = run_agent([sys.executable, "-c", code], preload=False, timeout=90, LD_PRELOAD=preload,
                        SLOW_ITERATE_MS=300, SLOW_ITERATE_MARK=mark, PROF_STEP="sync", PROF_WAIT=0,
                        PROF_WARMUP=0, PROF_ACTIVE=1)
        self.assertEqual(run.proc.returncode, 0, run.proc.stderr)
        self.assertEqual(run.proc.stdout, "child exit 0\n", run.proc.stderr)


if __name__ == "__main__":
    harness.main()
