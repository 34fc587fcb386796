// Entry points of NCCL releases newer than the toolkit's nccl.h (2.28.9),
// which PyTorch built against NCCL 2.30 imports: device communicators,
// one-sided signals, comm grow/suspend/resume, memory statistics. The sim
// cannot declare them from a header it does not have, so this file includes
// none: each takes no declared parameter (the System V ABI lets a caller
// pass any) and answers ncclInvalidUsage (5 in every nccl.h), like the
// features comm_extras.cpp does not model.
namespace {
constexpr int kNcclInvalidUsage = 5;
}  // namespace

#define NCCL_SIM_NEWER(name)                                                                  \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) int name(void); \
  extern "C" __attribute__((visibility("default"))) int p##name(void) { return kNcclInvalidUsage; }

NCCL_SIM_NEWER(ncclCommGetUniqueId)
NCCL_SIM_NEWER(ncclCommGrow)
NCCL_SIM_NEWER(ncclCommMemStats)
NCCL_SIM_NEWER(ncclCommResume)
NCCL_SIM_NEWER(ncclCommSuspend)
NCCL_SIM_NEWER(ncclDevCommCreate)
NCCL_SIM_NEWER(ncclDevCommDestroy)
NCCL_SIM_NEWER(ncclGetLsaMultimemDevicePointer)
NCCL_SIM_NEWER(ncclGetPeerDevicePointer)
NCCL_SIM_NEWER(ncclPutSignal)
NCCL_SIM_NEWER(ncclSignal)
NCCL_SIM_NEWER(ncclWaitSignal)
NCCL_SIM_NEWER(ncclWinGetUserPtr)
