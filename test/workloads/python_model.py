"""A small training-like "model" driving libctypes_workload.so through ctypes,
for the Python call-site tests. Usage:

    python_model.py [--steps N] [--gil released|held] [--lib PATH] [--worker] [--pool]

--gil released loads the library with ctypes.CDLL (the GIL is released during
each call, as PyTorch releases it around its operators); held uses
ctypes.PyDLL (the GIL is kept). Each step also runs a coroutine that issues
a memset (asyncio) and has a C++ thread (no Python frames) launch a kernel
while it waits. --pool adds a backward-like call: a pool of native threads
launches kernels while the Python thread waits in the C call, as PyTorch's
autograd engine does in loss.backward(). Each step ends with prof_step() when the
process has libprof preloaded (PROF_STEP=manual). Lines the tests look for
carry a "# site:" comment; keep them on the line of the call.
"""
import argparse
import asyncio
import ctypes
import os
import sys
import threading
import time


class Linear:
    def __init__(self, lib, kernels):
        self.lib = lib
        self.kernels = kernels

    def forward(self, x):
        check(self.lib.wl_layer(self.kernels))  # site: layer
        return x + 1


class Model:
    def __init__(self, lib):
        self.layers = [Linear(lib, 2), Linear(lib, 3)]

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)  # site: model-layer
        return x


def check(code):
    if code != 0:
        raise RuntimeError(f"CUDA error {code}")


def data_loader(lib, steps):
    for step in range(steps):
        check(lib.wl_load_batch(step))  # site: load
        yield step


def item(lib):
    return lib.wl_item()  # site: item


def backward(lib):
    check(lib.wl_pool(3, 2))  # site: backward


def train_step(lib, model, batch, pool):
    check(lib.wl_scratch())  # site: scratch
    out = model.forward(batch)  # site: forward
    loss = item(lib)  # site: loss
    if pool:
        backward(lib)  # site: backward-call
    return out, loss


async def evaluate(lib):
    await asyncio.sleep(0)
    check(lib.wl_memset())  # site: coroutine


def worker(lib, started, stop):
    while not stop.is_set():
        check(lib.wl_worker(2))  # site: worker
        started.set()
        time.sleep(0.001)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--gil", choices=["released", "held"], default="released")
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--pool", action="store_true", help="a backward-like call served by native threads")
    parser.add_argument("--time", action="store_true", help="print the training loop's wall time (benchmark)")
    parser.add_argument("--lib", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "libctypes_workload.so"))
    args = parser.parse_args()
    loader = ctypes.CDLL if args.gil == "released" else ctypes.PyDLL
    lib = loader(args.lib, mode=os.RTLD_LOCAL)
    lib.wl_item.restype = ctypes.c_float
    try:
        prof_step = ctypes.CDLL(None).prof_step
    except AttributeError:
        prof_step = None
    check(lib.wl_init())
    model = Model(lib)
    thread = None
    stop = threading.Event()
    if args.worker:
        started = threading.Event()
        thread = threading.Thread(target=worker, args=(lib, started, stop), name="worker")
        thread.start()
        started.wait()
    start = time.perf_counter_ns()
    for batch in data_loader(lib, args.steps):  # site: loop
        train_step(lib, model, batch, args.pool)
        asyncio.run(evaluate(lib))  # site: run-coroutine
        check(lib.wl_cpp_thread(1))  # site: cpp-thread
        check(lib.wl_sync())  # site: sync
        if args.worker:
            time.sleep(0.005)  # the worker's launches land inside each step
        if prof_step is not None:
            prof_step()
    if args.time:
        print(f"loop_ns={time.perf_counter_ns() - start}")
    stop.set()
    if thread is not None:
        thread.join()
    print(f"done steps={args.steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
