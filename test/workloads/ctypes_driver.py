"""Loads libctypes_workload.so with RTLD_LOCAL, as PyTorch loads libcudart,
and prints run_steps(N). Usage: ctypes_driver.py [--steps N] [--lib PATH]"""
import argparse
import ctypes
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "libctypes_workload.so"))
    args = parser.parse_args()
    lib = ctypes.CDLL(args.lib, mode=os.RTLD_LOCAL)
    lib.run_steps.restype = ctypes.c_longlong
    lib.run_steps.argtypes = [ctypes.c_int]
    result = lib.run_steps(args.steps)
    print(f"run_steps({args.steps}) = {result}")
    return 0 if result >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
