// NCCL collectives in a window (model/events.h, model/collectives.h): which kernel each
// call launched, the sizes Kineto and nccl-tests speak of, and which GPU
// work is communication. Pure functions of a Window.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "model/window.h"

namespace prof {

// A kernel HTA counts as communication: its name starts with "nccl" (after
// an Itanium "_Z<len>" prefix), or holds "ncclKernel"/"ncclDevKernel"
// (HTA's CommunicateKernelGroupingPattern, which NCCL's kernels of every
// version match).
bool IsCommunicationKernelName(std::string_view name);

// Sizes of one call, as PyTorch/Kineto count elements ("In msg nelems",
// "Out msg nelems") and as nccl-tests counts bytes and bus bandwidth
// (S = bus_bytes, busbw = S / t x factor).
struct CollectiveSizes {
  uint64_t in_nelems = 0;
  uint64_t out_nelems = 0;
  double bytes = 0;   // S
  double factor = 1;  // bus-bandwidth factor
  int group_size = 0;
};
CollectiveSizes SizesOf(const CollectiveCall& call, int nranks);

class CollectiveIndex {
 public:
  explicit CollectiveIndex(const Window& w);
  // The call whose kernel launch has this CUPTI correlation id; null if none.
  const CollectiveCall* ForCorrelation(uint32_t correlation) const;
  const CommInfo* Comm(uint64_t id) const;
  // Kineto's collective args for a kernel of `call`, each preceded by ','.
  std::string KernelArgs(const CollectiveCall& call) const;
  // The rank and world size the trace states: the launcher's when known,
  // else the largest communicator's.
  int Rank() const;
  int WorldSize() const;

 private:
  const Window& w_;
  std::unordered_map<uint32_t, const CollectiveCall*> by_correlation_;
  std::unordered_map<uint64_t, const CommInfo*> comms_;
  const CommInfo* world_ = nullptr;  // the largest communicator
};

// "0x<16 hex digits>": a communicator's id as the trace's process group name.
std::string CommName(uint64_t id);
// "[0, 1, 2, 3]" (Kineto's form, truncated after 30 entries) for a
// communicator spanning the job (as many ranks as the world), "" when its
// members' global ranks are not known.
std::string CommRanks(const CommInfo& comm, int world_size);

}  // namespace prof
