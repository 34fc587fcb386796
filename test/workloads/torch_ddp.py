"""Part 1's small transformer (torch_train.py) trained data-parallel the way a
PyTorch user writes it for torchrun: torch.distributed with the nccl backend,
torch.cuda.set_device(LOCAL_RANK), DistributedDataParallel, a
DistributedSampler, AdamW, bfloat16 autocast, gradient clipping. Nothing in
it knows about a profiler.

    torchrun --nproc_per_node=4 torch_ddp.py [--steps N] [--slow-rank R --slow-ms MS]

--slow-rank R makes rank R a straggler: its host sleeps --slow-ms in every
step before the forward pass, as a rank with a slow data pipeline or a busy
host would.
"""
import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from torch_train import RandomTokens, TinyLM


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8, help="per rank")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--bucket-mb", type=float, default=1.0, help="DDP's bucket_cap_mb")
    parser.add_argument("--slow-rank", type=int, default=-1)
    parser.add_argument("--slow-ms", type=float, default=30.0)
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    vocab = 1000
    model = TinyLM(vocab, args.dim, heads=4, layers=args.layers, seq_len=args.seq_len).cuda()
    model = DistributedDataParallel(model, device_ids=[local_rank], bucket_cap_mb=args.bucket_mb)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    dataset = RandomTokens(vocab, args.seq_len, args.steps * args.batch * world)
    data = DataLoader(dataset, batch_size=args.batch, sampler=DistributedSampler(dataset, shuffle=False),
                      pin_memory=True)
    if rank == 0:
        print(f"world {world}, parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M values",
              flush=True)

    model.train()
    started = time.perf_counter()
    running = 0.0
    for step, (tokens, targets) in enumerate(data):
        if rank == args.slow_rank:
            time.sleep(args.slow_ms / 1000)  # the straggler's host is late to every step
        tokens = tokens.cuda(non_blocking=True)
        targets = targets.cuda(non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.view(-1, vocab), targets.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        running += loss.item()  # every rank keeps its running loss (as a progress bar would)
        if step % 10 == 0 and rank == 0:
            mean = running / (step + 1)
            print(f"step {step}: mean loss {mean if math.isfinite(mean) else float('nan'):.3f}", flush=True)
    torch.cuda.synchronize()
    print(f"rank {rank} of {world}: {args.steps} steps in {time.perf_counter() - started:.2f} s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
