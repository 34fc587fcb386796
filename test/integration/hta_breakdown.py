"""What Holistic Trace Analysis makes of a directory of traces, as JSON on
stdout: per rank, its GPU kernel breakdown (time per kernel name, every kernel
kept: no "others" group) and its temporal breakdown (idle, compute and
non-compute time over the span from the first GPU op's start to the last
one's end). Runs under the tests' venv, where HTA is installed
(scripts/python-venv.sh); test_hta.py compares the figures with libprof's
summary.

    .deps/venv/bin/python hta_breakdown.py [--operators] TRACE_DIR

--operators adds, per rank, HTA's kernel breakdown by operator
(get_aten_op_kernels_and_delay): [aten operator, kernel sequence, occurrences].

HTA keeps only the GPU work launched before the last ProfilerStep# unless
told to include that step; libprof's summary covers the whole window, so it
is included here (TraceAnalysis's include_last_profiler_step)."""
import json
import logging
import sys

from hta.trace_analysis import TraceAnalysis


def main(trace_dir, operators=False):
    logging.disable(logging.WARNING)  # HTA logs its progress on stderr at INFO and WARNING
    analyzer = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    out = {}
    _, kernels = analyzer.get_gpu_kernel_breakdown(visualize=False, num_kernels=1 << 30, duration_ratio=1.0,
                                                   include_memory_kernels=True)
    for _, row in kernels.iterrows():
        rank = out.setdefault(str(int(row["rank"])), {"kernels_us": {}, "kernel_types": {}})
        rank["kernels_us"][row["name"]] = float(row["sum (us)"])
        rank["kernel_types"][row["name"]] = row["kernel_type"]
    for _, row in analyzer.get_temporal_breakdown(visualize=False).iterrows():
        rank = out.setdefault(str(int(row["rank"])), {"kernels_us": {}, "kernel_types": {}})
        rank["temporal"] = {k: float(row[k]) for k in ("idle_time(us)", "compute_time(us)", "non_compute_time(us)",
                                                       "kernel_time(us)", "idle_time_pctg")}
    if operators:
        for rank, table in analyzer.get_aten_op_kernels_and_delay(ranks=[int(r) for r in out]).items():
            out[str(rank)]["aten_ops"] = [[row["aten_op_name"], row["kernel_sequence"], int(row["occurrence_count"])]
                                          for _, row in table.iterrows()]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    args = sys.argv[1:]
    with_operators = args[:1] == ["--operators"]
    if with_operators:
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    main(args[0], with_operators)
