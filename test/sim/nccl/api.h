// How the sim defines NCCL's entry points, as NCCL builds them (PROFAPI):
// the strong symbol is pncclX, and ncclX is a weak alias of it, so a tool
// may define ncclX and forward to pncclX.
#pragma once

#include <nccl.h>

#define NCCL_SIM_API(name, params)                                                                 \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ncclResult_t name params; \
  extern "C" __attribute__((visibility("default"))) ncclResult_t p##name params

#define NCCL_SIM_API_CONST(type, name, params)                                             \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) type name params; \
  extern "C" __attribute__((visibility("default"))) type p##name params
