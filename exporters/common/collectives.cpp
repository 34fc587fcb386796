#include "exporters/common/collectives.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "exporters/common/json_writer.h"
#include "model/collectives.h"

namespace prof {

bool IsCommunicationKernelName(std::string_view name) {
  if (name.find("ncclKernel") != std::string_view::npos || name.find("ncclDevKernel") != std::string_view::npos) {
    return true;
  }
  if (name.substr(0, 2) == "_Z") {
    size_t i = 2;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    name.remove_prefix(i);
  }
  return name.substr(0, 4) == "nccl";
}

CollectiveSizes SizesOf(const CollectiveCall& call, int nranks) {
  CollectiveSizes s;
  const uint64_t n = nranks > 0 ? static_cast<uint64_t>(nranks) : 1;
  const double type_bytes = CollTypeBytes(call.datatype);
  const double nd = static_cast<double>(n);
  s.group_size = static_cast<int>(n);
  s.in_nelems = s.out_nelems = call.count;
  s.bytes = static_cast<double>(call.count) * type_bytes;
  switch (static_cast<CollFunc>(call.func)) {
    case CollFunc::kAllReduce: s.factor = 2.0 * (nd - 1) / nd; return s;
    case CollFunc::kAllGather:
    case CollFunc::kGather: s.out_nelems = call.count * n; break;
    case CollFunc::kReduceScatter:
    case CollFunc::kScatter: s.in_nelems = call.count * n; break;
    case CollFunc::kAlltoAll: s.in_nelems = s.out_nelems = call.count * n; break;
    default: return s;  // Broadcast, Reduce, Send, Recv: S = count x size, factor 1
  }
  // The gathers, scatters and all-to-all: S = n x count x size, factor (n-1)/n.
  s.bytes *= nd;
  s.factor = (nd - 1) / nd;
  return s;
}

CollectiveIndex::CollectiveIndex(const Window& w) : w_(w) {
  for (const CollectiveCall& c : w.collectives) {
    // Several calls of one group may share a launch: the first keeps it.
    if (c.correlation_id != 0) by_correlation_.emplace(c.correlation_id, &c);
  }
  for (const CommInfo& c : w.communicators) {
    comms_.emplace(c.id, &c);
    if (world_ == nullptr || c.nranks > world_->nranks) world_ = &c;
  }
}

const CollectiveCall* CollectiveIndex::ForCorrelation(uint32_t correlation) const {
  auto it = by_correlation_.find(correlation);
  return it == by_correlation_.end() ? nullptr : it->second;
}

const CommInfo* CollectiveIndex::Comm(uint64_t id) const {
  auto it = comms_.find(id);
  return it == comms_.end() ? nullptr : it->second;
}

int CollectiveIndex::Rank() const { return w_.meta.rank_known || world_ == nullptr ? w_.meta.rank : world_->rank; }

int CollectiveIndex::WorldSize() const {
  return w_.meta.rank_known || world_ == nullptr ? w_.meta.world_size : world_->nranks;
}

std::string CommName(uint64_t id) {
  char b[24];
  snprintf(b, sizeof(b), "0x%016" PRIx64, id);
  return b;
}

std::string CommRanks(const CommInfo& comm, int world_size) {
  if (comm.nranks != world_size || comm.nranks <= 0) return "";
  std::string out = "[";
  for (int r = 0; r < comm.nranks; ++r) {
    if (comm.nranks > 30 && r == 29) {  // Kineto's truncation: "[a, b, ..., last]"
      out += "..., " + std::to_string(comm.nranks - 1);
      break;
    }
    out += (r ? ", " : "") + std::to_string(r);
  }
  return out + "]";
}

std::string CollectiveIndex::KernelArgs(const CollectiveCall& call) const {
  const CommInfo* comm = Comm(call.comm_id);
  const CollectiveSizes s = SizesOf(call, comm ? comm->nranks : 0);
  std::string out = ",\"Collective name\":\"";
  out += CollKinetoName(call.func);
  out += "\",\"In msg nelems\":" + std::to_string(s.in_nelems);
  out += ",\"Out msg nelems\":" + std::to_string(s.out_nelems);
  out += ",\"Group size\":" + std::to_string(comm ? comm->nranks : 0);
  out += ",\"dtype\":\"";
  out += CollDtypeName(call.datatype);
  out += "\"";
  if (static_cast<CollFunc>(call.func) == CollFunc::kAlltoAll) {
    out += ",\"In split size\":\"[]\",\"Out split size\":\"[]\"";  // equal splits, as PyTorch writes them
  }
  out += ",\"Process Group Name\":\"" + CommName(call.comm_id) + "\"";
  if (comm) {
    std::string ranks = CommRanks(*comm, WorldSize());
    if (!ranks.empty()) out += ",\"Process Group Ranks\":\"" + ranks + "\"";
  }
  if (static_cast<CollFunc>(call.func) == CollFunc::kSend) out += ",\"Dst Rank\":" + std::to_string(call.root_or_peer);
  if (static_cast<CollFunc>(call.func) == CollFunc::kRecv) out += ",\"Src Rank\":" + std::to_string(call.root_or_peer);
  out += ",\"Seq\":" + std::to_string(call.seq);
  return out;
}

}  // namespace prof
