"""A training loop driven from Python: each iteration calls run_steps(1) of
libctypes_workload.so (loaded with RTLD_LOCAL, as PyTorch loads its CUDA
code) after a short host pause (the data loader). At the start of each
iteration it writes {"type":"iteration","index":i,"pid":P} to the simulated
stack's truth log through simhub_truth_line, found in the already loaded
libcuda.so.1 (RTLD_NOLOAD); that is no CUDA call, so libprof never sees it.
Usage: py_loop.py [--iters N] [--lib PATH]"""
import argparse
import ctypes
import os
import sys
import time


def truth_writer():
    try:
        cuda = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        fn = cuda.simhub_truth_line
    except (OSError, AttributeError):
        return lambda line: None  # a real driver: no truth log
    fn.argtypes = [ctypes.c_char_p]
    fn.restype = None
    return lambda line: fn(line.encode())


# ctypes_driver.py's argument handling and loading, with this loop's own options.
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=80)
    parser.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "libctypes_workload.so"))
    args = parser.parse_args()
    lib = ctypes.CDLL(args.lib, mode=os.RTLD_LOCAL)
    lib.run_steps.restype = ctypes.c_longlong
    lib.run_steps.argtypes = [ctypes.c_int]
    mark = None
    total = 0
    for i in range(args.iters):
        if mark is None and i > 0:
            mark = truth_writer()  # libcuda.so.1 is loaded once CUDA was used
        if mark is not None:
            mark('{"type":"iteration","index":%d,"pid":%d}' % (i, os.getpid()))
        time.sleep(0.0003)
        result = lib.run_steps(1)
        if result < 0:
            print(f"run_steps failed: {result}")
            return 1
        total += result
    print(f"iterations={args.iters} total={total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
