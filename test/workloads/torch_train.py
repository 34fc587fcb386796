"""Trains a small transformer language model the way a PyTorch user writes one:
an embedding, pre-norm encoder blocks with scaled_dot_product_attention, a
linear head, AdamW, bfloat16 autocast, gradient clipping, and a DataLoader
with two worker processes feeding random token sequences. Nothing in it
knows about a profiler, unless asked:

    python torch_train.py [--steps N] [--layers L] [--device cuda]
                          [--sync-each-step] [--torch-profiler TRACE [--wait W --warmup U --active A]]

--sync-each-step ends each iteration with torch.cuda.synchronize() (the one
cudaDeviceSynchronize of an iteration: libprof's PROF_STEP=api:cudaDeviceSynchronize
counts them). --torch-profiler does that too, profiles the loop with
torch.profiler (ProfilerActivity.CPU and CUDA, schedule(wait, warmup, active),
prof.step() right after each synchronize) and writes its trace to TRACE, as a
user who profiles their own script writes it.
"""
import argparse
import contextlib
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
    args = parser.parse_args()

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
            first = args.wait + args.warmup
            print(f"torch.profiler: steps {first}-{first + args.active - 1} in {args.torch_profiler}", flush=True)
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], on_trace_ready=ready,
                           schedule=schedule(wait=args.wait, warmup=args.warmup, active=args.active, repeat=1))
    started = time.perf_counter()
    with profiler as prof:
        train(args, model, optimizer, data, vocab, prof)
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - started:.2f} s", flush=True)


def train(args, model, optimizer, data, vocab, prof):
    for step, (tokens, targets) in enumerate(data):
        tokens = tokens.to(args.device, non_blocking=True)
        targets = targets.to(args.device, non_blocking=True)
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
        if args.sync_each_step or prof is not None:
            torch.cuda.synchronize()
        if prof is not None:
            prof.step()


if __name__ == "__main__":
    main()
