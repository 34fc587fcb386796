#include "model/collectives.h"

#include <string>

#include "model/events.h"

namespace prof {

const char* CollFuncName(uint8_t func) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                       "AlltoAll",      "Gather",    "Scatter", "Send",     "Recv"};
  return func < static_cast<uint8_t>(CollFunc::kCount) ? kNames[func] : "?";
}

const char* CollKinetoName(uint8_t func) {
  static const char* const kNames[] = {"allreduce",  "broadcast", "reduce", "all_gather", "reduce_scatter",
                                       "all_to_all", "gather",    "scatter", "send",      "recv"};
  return func < static_cast<uint8_t>(CollFunc::kCount) ? kNames[func] : "unknown";
}

const char* CollDtypeName(int datatype) {
  // ncclInt8, Uint8, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64,
  // Bfloat16, Float8e4m3, Float8e5m2 as c10::toString names them.
  static const char* const kNames[] = {"Char", "Byte",     "Int",   "UInt32",         "Long",          "UInt64",
                                       "Half", "Float",    "Double", "BFloat16", "Float8_e4m3fn", "Float8_e5m2"};
  return datatype >= 0 && datatype < 12 ? kNames[datatype] : "";
}

int CollTypeBytes(int datatype) {
  static const int kBytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return datatype >= 0 && datatype < 12 ? kBytes[datatype] : 0;
}

std::string NcclVersionText(int code) {
  if (code <= 0) return "";
  int major, minor, patch;
  if (code >= 10000) {
    major = code / 10000;
    minor = (code / 100) % 100;
    patch = code % 100;
  } else {
    major = code / 1000;
    minor = (code / 100) % 10;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace prof
