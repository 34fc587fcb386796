"""CUDA graphs the way PyTorch users write them: a few ops captured once with
torch.cuda.graph (warmed up on a side stream first, as the PyTorch docs ask;
a branch forked to another stream and joined back inside the capture; the
result copied into a static output) and replayed, then a small MLP wrapped
by torch.cuda.make_graphed_callables and trained for a few steps (its
backward pass captured by autograd's own thread). Nothing in it knows about
a profiler. Prints one JSON line per stage.

    python torch_cuda_graph.py [--replays N] [--train-steps N]
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def say(**fields):
    print(json.dumps(fields), flush=True)


def forward(x, w1, w2, side):
    h = torch.relu(x @ w1)
    side.wait_stream(torch.cuda.current_stream())  # fork: the side stream waits for h's inputs
    with torch.cuda.stream(side):
        skip = x * 0.5
    torch.cuda.current_stream().wait_stream(side)  # join
    return h @ w2 + skip


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--train-steps", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)

    x = torch.randn(32, 64, device="cuda")
    w1 = torch.randn(64, 64, device="cuda")
    w2 = torch.randn(64, 64, device="cuda")
    out = torch.empty(32, 64, device="cuda")
    side = torch.cuda.Stream()

    warmup = torch.cuda.Stream()
    warmup.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warmup):
        for _ in range(3):
            out.copy_(forward(x, w1, w2, side))
    torch.cuda.current_stream().wait_stream(warmup)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out.copy_(forward(x, w1, w2, side))
    say(stage="captured")

    for i in range(args.replays):
        x.copy_(torch.randn(32, 64, device="cuda"))  # new input in the static buffer
        graph.replay()
        say(stage="replay", index=i)
    torch.cuda.synchronize()

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    sample = torch.randn(16, 64, device="cuda")
    graphed = torch.cuda.make_graphed_callables(model, (sample,))
    for step in range(args.train_steps):
        optimizer.zero_grad(set_to_none=True)
        loss = graphed(sample).square().mean()
        loss.backward()
        optimizer.step()
        say(stage="train", step=step)
    torch.cuda.synchronize()
    # Autograd's device thread may still hold the last backward's task, whose
    # release needs the GIL: released during interpreter shutdown it aborts
    # the process ("terminate called without an active exception", a
    # PyTorch shutdown race seen on the sim about once in eight runs). Give
    # the thread the GIL before exiting.
    time.sleep(0.2)
    say(stage="done")


if __name__ == "__main__":
    main()
