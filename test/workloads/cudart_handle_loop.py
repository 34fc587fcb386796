"""A training loop in Python that calls CUDA through ctypes, as the stub
loaders of JAX, TensorFlow and numba do. Each iteration (train_step): a
cudaMemcpyAsync of pinned input to the device, two launches of `scale`
(driver_api_kernels.cubin, loaded with cuModuleLoadData) by cuLaunchKernel,
a cudaMemsetAsync, a synchronous cudaMemcpy of 4 KiB back to pageable
memory, a cudaMalloc + cudaFree of 1 MiB and a cudaStreamSynchronize, then
--host-ms of host work (a data loader). Prints "loop done iters=<N>"; exit 1
on a failed call.

--via handle (default): the runtime's functions are looked up in the handle
ctypes.CDLL returned for libcudart, so no LD_PRELOAD wrapper sees them.
--via global: libcudart is loaded RTLD_GLOBAL and its functions looked up
in the process's global scope (dlsym(RTLD_DEFAULT)), where a preloaded
library's wrappers come first. The driver calls go through libcuda's handle
either way.

Usage: cudart_handle_loop.py [--iters N] [--host-ms MS] [--via handle|global] [--cubin PATH]"""
import argparse
import ctypes
import os
import sys
import time

CUDART = "libcudart.so." + os.environ.get("SIM_PERSONALITY", "13")
H2D, D2H = 1, 2
N = 1 << 16  # floats per buffer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--host-ms", type=float, default=0.0)
    parser.add_argument("--via", choices=("handle", "global"), default="handle")
    parser.add_argument("--cubin", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "driver_api_kernels.cubin"))
    args = parser.parse_args()
    if args.via == "handle":
        rt = ctypes.CDLL(CUDART, mode=os.RTLD_LOCAL)
    else:
        ctypes.CDLL(CUDART, mode=os.RTLD_GLOBAL)
        rt = ctypes.CDLL(None)
    cu = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_LOCAL)

    def check(what, result):
        if result != 0:
            print(f"{what} failed: {result}")
            sys.exit(1)

    vp = ctypes.c_void_p
    check("cudaFree(0)", rt.cudaFree(vp(0)))  # the primary context, current on this thread
    with open(args.cubin, "rb") as f:
        image = f.read()
    module, scale = vp(), vp()
    check("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(module), image))
    check("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(scale), module, b"scale"))
    stream, data, pinned = vp(), vp(), vp()
    check("cudaStreamCreate", rt.cudaStreamCreate(ctypes.byref(stream)))
    check("cudaMalloc", rt.cudaMalloc(ctypes.byref(data), ctypes.c_size_t(N * 4)))
    check("cudaMallocHost", rt.cudaMallocHost(ctypes.byref(pinned), ctypes.c_size_t(N * 4)))
    pageable = ctypes.create_string_buffer(4096)
    count = ctypes.c_int(N)
    data_arg = vp(data.value)
    kernel_args = (vp * 2)(ctypes.cast(ctypes.byref(data_arg), vp), ctypes.cast(ctypes.byref(count), vp))

    def launch():
        check("cuLaunchKernel", cu.cuLaunchKernel(scale, ctypes.c_uint(N // 256), ctypes.c_uint(1), ctypes.c_uint(1),
                                                  ctypes.c_uint(256), ctypes.c_uint(1), ctypes.c_uint(1),
                                                  ctypes.c_uint(0), stream, kernel_args, vp(0)))

    def train_step():
        check("cudaMemcpyAsync", rt.cudaMemcpyAsync(data, pinned, ctypes.c_size_t(N * 4), H2D, stream))
        launch()
        launch()
        check("cudaMemsetAsync", rt.cudaMemsetAsync(data, 0, ctypes.c_size_t(4096), stream))
        check("cudaMemcpy", rt.cudaMemcpy(pageable, data, ctypes.c_size_t(4096), D2H))
        scratch = vp()
        check("cudaMalloc", rt.cudaMalloc(ctypes.byref(scratch), ctypes.c_size_t(1 << 20)))
        check("cudaFree", rt.cudaFree(scratch))
        check("cudaStreamSynchronize", rt.cudaStreamSynchronize(stream))

    for _ in range(args.iters):
        train_step()
        if args.host_ms:
            time.sleep(args.host_ms / 1000)
    check("cudaFreeHost", rt.cudaFreeHost(pinned))
    check("cudaFree", rt.cudaFree(data))
    check("cudaStreamDestroy", rt.cudaStreamDestroy(stream))
    print(f"loop done iters={args.iters}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
