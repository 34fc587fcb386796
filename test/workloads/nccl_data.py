"""The bytes NCCL's collectives and point-to-point calls move, checked from
Python through ctypes on the simulated NCCL, one process per rank
(torchrun's variables; rank r uses device LOCAL_RANK when the process sees
several). Every rank fills its send buffer with values that name it, runs
each collective and compares its receive buffer with what NCCL documents
(nccl.h, "Collective Operations" in NCCL's user guide). One rank
(WORKLOAD_SLOW_RANK, default the last) arrives late to every collective, so
each result is written while the others' work behind it is queued: a copy to
pinned host memory and a memset enqueued right after a collective must see
its result, in stream order. Prints one JSON line per check
({"check": name, "ok": bool, ...}); exit code 1 if a call fails."""
import ctypes
import json
import os
import struct
import time

import nccl_ctypes as common  # rank, world, the libraries, the unique id exchange

nccl, cudart, RANK, WORLD = common.nccl, common.cudart, common.RANK, common.WORLD
SLOW = int(os.environ.get("WORKLOAD_SLOW_RANK", str(WORLD - 1)))
T = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5, "f16": 6, "f32": 7, "f64": 8,
     "bf16": 9, "e4m3": 10, "e5m2": 11}
OP = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
FMT = {"int8": "b", "uint8": "B", "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "f16": "e", "f32": "f",
       "f64": "d"}
H2D, D2H = 1, 2


def bf16_bits(x):
    """bfloat16 of x, rounded to nearest even (its bits)."""
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def pack(kind, values):
    if kind == "bf16":
        return b"".join(struct.pack("<H", bf16_bits(v)) for v in values)
    if kind in ("e4m3", "e5m2"):
        return bytes(values)  # given as bits
    return struct.pack("<%d%s" % (len(values), FMT[kind]), *values)


def unpack(kind, data):
    if kind == "bf16":
        return [bf16_value(b) for b in struct.unpack("<%dH" % (len(data) // 2), data)]
    if kind in ("e4m3", "e5m2"):
        return list(data)
    size = struct.calcsize(FMT[kind])
    return list(struct.unpack("<%d%s" % (len(data) // size, FMT[kind]), data))


def rounded(kind, x):
    """x stored in the type and read back (the step-by-step rounding)."""
    if kind == "bf16":
        return bf16_value(bf16_bits(x))
    if kind in ("f16", "f32"):
        return struct.unpack("<" + FMT[kind], struct.pack("<" + FMT[kind], x))[0]
    return x


class Rank:
    def __init__(self):
        if int(os.environ.get("SIM_DEVICE_COUNT", "1")) > 1:
            assert cudart.cudaSetDevice(int(os.environ.get("LOCAL_RANK", "0"))) == 0
        uid = common.UniqueId()
        if RANK == 0:
            common.must("ncclGetUniqueId", nccl.ncclGetUniqueId(ctypes.byref(uid)))
        uid = common.exchange(uid)
        self.comm = ctypes.c_void_p()
        common.must("ncclCommInitRank", nccl.ncclCommInitRank(ctypes.byref(self.comm), WORLD, uid, RANK))
        self.stream = ctypes.c_void_p()
        assert cudart.cudaStreamCreate(ctypes.byref(self.stream)) == 0
        self.host = ctypes.c_void_p()  # pinned: the copy back is queued, not waited for
        assert cudart.cudaMallocHost(ctypes.byref(self.host), ctypes.c_size_t(1 << 20)) == 0

    def device(self, data):
        p = ctypes.c_void_p()
        assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(max(len(data), 1))) == 0
        buf = ctypes.create_string_buffer(data, len(data))
        assert cudart.cudaMemcpy(p, buf, ctypes.c_size_t(len(data)), H2D) == 0
        return p

    def read(self, p, size, after=None):
        """The buffer's bytes as a copy queued on the collective's stream
        right behind it sees them (after(): more work queued first)."""
        if after:
            after()
        assert cudart.cudaMemcpyAsync(self.host, p, ctypes.c_size_t(size), D2H, self.stream) == 0
        assert cudart.cudaStreamSynchronize(self.stream) == 0
        return ctypes.string_at(self.host, size)

    def late(self):
        if RANK == SLOW:
            time.sleep(0.05)  # the others' results wait for this rank's bytes


def say(check, ok, **kw):
    print(json.dumps(dict(check=check, ok=bool(ok), rank=RANK, **kw)), flush=True)


def all_reduce_cases(rk):
    n = 8
    cases = [
        ("f32", "sum", lambda r, i: r + 0.25 * i), ("f64", "prod", lambda r, i: 1.5 + r + i),
        ("int32", "max", lambda r, i: (r * 7 + i * 3) % 11 - 5), ("uint8", "min", lambda r, i: 200 - r - i),
        ("int64", "avg", lambda r, i: 10 * r + i - 3), ("uint32", "sum", lambda r, i: 0xFFFFFFF0 + r),  # wraps
        ("f16", "sum", lambda r, i: 0.1 * (r + 1) + i), ("bf16", "avg", lambda r, i: 1.0 / (r + 1) + i),
        ("int8", "prod", lambda r, i: (r + 2) * (1 if i % 2 else -1)),
    ]
    for kind, op, f in cases:
        mine = [rounded(kind, f(RANK, i)) for i in range(n)]
        p = rk.device(pack(kind, mine))
        rk.late()
        common.must("ncclAllReduce", nccl.ncclAllReduce(p, p, ctypes.c_size_t(n), T[kind], OP[op], rk.comm, rk.stream))
        got = unpack(kind, rk.read(p, len(pack(kind, mine))))
        want = []
        for i in range(n):
            acc = rounded(kind, f(0, i))
            for r in range(1, WORLD):
                x = rounded(kind, f(r, i))
                acc = {"sum": acc + x, "avg": acc + x, "prod": acc * x, "max": max(acc, x), "min": min(acc, x)}[op]
                if kind in FMT and kind.startswith(("int", "uint")):
                    bits = 8 * struct.calcsize(FMT[kind])
                    acc &= (1 << bits) - 1
                    if kind.startswith("int") and acc >= 1 << (bits - 1):
                        acc -= 1 << bits
                acc = rounded(kind, acc)
            if op == "avg":
                acc = int(acc / WORLD) if kind.startswith(("int", "uint")) else rounded(kind, acc / WORLD)
            want.append(acc)
        say(f"AllReduce {kind} {op}", got == want, got=got, want=want)


def fp8_saturation(rk):
    # e4m3: 192 (0x74) summed in rank order is 384, then 576, past e4m3's
    # largest finite value 448 (0x7e): NCCL's FP8 arithmetic saturates there.
    # e5m2: 49152 (0x7a) saturates at 57344 (0x7b). 0.5 (0x30; e5m2 0x38)
    # four times is 2.0 (0x40 in both).
    for kind, bits, want in (("e4m3", [0x74, 0x30], [0x7E, 0x40]), ("e5m2", [0x7A, 0x38], [0x7B, 0x40])):
        p = rk.device(bytes(bits))
        rk.late()
        common.must("ncclAllReduce", nccl.ncclAllReduce(p, p, ctypes.c_size_t(2), T[kind], OP["sum"], rk.comm,
                                                        rk.stream))
        got = list(rk.read(p, 2))
        say(f"AllReduce {kind} sum", WORLD != 4 or got == want, got=got, want=want)


def rooted_and_gathers(rk):
    n = 6
    # Broadcast from rank 1 (out of place).
    src = rk.device(pack("int32", [100 * RANK + i for i in range(n)]))
    dst = rk.device(pack("int32", [-1] * n))
    rk.late()
    common.must("ncclBroadcast", nccl.ncclBroadcast(src, dst, ctypes.c_size_t(n), T["int32"], 1, rk.comm, rk.stream))
    got = unpack("int32", rk.read(dst, 4 * n))
    say("Broadcast", got == [100 + i for i in range(n)], got=got)
    # Reduce (average) to rank 0: the others' receive buffers are left alone.
    src = rk.device(pack("f32", [float(RANK * 4 + i) for i in range(n)]))
    dst = rk.device(pack("f32", [-7.0] * n))
    rk.late()
    common.must("ncclReduce", nccl.ncclReduce(src, dst, ctypes.c_size_t(n), T["f32"], OP["avg"], 0, rk.comm,
                                              rk.stream))
    got = unpack("f32", rk.read(dst, 4 * n))
    mean = [sum(r * 4 + i for r in range(WORLD)) / WORLD for i in range(n)]
    say("Reduce", got == (mean if RANK == 0 else [-7.0] * n), got=got)
    # AllGather: rank r's block at r.
    src = rk.device(pack("uint64", [RANK * 1000 + i for i in range(n)]))
    dst = rk.device(bytes(8 * n * WORLD))
    rk.late()
    common.must("ncclAllGather", nccl.ncclAllGather(src, dst, ctypes.c_size_t(n), T["uint64"], rk.comm, rk.stream))
    got = unpack("uint64", rk.read(dst, 8 * n * WORLD))
    say("AllGather", got == [r * 1000 + i for r in range(WORLD) for i in range(n)], got=got)
    # ReduceScatter: the sum of every rank's block `RANK`.
    src = rk.device(pack("f32", [float(RANK + 10 * b + i) for b in range(WORLD) for i in range(n)]))
    dst = rk.device(bytes(4 * n))
    rk.late()
    common.must("ncclReduceScatter", nccl.ncclReduceScatter(src, dst, ctypes.c_size_t(n), T["f32"], OP["sum"],
                                                            rk.comm, rk.stream))
    got = unpack("f32", rk.read(dst, 4 * n))
    say("ReduceScatter", got == [float(sum(r + 10 * RANK + i for r in range(WORLD))) for i in range(n)], got=got)
    # AlltoAll: block j of rank r goes to rank j's block r.
    src = rk.device(pack("int32", [RANK * 100 + j * 10 + i for j in range(WORLD) for i in range(n)]))
    dst = rk.device(bytes(4 * n * WORLD))
    rk.late()
    common.must("ncclAlltoAll", nccl.ncclAlltoAll(src, dst, ctypes.c_size_t(n), T["int32"], rk.comm, rk.stream))
    got = unpack("int32", rk.read(dst, 4 * n * WORLD))
    say("AlltoAll", got == [r * 100 + RANK * 10 + i for r in range(WORLD) for i in range(n)], got=got)


def point_to_point(rk):
    n = 5
    src = rk.device(pack("int32", [RANK * 10 + i for i in range(n)]))
    dst = rk.device(bytes(4 * n))
    rk.late()
    common.must("ncclGroupStart", nccl.ncclGroupStart())
    common.must("ncclSend", nccl.ncclSend(src, ctypes.c_size_t(n), T["int32"], (RANK + 1) % WORLD, rk.comm,
                                          rk.stream))
    common.must("ncclRecv", nccl.ncclRecv(dst, ctypes.c_size_t(n), T["int32"], (RANK - 1) % WORLD, rk.comm,
                                          rk.stream))
    common.must("ncclGroupEnd", nccl.ncclGroupEnd())
    got = unpack("int32", rk.read(dst, 4 * n))
    say("SendRecv", got == [((RANK - 1) % WORLD) * 10 + i for i in range(n)], got=got)


def stream_order(rk):
    # A memset queued behind the all-reduce runs after it: it wins.
    p = rk.device(pack("f32", [1.0] * 4))
    rk.late()
    common.must("ncclAllReduce", nccl.ncclAllReduce(p, p, ctypes.c_size_t(4), T["f32"], OP["sum"], rk.comm, rk.stream))
    got = unpack("f32", rk.read(p, 16, after=lambda: cudart.cudaMemsetAsync(p, 0, ctypes.c_size_t(8), rk.stream)))
    say("memset after AllReduce", got == [0.0, 0.0, float(WORLD), float(WORLD)], got=got)


def foreign_buffer(rk):
    # Memory the sim never allocated (NVIDIA's kernel would fault): the call
    # is accepted, the bytes are left alone, and the truth line says so.
    buf = ctypes.create_string_buffer(pack("f32", [2.0] * 4), 16)
    rk.late()
    common.must("ncclAllReduce", nccl.ncclAllReduce(buf, buf, ctypes.c_size_t(4), T["f32"], OP["sum"], rk.comm,
                                                    rk.stream))
    assert cudart.cudaStreamSynchronize(rk.stream) == 0
    say("foreign buffer untouched", unpack("f32", buf.raw) == [2.0] * 4)


def main():
    rk = Rank()
    all_reduce_cases(rk)
    fp8_saturation(rk)
    rooted_and_gathers(rk)
    point_to_point(rk)
    stream_order(rk)
    foreign_buffer(rk)
    common.must("ncclCommDestroy", nccl.ncclCommDestroy(rk.comm))
    say("done", True)


if __name__ == "__main__":
    main()
