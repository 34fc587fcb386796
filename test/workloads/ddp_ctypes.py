"""A data-parallel training-like loop driven from Python through ctypes, one
process per rank (torchrun's variables; the unique id goes from rank 0 to the
others over TCP, as in nccl_ctypes.py). Per step: an optional host delay on
one rank (WORKLOAD_SLOW_RANK, WORKLOAD_SLOW_US) in Python, forward kernels,
then per bucket backward kernels and an all-reduce of its gradients on the
model's stream, and a synchronize. The kernels come from
libctypes_workload.so, loaded RTLD_LOCAL as PyTorch loads its CUDA code.
Usage: ddp_ctypes.py [--steps N] [--buckets B]"""
import argparse
import ctypes
import os
import sys
import time

import nccl_ctypes as common  # the rank, the loaded libraries and the unique id exchange


def train_step(lib, nccl, cudart, comm, stream, grads, elems, buckets, slow):
    if slow:
        time.sleep(slow)  # this rank's host is late
    if lib.wl_layer(4) != 0:  # forward
        sys.exit("forward failed")
    for b in range(buckets):
        if lib.wl_layer(2) != 0:  # this bucket's backward
            sys.exit("backward failed")
        bucket = ctypes.c_void_p(grads.value + b * elems * 4)
        common.must("ncclAllReduce", nccl.ncclAllReduce(bucket, bucket, ctypes.c_size_t(elems), common.ncclFloat32,
                                                        common.ncclSum, comm, stream))
    if cudart.cudaStreamSynchronize(stream) != 0:
        sys.exit("synchronize failed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=45)
    parser.add_argument("--buckets", type=int, default=3)
    parser.add_argument("--elems", type=int, default=1 << 18)
    args = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    lib = ctypes.CDLL(os.path.join(here, "libctypes_workload.so"), mode=os.RTLD_LOCAL)
    lib.wl_stream.restype = ctypes.c_void_p
    nccl, cudart = common.nccl, common.cudart
    if lib.wl_init() != 0:
        sys.exit("wl_init failed")
    stream = ctypes.c_void_p(lib.wl_stream())
    uid = common.UniqueId()
    if common.RANK == 0:
        common.must("ncclGetUniqueId", nccl.ncclGetUniqueId(ctypes.byref(uid)))
    uid = common.exchange(uid)
    comm = ctypes.c_void_p()
    common.must("ncclCommInitRank", nccl.ncclCommInitRank(ctypes.byref(comm), common.WORLD, uid, common.RANK))
    grads = ctypes.c_void_p()
    if cudart.cudaMalloc(ctypes.byref(grads), ctypes.c_size_t(args.elems * 4 * args.buckets)) != 0:
        sys.exit("cudaMalloc failed")
    common.must("ncclBroadcast", nccl.ncclBroadcast(grads, grads, ctypes.c_size_t(args.elems), common.ncclFloat32, 0,
                                                    comm, stream))
    slow_rank = int(os.environ.get("WORKLOAD_SLOW_RANK", "-1"))
    slow = int(os.environ.get("WORKLOAD_SLOW_US", "0")) / 1e6 if common.RANK == slow_rank else 0
    for _ in range(args.steps):
        train_step(lib, nccl, cudart, comm, stream, grads, args.elems, args.buckets, slow)
    common.must("ncclCommDestroy", nccl.ncclCommDestroy(comm))
    print(f"rank {common.RANK} of {common.WORLD}: done steps={args.steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
