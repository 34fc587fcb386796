"""Trains a small transformer language model the way a PyTorch user writes one:
an embedding, pre-norm encoder blocks with scaled_dot_product_attention, a
linear head, AdamW, bfloat16 autocast, gradient clipping, and a DataLoader
with two worker processes feeding random token sequences. Nothing in it
knows about a profiler, unless asked:

    python torch_train.py [--steps N] [--layers L] [--device cuda] [--tiny-ops N]
                          [--sync-each-step] [--torch-profiler TRACE [--wait W --warmup U --active A]
                          [--torch-activities cuda|cpu,cuda] [--with-stack] [--record-shapes] [--profile-memory]
                          [--key-averages JSON]] [--memory-peaks JSON] [--time-from STEP]

--sync-each-step ends each iteration with torch.cuda.synchronize() (the one
cudaDeviceSynchronize of an iteration: libprof's PROF_STEP=api:cudaDeviceSynchronize
counts them). --torch-profiler does that too, profiles the loop with
torch.profiler (ProfilerActivity.CPU and CUDA, schedule(wait, warmup, active),
prof.step() right after each synchronize) and writes its trace to TRACE, as a
user who profiles their own script writes it; --torch-activities cuda records
ProfilerActivity.CUDA alone, --with-stack adds with_stack=True (--record-shapes
and --profile-memory their options). --memory-peaks synchronizes each
iteration too and writes JSON: per iteration, torch.cuda.max_memory_allocated()
from the synchronize that ended the one before (where the peak is reset) to
its own.

For the benchmark (test/bench/torch_bench.py): --tiny-ops N makes each
iteration a host-bound one in place of the model's: the batch's copies, then
N elementwise operations on a 256-value tensor (one small kernel each).
--time-from STEP (which synchronizes each iteration) prints one JSON line at
the end, {"timed_steps", "wall_s", "cpu_s", "thread_cpu_s"}: wall time, CPU of
the whole process (every thread) and of the loop's thread from the end of
iteration STEP-1 (after its prof.step()) to the synchronize that ends the
last iteration (before its prof.step(), which writes torch.profiler's
trace). --callgrind-lib LIB loads LIB with ctypes and calls its bench_start()
at the first of those points, bench_step() after each timed iteration's
synchronize and bench_stop() after the last one's (valgrind client requests:
a dump per timed iteration).

--torch-profiler-after GLOB holds torch.profiler's warmup (the step at which
it starts using CUPTI) until a file matching GLOB exists, up to 60 s: a test
starts it once libprof has written its first window.
"""
import argparse
import contextlib
import glob
import ctypes
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class RandomTokens(Dataset):
    """Sequences of random token ids; the target is the input shifted by one."""

    def __init__(self, vocab, seq_len, length):
        self.vocab, self.seq_len, self.length = vocab, seq_len, length

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index)
        tokens = torch.randint(0, self.vocab, (self.seq_len + 1,), generator=g)
        return tokens[:-1], tokens[1:]


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(batch, seq, dim))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, heads, layers, seq_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq_len, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def held_until(pattern, first_step, inner):
    """torch.profiler's schedule `inner`, whose step first_step comes only once
    a file matching pattern exists (waited for there, up to 60 s)."""
    if not pattern:
        return inner
    opened = []

    def gated(step):
        if step >= first_step and not opened:
            deadline = time.monotonic() + 60
            while not glob.glob(pattern) and time.monotonic() < deadline:
                time.sleep(0.01)
            opened.append(step)
        return inner(step)
    return gated


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sync-each-step", action="store_true")
    parser.add_argument("--torch-profiler", metavar="TRACE")
    parser.add_argument("--wait", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--active", type=int, default=3)
    parser.add_argument("--torch-profiler-after", metavar="GLOB")
    parser.add_argument("--torch-activities", choices=["cpu,cuda", "cuda"], default="cpu,cuda")
    parser.add_argument("--with-stack", action="store_true")
    parser.add_argument("--key-averages", metavar="JSON")
    parser.add_argument("--record-shapes", action="store_true")
    parser.add_argument("--profile-memory", action="store_true")
    parser.add_argument("--memory-peaks", metavar="JSON")
    parser.add_argument("--tiny-ops", type=int, default=0, metavar="N")
    parser.add_argument("--time-from", type=int, metavar="STEP")
    parser.add_argument("--callgrind-lib", metavar="LIB")
    args = parser.parse_args()
    # Before any CUDA work: a library loaded later makes libprof look at CUPTI again.
    timer = StepTimer(args.time_from, args.steps, args.callgrind_lib)

    torch.manual_seed(0)
    vocab = 1000
    model = TinyLM(vocab, args.dim, heads=4, layers=args.layers, seq_len=args.seq_len)
    model.to(args.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    data = DataLoader(RandomTokens(vocab, args.seq_len, args.steps * args.batch), batch_size=args.batch,
                      num_workers=2, pin_memory=True)
    print(f"parameters: {sum(1 for _ in model.parameters())} tensors, "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f} M values", flush=True)

    model.train()
    profiler = contextlib.nullcontext()
    if args.torch_profiler:
        def ready(prof):
            prof.export_chrome_trace(args.torch_profiler)
            if args.key_averages:
                with open(args.key_averages, "w") as f:
                    json.dump([{"key": a.key, "count": a.count, "self_device_time_total": a.self_device_time_total,
                                "device_time_total": a.device_time_total} for a in prof.key_averages()], f)
            first = args.wait + args.warmup
            print(f"torch.profiler: steps {first}-{first + args.active - 1} in {args.torch_profiler}", flush=True)
        activities = [ProfilerActivity.CUDA]
        if args.torch_activities == "cpu,cuda":
            activities.insert(0, ProfilerActivity.CPU)
        profiler = profile(activities=activities, on_trace_ready=ready, with_stack=args.with_stack,
                           record_shapes=args.record_shapes, profile_memory=args.profile_memory,
                           schedule=held_until(args.torch_profiler_after, args.wait,
                                             schedule(wait=args.wait, warmup=args.warmup, active=args.active,
                                                      repeat=1)))
    started = time.perf_counter()
    with profiler as prof:
        train(args, model, optimizer, data, vocab, prof, timer)
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - started:.2f} s", flush=True)
    timer.report()


class StepTimer:
    """Wall, process and thread CPU time of iterations first..last (--time-from)."""

    def __init__(self, first, steps, callgrind_lib):
        self.first, self.last = first, steps - 1
        self.marks = ctypes.CDLL(callgrind_lib) if callgrind_lib else None
        self.start = self.stop = None

    @staticmethod
    def now():
        return time.perf_counter(), time.process_time(), time.thread_time()

    def before(self, step):
        """Called when iteration step-1 is done, prof.step() included."""
        if step == self.first:
            if self.marks:
                self.marks.bench_start()
            self.start = self.now()

    def after_sync(self, step):
        """Called right after the synchronize that ends iteration step."""
        if self.start is None or step > self.last:
            return
        if step == self.last:
            self.stop = self.now()
        if self.marks:
            self.marks.bench_step()
            if step == self.last:
                self.marks.bench_stop()

    def report(self):
        if self.first is None:
            return
        if self.stop is None:
            print(json.dumps({"timed_steps": 0}), flush=True)
            return
        wall, cpu, thread = (b - a for a, b in zip(self.start, self.stop))
        print(json.dumps({"timed_steps": self.last - self.first + 1, "wall_s": wall, "cpu_s": cpu,
                          "thread_cpu_s": thread}), flush=True)


def tiny_step(x, count):
    """count elementwise operations, one small kernel each: the host sets the pace."""
    for i in range(count):
        x = TINY_OPS[i % len(TINY_OPS)](x)
    return x


TINY_OPS = (lambda t: t * 0.999, lambda t: t + 0.001, torch.relu, torch.neg)


def train(args, model, optimizer, data, vocab, prof, timer):
    peaks = []
    if args.tiny_ops:
        x = torch.ones(256, device=args.device)
    timer.before(0)
    for step, (tokens, targets) in enumerate(data):
        tokens = tokens.to(args.device, non_blocking=True)
        targets = targets.to(args.device, non_blocking=True)
        if args.tiny_ops:
            x = tiny_step(x, args.tiny_ops)
        else:
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                logits = model(tokens)
                loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            if step % 10 == 0:
                value = loss.item()
                print(f"step {step}: loss {value if math.isfinite(value) else float('nan'):.3f}", flush=True)
        if args.sync_each_step or prof is not None or timer.first is not None or args.memory_peaks:
            torch.cuda.synchronize()
        if args.memory_peaks:
            peaks.append(torch.cuda.max_memory_allocated(0))
            torch.cuda.reset_peak_memory_stats(0)
        timer.after_sync(step)
        if prof is not None:
            prof.step()
        timer.before(step + 1)
    if args.memory_peaks:
        with open(args.memory_peaks, "w") as f:
            json.dump(peaks, f)


if __name__ == "__main__":
    main()
