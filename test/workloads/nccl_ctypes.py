"""Every NCCL entry point the simulated libnccl.so.2 offers, called from
Python through ctypes, one process per rank (torchrun's variables; the
unique id goes from rank 0 to the others over TCP at MASTER_ADDR:MASTER_PORT).
Prints one JSON line per check to stdout; exit code 1 if a call that must
succeed fails. Used by test_sim_nccl.py and by the multi-rank agent tests."""
import ctypes
import json
import os
import socket
import sys
import time

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
nccl = ctypes.CDLL("libnccl.so.2")
cudart = ctypes.CDLL("libcudart.so.13")

ncclFloat32, ncclInt32, ncclFloat16, ncclBfloat16, ncclUint8 = 7, 2, 6, 9, 1
ncclSum, ncclMax, ncclAvg = 0, 2, 4
P = ctypes.c_void_p


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def out(**kw):
    print(json.dumps(kw), flush=True)


def must(name, result):
    if result != 0:
        err = nccl.ncclGetErrorString
        err.restype = ctypes.c_char_p
        print(f"rank {RANK}: {name} -> {result} {err(result).decode()}", file=sys.stderr)
        sys.exit(1)


def exchange(uid):
    port = int(os.environ.get("MASTER_PORT", "29500"))
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    if RANK == 0:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
            s.listen(WORLD)
            for _ in range(WORLD - 1):
                c, _ = s.accept()
                c.sendall(bytes(uid))
                c.close()
        return uid
    for _ in range(3000):
        try:
            with socket.create_connection((addr, port)) as c:
                data = b""
                while len(data) < 128:
                    chunk = c.recv(128 - len(data))
                    if not chunk:
                        break
                    data += chunk
                return UniqueId.from_buffer_copy(data)
        except OSError:
            time.sleep(0.01)
    sys.exit("no unique id")


def main():
    v = ctypes.c_int()
    must("ncclGetVersion", nccl.ncclGetVersion(ctypes.byref(v)))
    out(check="version", value=v.value)
    uid = UniqueId()
    if RANK == 0:
        must("ncclGetUniqueId", nccl.ncclGetUniqueId(ctypes.byref(uid)))
    uid = exchange(uid)
    comm = P()
    must("ncclCommInitRank", nccl.ncclCommInitRank(ctypes.byref(comm), WORLD, uid, RANK))
    n, r, d = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    must("count", nccl.ncclCommCount(comm, ctypes.byref(n)))
    must("rank", nccl.ncclCommUserRank(comm, ctypes.byref(r)))
    must("device", nccl.ncclCommCuDevice(comm, ctypes.byref(d)))
    out(check="comm", count=n.value, rank=r.value, device=d.value)
    stream = P()
    assert cudart.cudaStreamCreate(ctypes.byref(stream)) == 0
    buf, buf2 = P(), P()
    assert cudart.cudaMalloc(ctypes.byref(buf), 1 << 22) == 0
    assert cudart.cudaMalloc(ctypes.byref(buf2), (1 << 22) * WORLD) == 0
    st = stream
    must("AllReduce", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(1024), ncclFloat32, ncclSum, comm, st))
    must("AllReduce bf16 max", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(4096), ncclBfloat16, ncclMax, comm, st))
    must("Broadcast", nccl.ncclBroadcast(buf, buf, ctypes.c_size_t(2048), ncclInt32, 0, comm, st))
    must("Bcast", nccl.ncclBcast(buf, ctypes.c_size_t(64), ncclUint8, WORLD - 1, comm, st))
    must("Reduce", nccl.ncclReduce(buf, buf, ctypes.c_size_t(512), ncclFloat16, ncclAvg, 0, comm, st))
    must("AllGather", nccl.ncclAllGather(buf, buf2, ctypes.c_size_t(1000), ncclFloat32, comm, st))
    must("ReduceScatter", nccl.ncclReduceScatter(buf2, buf, ctypes.c_size_t(1000), ncclFloat32, ncclSum, comm, st))
    must("AlltoAll", nccl.ncclAlltoAll(buf2, buf2, ctypes.c_size_t(256), ncclFloat32, comm, st))
    # A ring exchange in one group: one SendRecv kernel per rank.
    must("GroupStart", nccl.ncclGroupStart())
    must("Send", nccl.ncclSend(buf, ctypes.c_size_t(300), ncclFloat32, (RANK + 1) % WORLD, comm, st))
    must("Recv", nccl.ncclRecv(buf2, ctypes.c_size_t(300), ncclFloat32, (RANK - 1) % WORLD, comm, st))
    must("GroupEnd", nccl.ncclGroupEnd())
    # Two collectives in one group: launched at ncclGroupEnd.
    must("GroupStart", nccl.ncclGroupStart())
    must("AllReduce", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(100), ncclFloat32, ncclSum, comm, st))
    must("AllReduce", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(200), ncclFloat32, ncclSum, comm, st))
    must("GroupEnd", nccl.ncclGroupEnd())
    assert cudart.cudaStreamSynchronize(stream) == 0
    # Errors NCCL documents: no collective is launched.
    out(check="errors",
        bad_type=nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(8), 99, ncclSum, comm, st),
        bad_op=nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(8), ncclFloat32, 77, comm, st),
        bad_root=nccl.ncclBroadcast(buf, buf, ctypes.c_size_t(8), ncclFloat32, WORLD, comm, st),
        bad_peer=nccl.ncclSend(buf, ctypes.c_size_t(8), ncclFloat32, -1, comm, st),
        null_comm=nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(8), ncclFloat32, ncclSum, None, st),
        group_end_alone=nccl.ncclGroupEnd())
    last = nccl.ncclGetLastError
    last.restype = ctypes.c_char_p
    out(check="last_error", text=last(comm).decode())
    # Split: even and odd ranks, reversed order by key.
    sub = P()
    must("ncclCommSplit", nccl.ncclCommSplit(comm, RANK % 2, -RANK, ctypes.byref(sub), None))
    must("count", nccl.ncclCommCount(sub, ctypes.byref(n)))
    must("rank", nccl.ncclCommUserRank(sub, ctypes.byref(r)))
    out(check="split", count=n.value, rank=r.value)
    must("AllReduce sub", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(777), ncclFloat32, ncclSum, sub, st))
    assert cudart.cudaStreamSynchronize(stream) == 0
    must("Finalize", nccl.ncclCommFinalize(sub))
    must("Destroy", nccl.ncclCommDestroy(sub))
    must("Finalize", nccl.ncclCommFinalize(comm))
    must("Destroy", nccl.ncclCommDestroy(comm))
    out(check="done", rank=RANK)


if __name__ == "__main__":
    main()
