"""PyTorch's operators in libprof's trace, summary and findings without a
change to the script (PROF_TORCH_OPS), on the simulated stack with PyPI's
torch: test/workloads/torch_mlp.py, a small MLP whose iterations each end in
loss.item() and torch.cuda.synchronize(); libprof counts steps by the
synchronize (PROF_WAIT=3, PROF_WARMUP=1, PROF_ACTIVE=4).

  - default (names,modules), both injection modes: every kernel, copy and
    memset of the window carries the External id of an aten:: operator in
    the trace, backward operators carry their forward's thread, no operator
    carries Input Dims, the work of the model's layers (forward and
    backward) carries their module path and the loss's and optimizer's none,
    the summary has its operator table and module tree, and the sync-in-step
    finding (.item() copies into pinned memory and synchronizes the stream)
    names aten::_local_scalar_dense (.item());
  - PROF_TORCH_OPS=names: operators, no module call or path;
  - PROF_TORCH_OPS=shapes: aten::addmm carries its input shapes;
  - PROF_TORCH_OPS=0: no operator at all, and no finding names one (control);
  - the script starts its own torch.profiler inside libprof's window: it
    records as it would alone, the process exits 0, and libprof says once
    that its operators gave way."""
import collections
import glob
import json
import os
import unittest

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workloads", "torch_mlp.py")
SIMRUN = os.path.join(os.path.dirname(harness.SIM_LIB_DIR), "simrun") if harness.SIM_LIB_DIR else ""
SCHEDULE = {"PROF_STEP": "api:cudaDeviceSynchronize", "PROF_WAIT": "3", "PROF_WARMUP": "1", "PROF_ACTIVE": "4"}


def run(python, out, mode="LD_PRELOAD", args=(), **env):
    environment = harness.clean_env(PROF_OUTPUT_DIR=out, PYTHONUNBUFFERED="1", **SCHEDULE, **env)
    environment[mode] = harness.LIBPROF_SO
    proc = harness.run([SIMRUN, python, WORKLOAD, *args], environment, timeout=300)
    traces = glob.glob(os.path.join(out, "*.pt.trace.json"))
    trace = summary = None
    if len(traces) == 1:
        with open(traces[0]) as f:
            trace = json.load(f)
        with open(traces[0].replace(".pt.trace.json", ".summary.txt")) as f:
            summary = f.read()
    return proc, trace, summary


def operators(trace):
    return {e["args"]["External id"]: e for e in trace["traceEvents"]
            if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {})}


class OperatorsWithoutEditingTheScript(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        harness.need(harness.LIBPROF_SO, SIMRUN)
        cls.python = harness.need_venv("torch")

    def run_mlp(self, name, mode="LD_PRELOAD", args=(), **env):
        proc, trace, summary = run(self.python, harness.scratch_dir(self, name), mode, args, **env)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        self.assertIsNotNone(trace, proc.stderr[-3000:])
        return proc, trace, summary

    def test_default_every_device_op_has_its_operator(self):
        for mode in harness.INJECTION_MODES:
            with self.subTest(mode=mode):
                _, trace, summary = self.run_mlp("ops-" + mode, mode)
                ops = operators(trace)
                work = [e for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
                self.assertGreater(len(work), 20)
                for e in work:
                    op = ops.get(e["args"].get("External id"))
                    self.assertIsNotNone(op, e["name"][:60])
                    self.assertTrue(op["name"].startswith("aten::"), op["name"])
                self.assertFalse([o for o in ops.values() if "Input Dims" in o["args"]])
                backward = [o for o in ops.values() if o["name"] == "AddmmBackward0"]
                self.assertTrue(backward)
                for o in backward:
                    self.assertNotEqual(o["tid"], trace["libprof"]["pid"])  # autograd's thread
                    self.assertEqual(o["args"]["Fwd thread id"], trace["libprof"]["pid"])
                self.assertIn("== GPU time by operator", summary)
                # Module paths are on by default: the Sequential's layers by
                # name ("0", "1", "2"), the outermost by its class; the work
                # of their operators, forward and backward (the bias's
                # gradient sum in autograd's wrapper too), carries them;
                # the loss's and the optimizer's none.
                modules = {e["name"] for e in trace["traceEvents"] if str(e.get("name", "")).startswith("nn.Module")}
                self.assertEqual(modules, {"nn.Module: Sequential", "nn.Module: 0", "nn.Module: 1", "nn.Module: 2"})
                by_op = collections.Counter((ops[e["args"]["External id"]]["name"], e["args"].get("Module"))
                                            for e in work)
                # Per step: each layer's forward; in backward, the weight's
                # gradient (and the second layer's input's) and the bias's sum.
                for op, module, per_step in (("aten::addmm", "0", 1), ("aten::addmm", "2", 1),
                                             ("aten::clamp_min", "1", 1), ("aten::threshold_backward", "1", 1),
                                             ("aten::mm", "0", 1), ("aten::mm", "2", 2), ("aten::sum", "0", 1),
                                             ("aten::sum", "2", 1)):
                    self.assertEqual(by_op[(op, module)], 4 * per_step, (op, module, by_op))
                for op in ("aten::nll_loss_forward", "aten::_foreach_add_", "aten::_local_scalar_dense"):
                    self.assertEqual({m for (o, m) in by_op if o == op}, {None}, op)
                self.assertIn("== GPU time by module", summary)
                sync = summary.split("[sync-in-step]", 1)[1].split("\n [", 1)[0]
                self.assertIn("operators: aten::_local_scalar_dense (.item()) x4", sync)

    def test_names_alone_record_no_module(self):
        _, trace, summary = self.run_mlp("names", PROF_TORCH_OPS="names")
        self.assertTrue(operators(trace))
        self.assertFalse([e for e in trace["traceEvents"] if str(e.get("name", "")).startswith("nn.Module")])
        self.assertFalse([e for e in trace["traceEvents"] if "Module" in e.get("args", {})])
        self.assertNotIn("== GPU time by module", summary)

    def test_shapes_on_request(self):
        _, trace, _ = self.run_mlp("shapes", PROF_TORCH_OPS="shapes")
        addmm = [o for o in operators(trace).values() if o["name"] == "aten::addmm"]
        self.assertTrue(addmm)
        self.assertIn([32, 64], addmm[0]["args"]["Input Dims"])

    def test_off(self):
        _, trace, summary = self.run_mlp("off", PROF_TORCH_OPS="0")
        self.assertEqual(operators(trace), {})
        self.assertFalse([e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"])
        self.assertNotIn("GPU time by operator", summary)
        self.assertIn("[sync-in-step]", summary)
        self.assertNotIn("operators:", summary)

    def test_the_scripts_own_profiler_goes_first(self):
        proc, trace, _ = self.run_mlp("own", args=["--own-profiler-at", "5"])
        counts = [int(line.split()[2]) for line in proc.stdout.splitlines() if line.startswith("own profiler:")]
        self.assertEqual(len(counts), 1, proc.stdout[-2000:])
        self.assertGreater(counts[0], 50)
        self.assertEqual(proc.stderr.count("libprof's operator ranges gave way"), 1, proc.stderr[-3000:])
        self.assertTrue(operators(trace))  # the window's first steps, before the script's profiler


if __name__ == "__main__":
    harness.main()
