"""A larger job made from a small one: copies of each rank's trace and facts
file (<stem>.job.json) under other ranks, each copy's clock moved by its own
offset, as `prof merge` would meet the windows of a job with more ranks.

A trace copy changes only its distributedInfo's rank and world_size (in the
trace's head) and its baseTimeNanoseconds (at its end), which moves every
time in it; a facts copy changes its rank, label and every time. Rank r of
the larger job is a copy of rank r % len(originals)."""
import json
import os
import re

HEAD_BYTES = 1 << 16


def clock_offset_ns(rank):
    """The clock offset of copy `rank`: distinct, up to a few ms either way."""
    return ((rank * 7919) % 2000 - 1000) * 3001


def copy_trace(src, dst, rank, world):
    with open(src, "rb") as f:
        data = f.read()
    info = re.search(rb'"distributedInfo": \{"backend": "[^"]*", "rank": (\d+), "world_size": (\d+)',
                     data[:HEAD_BYTES])
    tail_at = max(0, len(data) - 4096)
    base = re.search(rb'"baseTimeNanoseconds":(\d+)', data[tail_at:])
    if info is None or base is None:
        raise ValueError(f"{src}: no distributedInfo rank in its head, or no baseTimeNanoseconds at its end")
    new_base = b"%d" % (int(base.group(1)) + clock_offset_ns(rank))
    with open(dst, "wb") as f:
        f.write(data[:info.start(1)] + b"%d" % rank + data[info.end(1):info.start(2)] + b"%d" % world +
                data[info.end(2):tail_at + base.start(1)] + new_base + data[tail_at + base.end(1):])


def copy_facts(facts, dst, rank):
    """`facts`: a facts file's JSON, as loaded."""
    shift = clock_offset_ns(rank)
    out = dict(facts, rank=rank, label=f"rank {rank}")
    out["steps"] = [[s[0], s[1] + shift, s[2] + shift, *s[3:6], s[6] + shift, *s[7:]] for s in facts["steps"]]
    out["collectives"] = [[key, start + shift, end + shift] for key, start, end in facts["collectives"]]
    with open(dst, "w") as f:
        json.dump(out, f, separators=(",", ":"))


def make_job(originals, out_dir, world, traces=True, facts=True):
    """originals: [(trace path, facts path)] of ranks 0..n-1. Writes
    rank<r>.pt.trace.json and rank<r>.job.json for r < world into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    loaded = []
    for _, facts_path in originals:
        with open(facts_path) as f:
            loaded.append(json.load(f))
    for r in range(world):
        k = r % len(originals)
        if traces:
            copy_trace(originals[k][0], os.path.join(out_dir, f"rank{r}.pt.trace.json"), r, world)
        if facts:
            copy_facts(loaded[k], os.path.join(out_dir, f"rank{r}.job.json"), r)
