"""torch.profiler and libprof on the same PyTorch training, in separate runs
on the simulated stack (build/test/sim/simrun, PyPI's torch from the tests'
venv): test/workloads/torch_train.py, a small transformer (one block, width
64, sequences of 32), seven iterations, each ending with torch.cuda.synchronize().

  - torch.profiler: --torch-profiler, ProfilerActivity.CPU and CUDA,
    with_stack=True, profile_memory=True,
    schedule(wait=2, warmup=1, active=3), prof.step() right after each
    iteration's synchronize: it records iterations 3-5 as ProfilerStep#3-5.
  - libprof, under LD_PRELOAD and under CUDA_INJECTION64_PATH: --sync-each-step,
    default settings but PROF_STEP=api:cudaDeviceSynchronize PROF_WAIT=2
    PROF_WARMUP=1 PROF_ACTIVE=3, which number the same iterations: the
    synchronize is the iteration's only cudaDeviceSynchronize, none comes
    before the loop, so step k is iteration k in both.

The one difference in where steps cut: an api: marker starts a step when the
call is entered, so the synchronize that ends iteration k is the first call
of libprof's step k+1, while prof.step() after it leaves it the last call of
torch.profiler's step k. Each step still holds one synchronize; the test says
which one each holds, from the truth log.

Per step, checked between torch.profiler's trace and libprof's (each mode):
equal multisets of kernel names, of copies and memsets (name, which says the
kind and memory kinds, and bytes), of runtime calls by name once the calls
Kineto leaves out (KINETO_LEAVES_OUT) are removed from libprof's and the
event polls (POLLS, whose number depends on timing) from both, each trace
holding exactly the polls its own run made (the truth log), and likewise
for new pinned blocks (which the polls decide) and the calls of the
DataLoader's pin-memory thread, which pins batches
ahead of the loop at times the scheduler decides, and of
(device op, launching runtime call's name) pairs; in both traces every
device op's duration is the truth log's, and the step's device ops are the
truth's iteration (told apart by the batch's copies). Where the two traces'
schemas differ in what HTA, Perfetto or TensorBoard read, the differences
are the ones listed in KINETO_ONLY_CATS, LIBPROF_ONLY_CATS and
KINETO_ONLY_ARGS (docs/real-programs.md says why).

Module paths (libprof's default): per step, the nn.Module calls on the main
thread nest as with_stack's "nn.Module: <Class>_<n>" events do (the same
calls, in the same order, at the same depths, the outermost named by the
same class), and each kernel the main thread launched belongs to the same
module call in both (the innermost around its launching call), its Module
argument that call's path; every kernel an operator launched inside a module
call, on autograd's thread too, carries a Module."""
import collections
import glob
import json
import os
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sim"))
import sim_truth as truth  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_train.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
STEPS, WAIT, WARMUP, ACTIVE = 7, 2, 1, 3
ACTIVE_STEPS = list(range(WAIT + WARMUP, WAIT + WARMUP + ACTIVE))
BATCH, SEQ_LEN = 8, 32
WORKLOAD_ARGS = ["--steps", str(STEPS), "--layers", "1", "--dim", "64", "--seq-len", str(SEQ_LEN),
                 "--batch", str(BATCH)]
# libprof's settings: its defaults but what aligns its steps with torch.profiler's.
LIBPROF_ALIGN = {"PROF_STEP": "api:cudaDeviceSynchronize", "PROF_WAIT": WAIT, "PROF_WARMUP": WARMUP,
                 "PROF_ACTIVE": ACTIVE}
# Runtime calls Kineto drops from its trace, as "very frequent and not very
# interesting", to keep the trace small (libkineto's isBlockListedRuntimeCbid,
# CuptiCbidRegistry in recent releases): the same list as test_torch_profiler_sim.py.
KINETO_LEAVES_OUT = {"cudaGetDevice", "cudaSetDevice", "cudaGetLastError", "cudaEventCreate",
                     "cudaEventCreateWithFlags", "cudaEventDestroy"}
# Calls whose count depends on how far the GPU is behind the host, not on
# the program: PyTorch's allocators poll the events of the blocks they freed
# (cudaEventQuery) until the GPU has passed them. Two runs make different
# numbers of them, so they are not compared between the runs: each trace
# holds exactly the polls its own run made within its steps (the truth log).
POLLS = {"cudaEventQuery"}
# PyTorch's pinned-memory cache hands out a freed block again only once the
# events recorded on it have completed (polled as above), so whether a
# pinned allocation needs a new cudaHostAlloc, on any thread, depends on
# timing too: the main thread made two in one run, at step 1 in one run and
# step 3 in another.
HOST_ALLOC = "cudaHostAlloc"
# The DataLoader's pin-memory thread pins the next batches while the loop
# runs (cudaPointerGetAttributes for is_pinned, cudaHostAlloc for a new
# pinned block, event polls): which step its calls fall in depends on the
# scheduler. The truth names it as the thread that asks whether a pointer is pinned.
PIN_CHECK = "cudaPointerGetAttributes"


def timing_dependent(lines):
    """Correlation ids of the runtime calls, in the truth, whose step
    depends on timing: event polls, new pinned blocks, and every call of the
    pin-memory thread."""
    pid = next(l["pid"] for l in lines if l["type"] == "api")
    calls = [l for l in truth.api(lines) if l["pid"] == pid and l["domain"] == "runtime"]
    pinners = {l["thread"] for l in calls if l["name"] == PIN_CHECK}
    assert len(pinners) == 1, f"threads checking for pinned memory: {pinners}"
    return {l["correlation"] for l in calls if l["name"] in POLLS or l["name"] == HOST_ALLOC
            or l["thread"] in pinners}

DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
# Where the two traces differ in what a consumer reads (HTA, Perfetto,
# TensorBoard); docs/real-programs.md, "torch.profiler and libprof on the same steps", says why.
# Categories only one of them writes:
KINETO_ONLY_CATS = {
    "fwdbwd": "flows from a forward operator to its backward one",
    "cuda_driver": "the driver calls under runtime launches; libprof's with PROF_ACTIVITIES=...,driver",
    "gpu_user_annotation": "ProfilerStep#N and record_function spans projected onto the stream",
    "Trace": "one slice spanning the trace",
}
LIBPROF_ONLY_CATS = {
    "cuda_sync": "CUPTI's synchronization records (Kineto's only with enable_cuda_sync_events)",
}
# Args Kineto writes on every event of a category and ours lacks.
_GRAPH_AND_CHANNEL = {"graph id", "graph node id", "channel", "channel_type"}
KINETO_ONLY_ARGS = {
    "kernel": {"queued", "priority", "occupancy"} | _GRAPH_AND_CHANNEL,
    "gpu_memcpy": _GRAPH_AND_CHANNEL,
    "gpu_memset": _GRAPH_AND_CHANNEL,
    # Kineto's own numbering of operators and threads; PyTorch's NVTX ranges carry neither.
    "cpu_op": {"Record function id", "Ev Idx"},
    # "External id" only where a CPU operator encloses the call; "cbid": the
    # calls libprof's wrappers record under LD_PRELOAD have no CUPTI record to
    # take one from, and the trace leaves it out in both modes so that both
    # modes write the same events.
    "cuda_runtime": {"cbid"},
    "user_annotation": {"External id", "Record function id", "Ev Idx"},
}
# Args of Kineto's [memory] events that libprof's lack: its own event index,
# and "finished", false on every one of them.
KINETO_ONLY_MEMORY_ARGS = {"Ev Idx", "finished"}


def run_torch_profiler(python, work):
    trace_path = os.path.join(work, "torch.pt.trace.json")
    truth_path = os.path.join(work, "torch.truth.jsonl")
    averages_path = os.path.join(work, "torch.key_averages.json")
    env = harness.clean_env(SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1")
    peaks_path = os.path.join(work, "torch.memory_peaks.json")
    proc = harness.run([SIMRUN, python, WORKLOAD, *WORKLOAD_ARGS, "--torch-profiler", trace_path, "--wait", str(WAIT),
                        "--warmup", str(WARMUP), "--active", str(ACTIVE), "--key-averages", averages_path,
                        "--profile-memory", "--memory-peaks", peaks_path, "--with-stack"],
                       env, timeout=300)
    trace = None
    if os.path.exists(trace_path):
        with open(trace_path) as f:
            trace = json.load(f)
    # What the run printed besides its trace: key_averages(), and the
    # memory peaks of each iteration (reset at each synchronize).
    printed = {}
    for key, path in (("key_averages", averages_path), ("memory_peaks", peaks_path)):
        if os.path.exists(path):
            with open(path) as f:
                printed[key] = json.load(f)
    return proc, trace, truth.read(truth_path), printed


def run_libprof(python, mode, work):
    out = os.path.join(work, mode)
    truth_path = os.path.join(work, mode + ".truth.jsonl")
    env = harness.clean_env(PROF_OUTPUT_DIR=out, SIM_TRUTH_FILE=truth_path, PYTHONUNBUFFERED="1", **LIBPROF_ALIGN)
    env[mode] = harness.LIBPROF_SO
    proc = harness.run([SIMRUN, python, WORKLOAD, *WORKLOAD_ARGS, "--sync-each-step"], env, timeout=300)
    traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
    trace = summary = None
    if len(traces) == 1:
        with open(traces[0]) as f:
            trace = json.load(f)
        with open(traces[0].replace(".pt.trace.json", ".summary.txt")) as f:
            summary = f.read()
    return proc, trace, truth.read(truth_path), summary


def operator_rows(summary):
    """The summary's "GPU time by operator" table: name -> (self GPU ns,
    total GPU ns, calls)."""
    lines = summary.split("== GPU time by operator", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    rows = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("("):
            continue
        pct, self_ns, total_ns, kernels, calls, cpu_ns, name = line.split(None, 6)
        rows[name] = (int(self_ns), int(total_ns), int(calls))
    return rows


def module_calls(trace, step):
    """The nn.Module calls on the main thread inside step `step` (their
    events, in call order) and, for each, its depth among them."""
    events = trace["traceEvents"]
    span = next(e for e in events if e.get("name") == f"ProfilerStep#{step}")
    calls = sorted((e for e in events if str(e.get("name", "")).startswith("nn.Module: ") and e.get("ph") == "X"
                    and e["tid"] == span["tid"] and span["ts"] <= e["ts"] < span["ts"] + span["dur"]),
                   key=lambda e: (e["ts"], -e["dur"]))
    depths, open_ends = [], []
    for e in calls:
        while open_ends and open_ends[-1] <= e["ts"]:
            open_ends.pop()
        depths.append(len(open_ends))
        open_ends.append(e["ts"] + e["dur"])
    return calls, depths


def kernels_by_module_call(trace, step, steps):
    """Per kernel of step `step` launched from the main thread: (kernel name,
    the index of the innermost module call around its launching call, or
    None), counted."""
    calls, _ = module_calls(trace, step)
    main = calls[0]["tid"] if calls else None
    out = collections.Counter()
    for kind, e in steps.step_ops[step]:
        launch = steps.calls[e["args"]["correlation"]]
        if kind != "kernel" or launch["tid"] != main:
            continue
        inside = [i for i, m in enumerate(calls) if m["ts"] <= launch["ts"] < m["ts"] + m["dur"]]
        out[(e["name"], max(inside, key=lambda i: calls[i]["ts"]) if inside else None)] += 1
    return out


class Steps:
    """A trace cut into its ProfilerStep#k spans: per step, the runtime calls
    made inside it (any thread) and the device ops those calls launched."""

    def __init__(self, trace):
        events = trace["traceEvents"]
        spans = sorted((e for e in events if e.get("cat") == "user_annotation"
                        and str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
        self.numbers = [int(s["name"].split("#")[1]) for s in spans]
        self.calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
        self.outside = []  # runtime calls in no step
        self.step_calls = collections.defaultdict(list)
        for call in self.calls.values():
            k = next((int(s["name"].split("#")[1]) for s in spans if s["ts"] <= call["ts"] < s["ts"] + s["dur"]), None)
            (self.outside if k is None else self.step_calls[k]).append(call)
        self.step_of_call = {c["args"]["correlation"]: k for k, calls in self.step_calls.items() for c in calls}
        self.ops = [(DEVICE_CATS[e["cat"]], e) for e in events if e.get("cat") in DEVICE_CATS]
        self.op_names = {e["args"]["External id"]: e["name"] for e in events
                         if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {})}
        self.unlaunched = [e for _, e in self.ops if e["args"]["correlation"] not in self.calls]
        self.step_ops = collections.defaultdict(list)
        for kind, e in self.ops:
            k = self.step_of_call.get(e["args"]["correlation"])
            self.step_ops[k].append((kind, e))

    def call_names(self, k, leave_out=(), leave_out_calls=()):
        return collections.Counter(c["name"] for c in self.step_calls[k]
                                   if c["name"] not in leave_out and c["args"]["correlation"] not in leave_out_calls)

    def op_keys(self, k):
        return collections.Counter((kind, e["name"]) if kind == "kernel" else (kind, e["name"], e["args"]["bytes"])
                                   for kind, e in self.step_ops[k])

    def operators(self, k):
        """Per device op of step k: (kind, name, the name of the operator
        whose External id it carries)."""
        return collections.Counter((kind, e["name"], self.op_names.get(e["args"].get("External id")))
                                   for kind, e in self.step_ops[k])

    def launches(self, k):
        return collections.Counter((kind, e["name"], self.calls[e["args"]["correlation"]]["name"])
                                   for kind, e in self.step_ops[k])


def iterations(lines):
    """From the truth: the process's pid, the correlation id that opens each
    iteration (its batch's first pinned host-to-device copy), and each
    iteration's closing cudaDeviceSynchronize (its first in the iteration)."""
    pid = next(l["pid"] for l in lines if l["type"] == "api")
    batch = [op["correlation"] for op in truth.of_type(lines, "memcpy")
             if op["pid"] == pid and op["copy_kind"] == truth.HTOD and op["src_kind"] == truth.PINNED
             and op["bytes"] == BATCH * SEQ_LEN * 8]
    assert len(batch) == 2 * STEPS, f"{len(batch)} batch copies: tokens and targets, each iteration"
    starts = batch[::2] + [float("inf")]
    syncs = sorted(l["correlation"] for l in truth.api(lines, "cudaDeviceSynchronize") if l["pid"] == pid)
    closing = [min(c for c in syncs if starts[i] <= c < starts[i + 1]) for i in range(STEPS)]
    return pid, starts, closing, syncs


class TorchProfilerAndLibprofRecordTheSameSteps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN)
        cls.python = harness.need_venv("torch")
        cls.work = tempfile.mkdtemp(prefix="libprof-torch-compare-")
        cls.torch = run_torch_profiler(cls.python, cls.work)
        cls.libprof = {mode: run_libprof(cls.python, mode, cls.work) for mode in harness.INJECTION_MODES}

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        proc, trace, _, _ = self.torch
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertIn(f"torch.profiler: steps {ACTIVE_STEPS[0]}-{ACTIVE_STEPS[-1]}", proc.stdout)
        self.assertIsNotNone(trace, "torch.profiler wrote no trace")
        self.kineto = Steps(trace)

    def each_mode(self, check, with_summary=False):
        for mode, (proc, trace, lines, summary) in self.libprof.items():
            with self.subTest(mode=mode):
                self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
                self.assertIsNotNone(trace, f"not one window: {proc.stderr[-3000:]}")
                if with_summary:
                    check(mode, trace, Steps(trace), lines, summary)
                else:
                    check(mode, trace, Steps(trace), lines)

    def test_both_record_iterations_3_to_5_as_steps_3_to_5(self):
        _, _, torch_lines, _ = self.torch
        self.assertEqual(self.kineto.numbers, ACTIVE_STEPS)

        def step_ops_are_the_iteration(steps, lines, who):
            pid, starts, closing, _ = iterations(lines)
            for k in ACTIVE_STEPS:
                ops = steps.step_ops[k]
                self.assertGreater(len(ops), 50, f"{who} step {k}")
                outside = [e["name"][:60] for _, e in ops if not starts[k] <= e["args"]["correlation"] < starts[k + 1]]
                self.assertEqual(outside, [], f"{who} step {k}: ops of another iteration")
            return closing

        step_ops_are_the_iteration(self.kineto, torch_lines, "torch.profiler")

        def check(mode, trace, steps, lines):
            w = trace["libprof"]["window"]
            self.assertEqual((w["first_step"], w["last_step"], w["partial"]), (ACTIVE_STEPS[0], ACTIVE_STEPS[-1], False))
            self.assertEqual(steps.numbers, ACTIVE_STEPS)
            step_ops_are_the_iteration(steps, lines, mode)
        self.each_mode(check)

    def test_module_calls_nest_as_with_stack_records_them(self):
        _, kineto_trace, _, _ = self.torch

        def check(mode, trace, steps, lines):
            for k in ACTIVE_STEPS:
                theirs, their_depths = module_calls(kineto_trace, k)
                ours, our_depths = module_calls(trace, k)
                self.assertGreater(len(theirs), 5, f"with_stack recorded no module calls in step {k}")
                self.assertEqual(our_depths, their_depths, f"step {k}: the calls' nesting")
                self.assertEqual(ours[0]["name"] + "_0", theirs[0]["name"], f"step {k}: the outermost module")
                self.assertEqual(kernels_by_module_call(trace, k, steps), kernels_by_module_call(kineto_trace, k, self.kineto),
                                 f"step {k}: the module call each kernel of the main thread belongs to")
                # Each such kernel's Module is the path of that call.
                for kind, e in steps.step_ops[k]:
                    launch = steps.calls[e["args"]["correlation"]]
                    inside = [m for m in ours if m["tid"] == launch["tid"] and m["ts"] <= launch["ts"] < m["ts"] + m["dur"]]
                    if kind == "kernel" and inside:
                        path = max(inside, key=lambda m: m["ts"])["name"][len("nn.Module: "):]
                        self.assertEqual(e["args"].get("Module"), path, e["name"][:60])
                # Every kernel of an operator inside a module call has its
                # Module, autograd's (backward) kernels by their forward's.
                in_module = {o["args"]["External id"] for o in trace["traceEvents"]
                             if o.get("cat") in ("cpu_op", "user_annotation") and "Module" in o.get("args", {})}
                missing = [e["name"][:60] for kind, e in steps.step_ops[k]
                           if kind == "kernel" and e["args"].get("External id") in in_module and "Module" not in e["args"]]
                self.assertEqual(missing, [], f"step {k}")
                backward = [e for kind, e in steps.step_ops[k] if kind == "kernel" and "Module" in e["args"]
                            and steps.calls[e["args"]["correlation"]]["tid"] != ours[0]["tid"]]
                self.assertGreater(len(backward), 5, f"step {k}: autograd's kernels with their module")
        self.each_mode(check)

    def test_the_synchronize_ends_torch_profilers_step_and_opens_libprofs(self):
        _, _, torch_lines, _ = self.torch
        _, _, closing, syncs = iterations(torch_lines)
        for k in ACTIVE_STEPS:
            got = [c["args"]["correlation"] for c in self.kineto.step_calls[k] if c["name"] == "cudaDeviceSynchronize"]
            self.assertEqual(got, [closing[k]], f"torch.profiler step {k} holds iteration {k}'s synchronize")
        # Kineto's own synchronize, when the active steps end, is in no step:
        # the one after iteration 5's, before iteration 6 begins.
        own = [c["args"]["correlation"] for c in self.kineto.outside if c["name"] == "cudaDeviceSynchronize"]
        self.assertEqual(own, [next(s for s in syncs if s > closing[ACTIVE_STEPS[-1]])])

        def check(mode, trace, steps, lines):
            _, _, closing, _ = iterations(lines)
            for k in ACTIVE_STEPS:
                got = [c["args"]["correlation"] for c in steps.step_calls[k] if c["name"] == "cudaDeviceSynchronize"]
                self.assertEqual(got, [closing[k - 1]], f"libprof step {k} opens with iteration {k - 1}'s synchronize")
                first = min(steps.step_calls[k], key=lambda c: c["ts"])
                self.assertEqual(first["name"], "cudaDeviceSynchronize")
            self.assertEqual(steps.outside, [])
        self.each_mode(check)

    def test_per_step_the_same_kernels_copies_and_memsets(self):
        for k in ACTIVE_STEPS:
            kinds = collections.Counter(key[0] for key in self.kineto.op_keys(k).elements())
            self.assertGreater(kinds["kernel"], 50)
            self.assertGreaterEqual(kinds["memcpy"], 2)  # the batch: tokens and targets
            self.assertGreaterEqual(kinds["memset"], 1)

        def check(mode, trace, steps, lines):
            for k in ACTIVE_STEPS:
                want, got = self.kineto.op_keys(k), steps.op_keys(k)
                self.assertEqual(got - want, collections.Counter(), f"step {k}: libprof only")
                self.assertEqual(want - got, collections.Counter(), f"step {k}: torch.profiler only")
            self.assertEqual(steps.step_ops.get(None, []), [], "device ops launched outside the steps")
        self.each_mode(check)

    def test_per_step_the_same_runtime_calls_but_what_kineto_leaves_out(self):
        for k in ACTIVE_STEPS:
            self.assertEqual(set(self.kineto.call_names(k)) & KINETO_LEAVES_OUT, set())

        def timed_calls_are_the_truths(steps, lines, who, leave_out=()):
            timed = timing_dependent(lines)
            calls = [c for k in ACTIVE_STEPS for c in steps.step_calls[k]]
            lo, hi = min(c["args"]["correlation"] for c in calls), max(c["args"]["correlation"] for c in calls)
            want = sorted(l["correlation"] for l in truth.api(lines) if l["correlation"] in timed
                          and l["name"] not in leave_out and lo <= l["correlation"] <= hi)
            got = sorted(c["args"]["correlation"] for c in calls if c["args"]["correlation"] in timed)
            self.assertEqual(got, want, f"{who}: the polls and pinning calls the run made in its steps")
            return timed

        _, _, torch_lines, _ = self.torch
        kineto_timed = timed_calls_are_the_truths(self.kineto, torch_lines, "torch.profiler", KINETO_LEAVES_OUT)

        def check(mode, trace, steps, lines):
            timed = timed_calls_are_the_truths(steps, lines, mode)
            for k in ACTIVE_STEPS:
                want = self.kineto.call_names(k, (), kineto_timed)
                got = steps.call_names(k, KINETO_LEAVES_OUT, timed)
                self.assertGreater(sum(want.values()), 100)
                self.assertEqual(got - want, collections.Counter(), f"step {k}: libprof only")
                self.assertEqual(want - got, collections.Counter(), f"step {k}: torch.profiler only")
                # What was left out is there in libprof's trace: PyTorch asks
                # for the current device at nearly every operator.
                self.assertGreater(steps.call_names(k)["cudaGetDevice"], 100, f"step {k}")
        self.each_mode(check)

    def test_per_step_each_device_op_has_the_same_operator(self):
        """libprof's operators come from PyTorch's NVTX profiler, turned on by
        the agent itself; torch.profiler's from its own callbacks. Each
        kernel, copy and memset carries its operator's External id in both."""
        for k in ACTIVE_STEPS:
            named = self.kineto.operators(k)
            self.assertEqual(sum(n for (_, _, op), n in named.items() if op is None), 0, f"step {k}")

        def check(mode, trace, steps, lines):
            for k in ACTIVE_STEPS:
                want, got = self.kineto.operators(k), steps.operators(k)
                self.assertEqual(got - want, collections.Counter(), f"step {k}: libprof only")
                self.assertEqual(want - got, collections.Counter(), f"step {k}: torch.profiler only")
        self.each_mode(check)

    def test_memory_peak_of_each_step_is_max_memory_allocated(self):
        """libprof's tensor memory (the caching allocator's history, replayed
        to the allocator's block sizes) against the reference run's
        torch.cuda.max_memory_allocated(), reset at each synchronize: libprof's
        step k runs from iteration k-1's synchronize to iteration k's."""
        peaks = self.torch[3]["memory_peaks"]
        self.assertEqual(len(peaks), STEPS)

        def check(mode, trace, steps, lines, summary):
            self.assertEqual(trace["libprof"].get("tensor_memory"), "on")
            line = next(l for l in summary.splitlines() if l.startswith(" Peak allocated by step:"))
            got = {int(k): int(v) for k, v in (part.split(":") for part in line.split(":", 1)[1].split(";"))}
            self.assertEqual(got, {k: peaks[k] for k in ACTIVE_STEPS})
            self.assertGreater(min(got.values()), 1 << 20)
        self.each_mode(check, with_summary=True)

    def test_tensor_allocations_are_kinetos_memory_events(self):
        """Per step, libprof's [memory] events are torch.profiler's with
        profile_memory=True: the same multiset of CUDA block sizes allocated
        and freed, the same fields (libprof adds the allocating Python line)."""
        _, kineto_trace, _, _ = self.torch

        def memory(trace):
            # CUDA's (Device Type 1): torch.profiler records CPU tensors too.
            events = [e for e in trace["traceEvents"] if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
            self.assertTrue(events)
            return events

        def per_step(trace, events):
            spans = [e for e in trace["traceEvents"] if e.get("cat") == "user_annotation"
                     and str(e.get("name", "")).startswith("ProfilerStep#")]
            out = {}
            for s in spans:
                k = int(s["name"].split("#")[1])
                out[k] = collections.Counter(e["args"]["Bytes"] for e in events if s["ts"] <= e["ts"] < s["ts"] + s["dur"])
            return out

        kineto = memory(kineto_trace)
        kineto_keys = set.intersection(*(set(e["args"]) for e in kineto))
        want = per_step(kineto_trace, kineto)

        def check(mode, trace, steps, lines):
            ours = memory(trace)
            self.assertEqual(kineto_keys - set.intersection(*(set(e["args"]) for e in ours)), KINETO_ONLY_MEMORY_ARGS)
            self.assertEqual({e["cat"] for e in ours}, {e["cat"] for e in kineto})
            got = per_step(trace, ours)
            for k in ACTIVE_STEPS:
                self.assertGreater(sum(want[k].values()), 100, f"step {k}")
                self.assertEqual(got[k] - want[k], collections.Counter(), f"step {k}: libprof only")
                self.assertEqual(want[k] - got[k], collections.Counter(), f"step {k}: torch.profiler only")
            with_line = [e for e in ours if e["args"]["Bytes"] > 0 and "Python line" in e["args"]]
            self.assertTrue(any(e["args"]["Python line"].startswith("torch_train.py:") for e in with_line))
        self.each_mode(check)

    def test_gpu_time_by_operator_is_key_averages(self):
        """The summary's operator table against torch.profiler's
        key_averages() over the same three iterations: each operator's self
        and total GPU time (the sim's durations are the same in both runs)
        and its number of calls."""
        averages = {a["key"]: a for a in self.torch[3]["key_averages"]}

        def check(mode, trace, steps, lines, summary):
            rows = operator_rows(summary)
            self.assertGreaterEqual(len(rows), 25, summary[-3000:])
            for name, (self_ns, total_ns, calls) in rows.items():
                self.assertIn(name, averages)
                a = averages[name]
                self.assertAlmostEqual(self_ns / 1000, a["self_device_time_total"], delta=0.01 * self_ns / 1000 + 0.01,
                                       msg=name)
                self.assertAlmostEqual(total_ns / 1000, a["device_time_total"], delta=0.01 * total_ns / 1000 + 0.01,
                                       msg=name)
                self.assertEqual(calls, a["count"], name)
        self.each_mode(check, with_summary=True)

    def test_hta_breaks_kernels_down_by_operator(self):
        """HTA's TraceAnalysis loads libprof's trace and its kernel breakdown
        by operator (get_aten_op_kernels_and_delay) runs on it: each row's
        operator launched that kernel that often in torch.profiler's trace of
        the same iterations."""
        import shutil
        import subprocess
        kineto_pairs = collections.Counter()
        for k in ACTIVE_STEPS:
            kineto_pairs.update({(op, name): n for (kind, name, op), n in self.kineto.operators(k).items()
                                 if kind == "kernel"})
        breakdown = os.path.join(HERE, "hta_breakdown.py")

        def check(mode, trace, steps, lines):
            hta_dir = tempfile.mkdtemp(prefix="hta-", dir=self.work)
            shutil.copy(glob.glob(os.path.join(self.work, mode, "*.pt.trace.json"))[0], hta_dir)
            proc = subprocess.run([self.python, breakdown, "--operators", hta_dir], capture_output=True, text=True,
                                  timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
            rows = json.loads(proc.stdout)["0"]["aten_ops"]
            self.assertIn("aten::mm", {op for op, _, _ in rows})
            for op, kernels, count in rows:
                self.assertEqual(kineto_pairs[(op, kernels)], count, f"{op}: {kernels[:60]}")
        self.each_mode(check)

    def test_per_step_each_device_op_has_the_same_launching_call(self):
        _, _, torch_lines, _ = self.torch
        self.assertEqual(self.kineto.unlaunched, [])

        def launches_are_the_truths(steps, lines, who):
            pid = next(l["pid"] for l in lines if l["type"] == "api")
            api = {op["correlation"]: op["api"] for op in truth.of_type(lines, *truth.DEVICE_OPS) if op["pid"] == pid}
            for kind, e in steps.ops:
                self.assertEqual(steps.calls[e["args"]["correlation"]]["name"], api[e["args"]["correlation"]],
                                 f"{who}: {e['name'][:60]}")
        launches_are_the_truths(self.kineto, torch_lines, "torch.profiler")

        def check(mode, trace, steps, lines):
            self.assertEqual(steps.unlaunched, [])
            launches_are_the_truths(steps, lines, mode)
            for k in ACTIVE_STEPS:
                want, got = self.kineto.launches(k), steps.launches(k)
                self.assertGreater(len({key[2] for key in want}), 2, "several launch functions")
                self.assertEqual(got - want, collections.Counter(), f"step {k}: libprof only")
                self.assertEqual(want - got, collections.Counter(), f"step {k}: torch.profiler only")
        self.each_mode(check)

    def test_durations_are_the_truths_in_both(self):
        def durations(steps, lines, delta_ns, who):
            pid = next(l["pid"] for l in lines if l["type"] == "api")
            ops = {op["correlation"]: op for op in truth.of_type(lines, *truth.DEVICE_OPS) if op["pid"] == pid}
            for kind, e in steps.ops:
                op = ops[e["args"]["correlation"]]
                self.assertAlmostEqual(e["dur"] * 1000, op["end_ns"] - op["start_ns"], delta=delta_ns,
                                       msg=f"{who}: {e['name'][:60]}")
        # Kineto's trace: the sim's clock through CUPTI's and Kineto's conversions (1 ns each).
        durations(self.kineto, self.torch[2], 2, "torch.profiler")
        # libprof's: µs with three decimals, from the same ns.
        self.each_mode(lambda mode, trace, steps, lines: durations(steps, lines, 0.01, mode))

    def test_fields_consumers_read_follow_kinetos_but_the_listed_ones(self):
        _, kineto_trace, _, _ = self.torch

        def args_on_every(trace, cat):
            events = [e for e in trace["traceEvents"] if e.get("cat") == cat and e.get("ph") == "X"
                      and (cat != "user_annotation" or str(e["name"]).startswith("ProfilerStep#"))]
            self.assertTrue(events, cat)
            return set.intersection(*(set(e.get("args", {})) for e in events)), events

        def cats(trace):
            return {e["cat"] for e in trace["traceEvents"] if "cat" in e}

        def check(mode, trace, steps, lines):
            self.assertEqual(cats(kineto_trace) - cats(trace), set(KINETO_ONLY_CATS))
            self.assertEqual(cats(trace) - cats(kineto_trace), set(LIBPROF_ONLY_CATS))
            for cat, lacks in KINETO_ONLY_ARGS.items():
                kineto_keys, _ = args_on_every(kineto_trace, cat)
                ours_keys, ours = args_on_every(trace, cat)
                expected = lacks
                self.assertEqual(kineto_keys - ours_keys, expected, cat)
                if cat in DEVICE_CATS:
                    # GPU tracks as Kineto lays them out: pid = device, tid = stream.
                    self.assertEqual({(e["pid"], e["tid"]) for e in ours},
                                     {(e["args"]["device"], e["args"]["stream"]) for e in ours}, cat)
            # Only GPU work carries "stream" (HTA takes any event with one for a kernel).
            self.assertEqual({e["cat"] for e in trace["traceEvents"] if "stream" in e.get("args", {})},
                             set(DEVICE_CATS) | {"cuda_sync"})
            # Each device op's flow: started on its launching call, finished on the op.
            flows = collections.Counter((e["ph"], e["id"]) for e in trace["traceEvents"] if e.get("cat") == "ac2g")
            for _, e in steps.ops:
                c = e["args"]["correlation"]
                self.assertEqual((flows[("s", c)], flows[("f", c)]), (1, 1), e["name"][:60])
        self.each_mode(check)


if __name__ == "__main__":
    harness.main()
