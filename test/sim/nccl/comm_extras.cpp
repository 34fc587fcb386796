// The simulated NCCL's smaller entry points: a communicator's async error,
// buffer registration, user-defined reduction operators, and the entry
// points of NCCL features the sim does not model (symmetric windows, comm
// shrink and revoke, the gather collective, NCCL's own allocator, the
// scalable init, group simulation). Those exist so that programs bound to
// them at load (PyTorch's libtorch_cuda imports every one) start; each
// answers ncclInvalidUsage, NCCL's "this call cannot be made here", and
// nothing else happens.
#include "api.h"
#include "internal.h"

// The sim's collectives never fail after they were enqueued; an aborted
// communicator reports what NCCL reports for one.
NCCL_SIM_API(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError)) {
  if (!comm || !asyncError) return ncclInvalidArgument;
  *asyncError = comm->aborted ? ncclInvalidUsage : ncclSuccess;
  return ncclSuccess;
}

// Registration only speeds transfers up in NCCL; the model has nothing to
// speed up, so a registration is a handle naming the buffer.
NCCL_SIM_API(ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle)) {
  if (!comm || !handle || (!buff && size > 0)) return ncclInvalidArgument;
  *handle = buff ? buff : comm;
  return ncclSuccess;
}

NCCL_SIM_API(ncclCommDeregister, (const ncclComm_t comm, void* handle)) {
  if (!comm || !handle) return ncclInvalidArgument;
  return ncclSuccess;
}

// User-defined operators are numbered from ncclNumOps, as NCCL numbers them.
NCCL_SIM_API(ncclRedOpCreatePreMulSum, (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                         ncclScalarResidence_t residence, ncclComm_t comm)) {
  if (!op || !scalar || !comm || datatype < 0 || datatype >= ncclNumTypes) return ncclInvalidArgument;
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) return ncclInvalidArgument;
  *op = static_cast<ncclRedOp_t>(static_cast<int>(ncclNumOps) + comm->next_user_op++);
  return ncclSuccess;
}

NCCL_SIM_API(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm)) {
  if (!comm || static_cast<int>(op) < static_cast<int>(ncclNumOps)) return ncclInvalidArgument;
  return ncclSuccess;
}

// ---- not modelled

NCCL_SIM_API(ncclCommWindowRegister, (ncclComm_t, void*, size_t, ncclWindow_t*, int)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclCommWindowDeregister, (ncclComm_t, ncclWindow_t)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclCommShrink, (ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclCommRevoke, (ncclComm_t, int)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclGather, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)) {
  return ncclInvalidUsage;
}
NCCL_SIM_API(ncclMemAlloc, (void**, size_t)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclMemFree, (void*)) { return ncclInvalidUsage; }
NCCL_SIM_API(ncclCommInitRankScalable, (ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*)) {
  return ncclInvalidUsage;
}
NCCL_SIM_API(ncclGroupSimulateEnd, (ncclSimInfo_t*)) { return ncclInvalidUsage; }
