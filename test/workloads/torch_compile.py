"""torch.compile of torch_train.py's model, trained as a user trains one: the
same transformer (TinyLM), AdamW, bfloat16 autocast, gradient clipping and a
DataLoader with two workers, with the model wrapped by torch.compile and the
loss computed by a second compiled function. Inductor turns each into a
forward and a backward graph of Triton kernels (triton_poi_*, triton_red_*,
triton_per_*), which it compiles for the current device (ptxas) and launches
through the driver API (cuModuleLoad, cuModuleGetFunction, cuLaunchKernel:
Inductor's own launcher). Each step also keeps a running average of the loss
with a Triton kernel written by hand (ema_kernel, @triton.jit), which
Triton's launcher loads and launches (cuModuleLoadData, cuModuleGetFunction,
cuLaunchKernelEx). Nothing in it knows about a profiler.

    python torch_compile.py [--steps N] [--layers L] [--dim D] [--seq-len S] [--batch B]

Where Inductor keeps its generated code and Triton its cubins is theirs to
decide (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR). Prints one line when
the first (compiling) step is done, the loss every 10th step and the run's
time at the end.
"""
import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import RandomTokens, TinyLM  # noqa: E402


def loss_of(logits, targets):
    """The next-token loss, a function of its own: torch.compile makes it a
    second compiled function (its own forward and backward graphs)."""
    return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))


def finite(value):
    """What a simulated device's memory holds need not be a number."""
    return value if math.isfinite(value) else float("nan")


@triton.jit
def ema_kernel(average_ptr, value_ptr, decay):
    """average = decay * average + (1 - decay) * value, one float on the device."""
    average = tl.load(average_ptr)
    value = tl.load(value_ptr).to(tl.float32)
    tl.store(average_ptr, decay * average + (1 - decay) * value)


def main():
    # torch_train.py's options with smaller defaults: each workload is a script of its own, a list, not logic.
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--dim", type=int, default=64)
    args = parser.parse_args()

    torch.manual_seed(0)
    vocab = 1000
    model = TinyLM(vocab, args.dim, heads=4, layers=args.layers, seq_len=args.seq_len).to("cuda")
    compiled = torch.compile(model)
    compiled_loss = torch.compile(loss_of)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    data = DataLoader(RandomTokens(vocab, args.seq_len, args.steps * args.batch), batch_size=args.batch,
                      num_workers=2, pin_memory=True)
    average = torch.zeros(1, device="cuda")
    model.train()
    started = time.perf_counter()
    for step, (tokens, targets) in enumerate(data):
        tokens = tokens.to("cuda", non_blocking=True)
        targets = targets.to("cuda", non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = compiled(tokens)
            loss = compiled_loss(logits, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        ema_kernel[(1,)](average, loss.detach(), 0.9)
        if step == 0:
            torch.cuda.synchronize()
            print(f"compiled in {time.perf_counter() - started:.2f} s", flush=True)
        if step % 10 == 0:
            print(f"step {step}: loss {finite(loss.item()):.3f}, average {finite(average.item()):.3f}", flush=True)
    torch.cuda.synchronize()
    print(f"{args.steps} steps in {time.perf_counter() - started:.2f} s", flush=True)


if __name__ == "__main__":
    main()
