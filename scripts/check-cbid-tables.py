#!/usr/bin/env python3
"""Developer check: are CUPTI's callback-id tables append-only between a
CUDA 12.x toolkit and the CUDA 13 one libprof is built with, and does
collectors/cupti/api_classes.cpp list every id whose name changed?

    scripts/check-cbid-tables.py OLD_HEADER [OLD_HEADER...]

OLD_HEADER: a 12.x cupti_runtime_cbid.h and cupti_driver_cbid.h (or any file
holding both enums, e.g. a concatenated cupti.h), fetched when you run the
check (pip download nvidia-cuda-cupti-cu12, or a CUDA 12 toolkit); nothing is
vendored. Exit 1 when an id was reused for another function or a renamed id
is missing from kCuda12RenamedRuntimeNames.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CUDA_INCLUDE = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")


def table(text, domain):
    ids = {}
    for name, value in re.findall(r"CUPTI_%s_TRACE_CBID_(\w+)\s*=\s*(\d+)" % domain, text):
        if name not in ("INVALID", "SIZE", "FORCE_INT"):
            ids[int(value)] = name
    return ids


def base(name):
    return re.sub(r"_v\d+$", "", name)


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    old = "".join(open(p, errors="replace").read() for p in paths)
    new = "".join(open(os.path.join(CUDA_INCLUDE, f)).read() for f in ("cupti_runtime_cbid.h", "cupti_driver_cbid.h"))
    listed = dict((int(i), n) for i, n in re.findall(r'\{(\d+), "(\w+)"\}',
                                                    open(os.path.join(ROOT, "collectors/cupti/api_classes.cpp")).read()))
    bad = 0
    for domain in ("RUNTIME", "DRIVER"):
        a, b = table(old, domain), table(new, domain)
        print(f"{domain}: old ids 1-{max(a)}, new ids 1-{max(b)}")
        for cbid, name in sorted(a.items()):
            if b.get(cbid) == name:
                continue
            if b.get(cbid) is None:
                print(f"  id {cbid} ({name}) is gone in the new table")
                bad += 1
            elif domain == "RUNTIME" and listed.get(cbid) == base(name):
                print(f"  id {cbid}: {base(name)} -> {base(b[cbid])} (listed)")
            else:
                print(f"  id {cbid}: {name} -> {b[cbid]} NOT LISTED in kCuda12RenamedRuntimeNames")
                bad += 1
    print("OK" if bad == 0 else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
