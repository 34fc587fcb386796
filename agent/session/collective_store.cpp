#include "agent/session/collective_store.h"

#include <algorithm>


namespace prof {

void CollectiveStore::SetCapacity(size_t max_calls) {
  std::lock_guard<std::mutex> lock(mu_);
  max_calls_ = max_calls;
}

void CollectiveStore::Add(const CollectiveCall& call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (calls_.size() >= max_calls_) {
    uint64_t begin = open_.DropBefore();
    auto before = [begin](const CollectiveCall& c) { return c.start_ns < begin; };
    calls_.erase(std::remove_if(calls_.begin(), calls_.end(), before), calls_.end());
    if (calls_.size() >= max_calls_) {
      open_.Dropped();
      return;
    }
  }
  calls_.push_back(call);
}

std::vector<CollectiveCall> CollectiveStore::Take(uint64_t begin_ns, uint64_t end_ns, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.TakenBefore(end_ns);
  std::vector<CollectiveCall> out =
      TakeWindowEntries(calls_, begin_ns, end_ns, [](const CollectiveCall& c) { return c.start_ns; });
  std::sort(out.begin(), out.end(), [](const CollectiveCall& a, const CollectiveCall& b) { return a.start_ns < b.start_ns; });
  *dropped += open_.TakeDrops(begin_ns, end_ns);
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
