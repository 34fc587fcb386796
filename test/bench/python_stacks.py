"""Python stacks benchmark (run_bench.py's "python stacks" step; also runs
alone: python_stacks.py --build-dir BUILD [--rounds N] [--smoke]).

Figures, each the median over rounds (Debian's python3):

  python_warm_ns   cost of one capture with 30 Python frames above the call, a
                   stack seen before (timed in C around the capture itself:
                   bench_python_capture loaded into the interpreter)
  python_cold_ns   the same for a stack seen for the first time: M distinct
                   functions (each its own code object) capture once each
  python_loop_ratio  python_model.py's training loop on the simulated stack,
                   recording with stacks vs recording without (loop wall time)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

DEPTH = 30


def child(lib_path, n_warm, m_cold):
    """In a plain interpreter (no agent): the capture's own cost, timed in C
    around PythonStacks::Capture (bench_python_capture). Prints one JSON line."""
    import ctypes
    lib = ctypes.CDLL(lib_path)
    lib.bench_capture.restype = ctypes.c_uint64
    lib.bench_capture.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)]
    source = "\n".join(f"def cold_{i}(lib, sid):\n    return lib.bench_capture(1, sid)\n" for i in range(m_cold))
    scope = {}
    exec(compile(source, "cold_sites.py", "exec"), scope)
    colds = [scope[f"cold_{i}"] for i in range(m_cold)]
    sid = ctypes.c_uint32()
    sid_ref = ctypes.byref(sid)

    def descend(k, fn):
        if k > 1:
            return descend(k - 1, fn)
        return fn()

    def warm():
        lib.bench_capture(16, sid_ref)  # first sight, not counted
        return lib.bench_capture(n_warm, sid_ref), lib.bench_stack_depth(sid.value)

    def cold():
        return sum(f(lib, sid_ref) for f in colds), lib.bench_stack_depth(sid.value)

    warm_ns, warm_depth = descend(DEPTH - 3, warm)  # + warm, child, main, <module>: at least 30
    cold_ns, cold_depth = descend(DEPTH - 4, cold)  # + <genexpr>, cold_i, cold, child, main, <module>
    print(json.dumps({"warm_ns": warm_ns, "warm_depth": warm_depth, "cold_ns": cold_ns, "cold_depth": cold_depth}))


def run(build, rounds=5, smoke=False, python=None):
    """Returns {figure id: dict(value, p10, p90, n, unit, note)}."""
    python = python or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    workloads = os.path.join(build, "test", "workloads")
    lib = os.path.join(workloads, "libctypes_workload.so")
    model = os.path.join(workloads, "python_model.py")
    capture = os.path.join(build, "test", "bench", "libbench_python_capture.so")
    n_warm, m_cold, steps = (2000, 200, 20) if smoke else (200000, 4000, 400)
    rounds = 1 if smoke else rounds
    out = tempfile.mkdtemp(prefix="libprof-pybench-")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "agent", "libprof.so"),
               LD_LIBRARY_PATH=os.path.join(build, "test", "sim", "lib"), PROF_OUTPUT_DIR=out,
               PROF_STEP="manual", PROF_WAIT="1", PROF_WARMUP="0", PROF_ACTIVE="1", PROF_LOG_LEVEL="warn",
               PROF_BUFFER_MB="1024")
    warm, cold, loop = [], [], []
    for _ in range(rounds):
        t = {}
        for mode in ("auto", "0"):
            t[mode] = {}
            m = subprocess.run([python, model, "--steps", str(steps), "--time"],
                               env=dict(env, PROF_PYTHON=mode, PROF_WAIT="0", PROF_ACTIVE=str(steps + 1)),
                               capture_output=True, text=True, timeout=600)
            if m.returncode != 0:
                raise RuntimeError(f"python_model ({mode}) exited {m.returncode}: {m.stderr[-600:]}")
            t[mode]["loop_ns"] = int(m.stdout.split("loop_ns=")[1].split()[0])
        loop.append(t["auto"]["loop_ns"] / t["0"]["loop_ns"])
        p = subprocess.run([python, os.path.abspath(__file__), "--child", capture, str(n_warm), str(m_cold)],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"python stacks child exited {p.returncode}: {p.stderr[-600:]}")
        c = json.loads(p.stdout.strip().splitlines()[-1])
        if c["warm_depth"] < DEPTH or c["cold_depth"] < DEPTH:
            raise RuntimeError(f"captured stacks shallower than {DEPTH} frames: {c}")
        warm.append(c["warm_ns"] / n_warm)
        cold.append(c["cold_ns"] / m_cold)
    subprocess.run(["rm", "-rf", out])

    def stats(s):
        s = sorted(s)
        return {"value": statistics.median(s), "p10": s[int(0.1 * (len(s) - 1))], "p90": s[int(0.9 * (len(s) - 1))],
                "n": len(s)}

    return {
        "python_warm_ns": dict(stats(warm), unit="ns/call", note=f"{DEPTH} frames, {n_warm} launches per round"),
        "python_cold_ns": dict(stats(cold), unit="ns/call", note=f"{DEPTH} frames, {m_cold} new stacks per round"),
        "python_loop_ratio": dict(stats(loop), unit="x", note=f"python_model.py, {steps} steps recorded"),
    }


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    for k, v in run(os.path.abspath(args.build_dir), args.rounds, args.smoke).items():
        print(f"{k:20s} {v['value']:12.1f} {v['unit']:8s} (p10 {v['p10']:.1f}, p90 {v['p90']:.1f}) {v['note']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
