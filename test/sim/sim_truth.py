"""Reading the simulated stack's truth log (see README.md, "Truth log") and
the timing model's numbers, for the integration tests."""
import json
import os
import subprocess
import sys

# The timing model (driver/timing.h); tests check durations against these.
LAUNCH_LATENCY_NS = 2000
KERNEL_BASE_NS = 2000
KERNEL_PER_BLOCK_NS = 10
COPY_LATENCY_NS = 1500
PINNED_BYTES_PER_NS = 25
PAGEABLE_BYTES_PER_NS = 10
DEVICE_BYTES_PER_NS = 1000
MEMSET_LATENCY_NS = 1000
MEMSET_BYTES_PER_NS = 2000
# Synchronize calls: return >= max(start + idle cost, work end + wake-up).
STREAM_SYNC_IDLE_NS = 8000
CONTEXT_SYNC_IDLE_NS = 14000
SYNC_WAKE_NS = 5000

# CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind / sync types.
HTOD, DTOH, DTOD, HTOH = 1, 2, 8, 9
PAGEABLE, PINNED, DEVICE, MANAGED = 1, 2, 3, 5
SYNC_EVENT, SYNC_STREAM_WAIT_EVENT, SYNC_STREAM, SYNC_CONTEXT = 1, 2, 3, 4
LEGACY_STREAM = 7
INVALID_ID = 0xFFFFFFFF

DEVICE_OPS = ("kernel", "memcpy", "memset")


def ceil_div(a, b):
    return -(-a // b)


def kernel_ns(op):
    blocks = op["grid"][0] * op["grid"][1] * op["grid"][2]
    return KERNEL_BASE_NS + KERNEL_PER_BLOCK_NS * blocks


def copy_ns(op):
    kind, nbytes = op["copy_kind"], op["bytes"]
    if kind == HTOD:
        bw = PINNED_BYTES_PER_NS if op["src_kind"] == PINNED else PAGEABLE_BYTES_PER_NS
    elif kind == DTOH:
        bw = PINNED_BYTES_PER_NS if op["dst_kind"] == PINNED else PAGEABLE_BYTES_PER_NS
    elif kind == DTOD:
        bw = DEVICE_BYTES_PER_NS
    else:
        bw = PAGEABLE_BYTES_PER_NS
    return COPY_LATENCY_NS + ceil_div(nbytes, bw)


def memset_ns(op):
    return MEMSET_LATENCY_NS + ceil_div(op["bytes"], MEMSET_BYTES_PER_NS)


def read(path):
    """All lines of a truth log, parsed, in file order."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def of_type(lines, *types):
    return [l for l in lines if l["type"] in types]


def api(lines, name=None, domain=None):
    return [l for l in lines if l["type"] == "api"
            and (name is None or l["name"] == name)
            and (domain is None or l["domain"] == domain)]


def by_stream(ops):
    streams = {}
    for op in ops:
        streams.setdefault((op["pid"], op["stream"]), []).append(op)
    return streams
