"""Work on a device other than the first, the way a PyTorch user picks one:
torch.cuda.set_device(1), a few ops on "cuda", a tensor made on cuda:2 and
copied to the current device, and the same ops under torch.profiler, whose
Chrome trace is written to --trace. Nothing in it knows about a profiler
beyond that. Prints one JSON line per stage.

    python torch_set_device.py --trace PATH [--device 1]
"""
import argparse
import json

import torch


def say(**fields):
    print(json.dumps(fields), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", required=True)
    parser.add_argument("--device", type=int, default=1)
    args = parser.parse_args()
    say(stage="start", count=torch.cuda.device_count())

    torch.cuda.set_device(args.device)
    x = torch.randn(128, 128, device="cuda")
    w = torch.randn(128, 128, device="cuda")
    y = torch.relu(x @ w).sum()
    y.item()  # a device-to-host copy and a synchronization
    say(stage="ops", current=torch.cuda.current_device(), device=str(x.device))

    other = (args.device + 1) % torch.cuda.device_count()
    z = torch.ones(1024, device=f"cuda:{other}")
    here = z.to("cuda")  # another device's memory to this one's
    torch.cuda.synchronize()
    say(stage="copied", source=str(z.device), destination=str(here.device))

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            y = torch.relu(x @ w)
        torch.cuda.synchronize()
    prof.export_chrome_trace(args.trace)
    say(stage="done", current=torch.cuda.current_device())


if __name__ == "__main__":
    main()
