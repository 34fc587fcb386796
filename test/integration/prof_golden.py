"""What `prof validate`, `prof summary` and `prof merge` print and write for a
fixed set of inputs: the real Kineto traces, variants of one broken on
purpose (deterministically), and a merge of all three. The outputs of the
document-parsing `prof` (before the readers streamed) are kept in
test/integration/prof_golden/; test_prof_streaming.py checks that the
streaming readers give the same, byte for byte (merge: the same JSON value).

Regenerate (only when a change of output is intended):
    python3 test/integration/prof_golden.py --write PROF_BINARY
"""
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_DIR = os.path.join(HERE, "prof_golden")
REAL = ["simple_add.pt.trace.json.gz", "sampled_rank0.pt.trace.json.gz", "training_rank0.pt.trace.json.gz"]


def break_trace(trace, strict):
    """Every 1,700th event broken in one of five ways, the same each time."""
    events = trace["traceEvents"]
    for n, i in enumerate(range(0, len(events), 1700)):
        e = events[i]
        way = n % 5
        if way == 0:
            e.pop("tid", None)
        elif way == 1:
            e["ts"] = -5
        elif way == 2 and "dur" in e:
            e["dur"] = e["dur"] * 50 + 1000
        elif way == 3:
            e.update(ph="s", id=1000000 + n, cat="ac2g")
        else:
            e.update(ph="X", cat="kernel", dur=1)
            e.get("args", {}).pop("stream", None)
    if strict:
        trace["libprof"] = {}
    return trace


def make_inputs(kineto_dir, workdir):
    """Copies the real traces and writes the broken variants into workdir;
    returns the file names (relative to workdir)."""
    for name in REAL:
        shutil.copy(os.path.join(kineto_dir, name), os.path.join(workdir, name))
    with gzip.open(os.path.join(kineto_dir, "training_rank0.pt.trace.json.gz"), "rt") as f:
        source = f.read()
    for name, strict in (("broken.json", False), ("broken_strict.json", True)):
        with open(os.path.join(workdir, name), "w") as f:
            json.dump(break_trace(json.loads(source), strict), f)
    return REAL + ["broken.json", "broken_strict.json"]


def canonical_digest(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        value = json.load(f)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run_all(prof, workdir, names):
    """{golden file name: text} for every command on the inputs."""
    def run(*args):
        r = subprocess.run([prof, *args], cwd=workdir, capture_output=True, text=True, timeout=300)
        return f"exit {r.returncode}\n{r.stdout}"

    out = {}
    for name in names:
        out[f"validate.{name}.txt"] = run("validate", name)
    out["summary.real.txt"] = run("summary", *REAL)
    for name in names:
        out[f"summary.{name}.txt"] = run("summary", name)
    merged = "merged.pt.trace.json"
    status = run("merge", *REAL, "-o", merged)
    out["merge.real.txt"] = status + "sha256 " + canonical_digest(os.path.join(workdir, merged)) + "\n"
    out["summary.merged.txt"] = run("summary", merged)
    out["validate.merged.txt"] = run("validate", merged)
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--write":
        print(__doc__)
        return 2
    kineto = os.environ.get("KINETO_TRACES", "/work/shared/data/kineto-traces")
    work = tempfile.mkdtemp(prefix="prof-golden-")
    try:
        outputs = run_all(os.path.abspath(sys.argv[2]), work, make_inputs(kineto, work))
    finally:
        shutil.rmtree(work)
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    for name, text in outputs.items():
        with open(os.path.join(GOLDEN_DIR, name), "w") as f:
            f.write(text)
    print(f"wrote {len(outputs)} files to {GOLDEN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
