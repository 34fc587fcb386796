// Puts a window's device records in start order (the order the Window
// contract promises) cheaply: records arrive nearly sorted (in order within
// each CUPTI buffer, buffers interleaved), and a DeviceRecord is 128 bytes.
#pragma once

#include <vector>

#include "model/events.h"

namespace prof::cupti {

// Sorts by start_ns; records with equal start_ns keep their arrival order
// (deterministic output). Already sorted input costs one pass. Otherwise
// 8-byte keys (start and index in one integer) are sorted, then each record
// is moved once into place (transient memory: 8 bytes per record, not a
// second copy of the records).
void SortByStart(std::vector<DeviceRecord>* records);

}  // namespace prof::cupti
