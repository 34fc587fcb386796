// PyTorch operators while a window warms up or records (PROF_TORCH_OPS).
//
// PyTorch's documented way to show its operators to a tool outside the
// process is its NVTX profiler (torch.autograd.profiler.emit_nvtx, what
// Nsight Systems' --pytorch option turns on): every operator becomes an NVTX
// range named with its sequence number, id and input shapes, and libprof
// receives the ranges as NVTX's injection library
// (collectors/nvtx/torch_op_name.h splits the names). The agent turns that
// profiler on itself, without the script's help:
//
//   - ConfigureTorchOps (agent start): in a CPython process, with
//     NVTX_INJECTION64_PATH unset, sets it to libprof's own path, so that
//     PyTorch's NVTX (which initializes at its first range, after this)
//     loads libprof as its injection;
//   - TorchOpsWanted(on) (the session, as recording turns on and off):
//     queues Py_AddPendingCall, which runs a few lines of Python on the
//     interpreter's main thread at its next bytecode boundary, with the GIL:
//     if torch is imported and no profiler of the program's is on, they turn
//     PyTorch's NVTX profiler on for that thread (without emit_nvtx's
//     torch.cuda.synchronize(), which would add a call to the program), and
//     off again when recording ends.
//
// The profiler's state is per thread; autograd hands it to its engine
// threads with each backward call, so the backward operators are covered.
// Operators of other Python threads are not. A torch.profiler (or
// emit_nvtx) the program starts on the main thread while ours is on would
// be refused by PyTorch ("profiler already enabled"): ours gives way first
// (the module's _enable_profiler is wrapped to turn ours off), and stays
// off until the next window.
//
// The same pending call turns the caching allocator's memory history on and
// off with recording and hands each window's history over
// (collectors/python/tensor_memory.h).
#pragma once

#include "base/config.h"
#include "collectors/python/tensor_memory.h"

namespace prof::python {

// At agent start, before the program's first NVTX range.
// modules: module paths too (PROF_TORCH_OPS=...,modules; experimental).
// memory: where the tensor memory goes (PROF_TORCH_MEMORY); null when off.
void ConfigureTorchOps(TorchOps mode, bool modules, TensorMemory* memory);

// Any thread, any number of times: the last call wins.
void TorchOpsWanted(bool on);

// As a window ends (before it is handed to the writer): the tensor memory
// recorded up to now is handed over to `memory` at the main thread's next
// bytecode boundary (TensorMemory::Take waits for it).
void TorchWindowEnded();

}  // namespace prof::python
