"""What a child script on the simulated stack starts with (harness.run_sim_script
runs it; SIM_LIB_DIR names the sim's folder): the runtime and driver through
ctypes, out(key, value) for the "key value" lines the parent reads, the
calling thread's device, and kernels from a PTX library the driver loads
(the sim reads its .entry names), launched with cuLaunchKernel."""
import textwrap

PRELUDE = textwrap.dedent("""
    import ctypes, os
    rt = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libcudart.so.13"))
    cu = ctypes.CDLL(os.path.join(os.environ["SIM_LIB_DIR"], "libcuda.so.1"))
    def ptr():
        return ctypes.c_void_p()
    def out(key, value):
        print(key, value)
    def device():
        d = ctypes.c_int(-1); rt.cudaGetDevice(ctypes.byref(d)); return d.value
    def kernel(name):
        # A kernel from a PTX library the driver loads (the sim reads its .entry names).
        ptx = b".version 8.0\\n.target sm_90\\n.address_size 64\\n.visible .entry " + name + b"()\\n{\\n ret;\\n}\\n"
        lib, k = ptr(), ptr()
        assert cu.cuLibraryLoadData(ctypes.byref(lib), ptx, None, None, 0, None, None, 0) == 0
        assert cu.cuLibraryGetKernel(ctypes.byref(k), lib, name) == 0
        return k
    def launch(k, stream=None, blocks=1):
        return cu.cuLaunchKernel(k, blocks, 1, 1, 32, 1, 1, 0, stream, None, None)
""")
