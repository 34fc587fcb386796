"""Reading the simulated stack's truth log (see README.md, "Truth log") and
the timing model's numbers, for the integration tests."""
import json
import os
import re
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
PEER_BYTES_PER_NS = 50  # copies between two devices' memory (PTOP)
MEMSET_LATENCY_NS = 1000
MEMSET_BYTES_PER_NS = 2000
# Synchronize calls: return >= max(start + idle cost, work end + wake-up).
STREAM_SYNC_IDLE_NS = 8000
CONTEXT_SYNC_IDLE_NS = 14000
SYNC_WAKE_NS = 5000

# CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind / sync types.
HTOD, DTOH, DTOD, HTOH, PTOP = 1, 2, 8, 9, 10
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
    elif kind == PTOP:
        bw = PEER_BYTES_PER_NS
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


# An "api" line as hub.cpp writes it, fields in that order (README.md "Truth log").
_API_LINE = re.compile(rb'\{"type":"api","pid":(\d+),"domain":"(runtime|driver)","name":"([^"\\]*)","cbid":\d+,'
                       rb'"correlation":(\d+),"outer_correlation":(\d+),"thread":(\d+),"start_ns":(\d+),"end_ns":(\d+),'
                       rb'"start_rep_ns":(\d+),"end_rep_ns":(\d+)')


def read_large(path, types=()):
    """A large truth log (hundreds of thousands of calls) read several times
    faster than read(): the outermost calls (correlation == outer_correlation)
    with every field of an "api" line but `cbid`, `symbol` and `result`, taken
    with one regular expression over the file (json.loads per line is what
    costs), and the lines of the given op types parsed as JSON. Returns
    (outermost api lines, op lines). Raises ValueError if an api line does not
    have the layout hub.cpp writes, so a change there fails loudly here."""
    if not os.path.exists(path):
        return [], []
    with open(path, "rb") as f:
        data = f.read()
    matches = _API_LINE.findall(data)
    expected = data.count(b'{"type":"api",')
    if len(matches) != expected:
        raise ValueError(f"{path}: {expected - len(matches)} of {expected} api lines not in hub.cpp's layout")
    names = {}
    api_lines = [{"type": "api", "pid": int(pid), "domain": "runtime" if domain == b"runtime" else "driver",
                  "name": names.setdefault(name, name.decode()), "correlation": int(corr),
                  "outer_correlation": int(corr), "thread": int(thread), "start_ns": int(s), "end_ns": int(e),
                  "start_rep_ns": int(s_rep), "end_rep_ns": int(e_rep)}
                 for pid, domain, name, corr, outer, thread, s, e, s_rep, e_rep in matches if corr == outer]
    ops = []
    if types:
        for t in types:  # a literal start: the regex engine searches for it, fast
            ops.extend(json.loads(line) for line in re.findall(rb'\{"type":"%s",[^\n]*' % re.escape(t.encode()), data))
    return api_lines, ops


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
