// Names and sizes of NCCL operations and data types, as NCCL and Kineto
// spell them: pure functions every part uses (the NCCL collector, the
// exporters, the prof tool).
#pragma once

#include <cstdint>
#include <string>

namespace prof {

// "AllReduce", ... as NCCL names them; "?" out of range.
const char* CollFuncName(uint8_t func);
// Kineto's "Collective name" (PyTorch's names): "allreduce", "broadcast", ...
const char* CollKinetoName(uint8_t func);
// Kineto's "dtype" (c10 scalar type names) for an ncclDataType_t: "Float", ...; "" unknown.
const char* CollDtypeName(int datatype);
// Bytes per element of an ncclDataType_t; 0 unknown.
int CollTypeBytes(int datatype);
// "2.28.9" from NCCL_VERSION_CODE-style numbers (22809; 2.8 and older: 2804); "" for 0.
std::string NcclVersionText(int code);

}  // namespace prof
