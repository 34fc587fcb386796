// A CUPTI client for the unit tests: buffer callbacks that hand out
// buffers of a chosen size (or NULL), keep what comes back, and decode it
// with cuptiActivityGetNextRecord. Plus a fixture that leaves CUPTI and the
// fake hub clean for the next case.
#pragma once

#include <cupti.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fake_hub.h"

namespace testclient {

struct Delivery {
  std::vector<uint8_t> bytes;  // the valid part of the buffer
  size_t size = 0;             // the whole buffer, as bufferCompleted said
  uint32_t thread = 0;         // gettid of the thread that delivered it
};

struct Options {
  size_t buffer_size = 1 << 16;
  size_t max_records = 0;
  bool decline = false;  // answer bufferRequested with NULL
};

// Registers the buffer callbacks with these options.
void Install(const Options& options = {});
size_t Requests();  // bufferRequested calls so far
std::vector<Delivery> Deliveries();
// Waits (real time) until at least n buffers came back; returns them.
std::vector<Delivery> WaitForDeliveries(size_t n, std::chrono::milliseconds timeout);
void Clear();

// Every record delivered so far, copied out, in delivery order.
std::vector<std::vector<uint8_t>> Records();
template <typename T>
std::vector<T> RecordsOf(CUpti_ActivityKind kind) {
  std::vector<T> out;
  for (const auto& bytes : Records()) {
    if (reinterpret_cast<const CUpti_Activity*>(bytes.data())->kind == kind) {
      T record;
      std::memcpy(&record, bytes.data(), sizeof(T));
      out.push_back(record);
    }
  }
  return out;
}

uint32_t CurrentThread();

// Resets the fake hub before a case; finalizes CUPTI and forgets deliveries after.
struct Fresh {
  Fresh();
  ~Fresh();
};

}  // namespace testclient
