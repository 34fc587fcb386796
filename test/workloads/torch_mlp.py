"""A small MLP trained on random data the way a PyTorch user writes one, each
iteration ending with a loss read through .item() (a blocking device-to-host
copy) and torch.cuda.synchronize(). Nothing in it knows about libprof.

    python torch_mlp.py [--steps N] [--own-profiler-at STEP]

--own-profiler-at starts the program's own torch.profiler (CPU activity) at
iteration STEP and stops it two iterations later, printing how many events
it recorded: a script that profiles itself while libprof records.

The script waits a moment before it exits: PyPI's torch, with no profiler
at all, aborts about once in ten exits on a loaded machine when the
interpreter shuts down while autograd's device thread still frees the last
backward's graph task (std::terminate in pthread_exit's unwinding, as that
thread waits for the GIL of a finalizing interpreter)."""
import argparse
import time

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--own-profiler-at", type=int, default=-1)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    own = None
    for step in range(args.steps):
        if step == args.own_profiler_at:
            own = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
            own.__enter__()
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        torch.cuda.synchronize()
        if own is not None and step == args.own_profiler_at + 1:
            own.__exit__(None, None, None)
            print(f"own profiler: {len(own.events())} events", flush=True)
            own = None
    time.sleep(0.5)  # see the docstring: PyTorch's own exit race


if __name__ == "__main__":
    main()
