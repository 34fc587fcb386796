#include "agent/session/collective_store.h"

#include <algorithm>


namespace prof {

std::vector<CollectiveCall> CollectiveStore::Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
  std::vector<CollectiveCall> out = calls_.Take(begin_ns, end_ns, dropped);
  std::sort(out.begin(), out.end(), [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
  return out;
}

void CollectiveStore::AddComm(const CommInfo& comm) {
  std::lock_guard<std::mutex> lock(mu_);
  for (CommInfo& c : comms_) {
    if (c.id == comm.id) {
      c = comm;
      return;
    }
  }
  if (comms_.size() < 4096) comms_.push_back(comm);  // bounded: a program creating comms in a loop
}

void CollectiveStore::RemoveComm(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  comms_.erase(std::remove_if(comms_.begin(), comms_.end(), [id](const CommInfo& c) { return c.id == id; }),
               comms_.end());
}

std::vector<CommInfo> CollectiveStore::Comms() {
  std::lock_guard<std::mutex> lock(mu_);
  return comms_;
}

}  // namespace prof
