// Collectives and point-to-point calls: validation, groups, one kernel per
// rank on the caller's stream (named as NCCL >= 2.19 names them), the
// rendezvous that holds each kernel until every rank started its own, the
// transfer-time model, truth lines and profiler-plugin events. The model is
// described in test/sim/README.md ("Collectives").
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api.h"
#include "internal.h"

namespace simnccl {

const Hub& GetHub() {
  static const Hub hub = [] {
    Hub h{};
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) return h;
    h.now_ns = reinterpret_cast<uint64_t (*)()>(dlsym(lib, "simhub_now_ns"));
    h.truth_line = reinterpret_cast<void (*)(const char*)>(dlsym(lib, "simhub_truth_line"));
    h.gate_create = reinterpret_cast<void* (*)(uint64_t, void (*)(void*, uint64_t), void*)>(dlsym(lib, "simhub_gate_create"));
    h.gate_arm = reinterpret_cast<void (*)(void*)>(dlsym(lib, "simhub_gate_arm"));
    h.gate_release = reinterpret_cast<void (*)(void*, uint64_t)>(dlsym(lib, "simhub_gate_release"));
    h.current_device = reinterpret_cast<int (*)()>(dlsym(lib, "simhub_current_device"));
    h.memory_holds = reinterpret_cast<int (*)(const void*, size_t)>(dlsym(lib, "simhub_memory_holds"));
    h.ok = h.now_ns && h.truth_line && h.gate_create && h.gate_arm && h.gate_release && h.current_device &&
           h.memory_holds;
    return h;
  }();
  return hub;
}

namespace {

using Func = CollFunc;

const char* FuncName(Func f) {
  switch (f) {
    case Func::kAllReduce: return "AllReduce";
    case Func::kBroadcast: return "Broadcast";
    case Func::kReduce: return "Reduce";
    case Func::kAllGather: return "AllGather";
    case Func::kReduceScatter: return "ReduceScatter";
    case Func::kAlltoAll: return "AlltoAll";
    case Func::kSend: return "Send";
    case Func::kRecv: return "Recv";
  }
  return "?";
}

// ncclDataType_t: bytes, NCCL's profiler string, and the kernel-name type
// (only unsigned and float specialisations exist: signed maps to unsigned).
struct TypeInfo {
  size_t bytes;
  const char* name;
  const char* kernel;
};
const TypeInfo kTypes[] = {
    {1, "ncclInt8", "u8"},          {1, "ncclUint8", "u8"},       {4, "ncclInt32", "u32"},
    {4, "ncclUint32", "u32"},       {8, "ncclInt64", "u64"},      {8, "ncclUint64", "u64"},
    {2, "ncclFloat16", "f16"},      {4, "ncclFloat32", "f32"},    {8, "ncclFloat64", "f64"},
    {2, "ncclBfloat16", "bf16"},    {1, "ncclFloat8e4m3", "f8e4m3"}, {1, "ncclFloat8e5m2", "f8e5m2"},
};
constexpr int kNumTypes = sizeof(kTypes) / sizeof(kTypes[0]);

struct Task {
  Func func;
  ncclComm_t comm;
  CUstream stream;
  int datatype;
  size_t count;
  int root;  // -1: none
  int peer;  // p2p
  const void* send;
  void* recv;
  int redop = ncclSum;  // reductions
};

// ---- model (README "Collectives")

double EnvDouble(const char* name, double fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = strtod(v, &end);
  return (end && *end == 0 && d > 0) ? d : fallback;
}
double BusBytesPerNs() {
  static const double v = EnvDouble("SIM_NCCL_BUSBW_GBPS", 100.0);  // GB/s = bytes per ns
  return v;
}
uint64_t StepNs() {
  static const uint64_t v = static_cast<uint64_t>(EnvDouble("SIM_NCCL_STEP_NS", 1000.0));
  return v;
}
constexpr uint64_t kBaseNs = 2000;  // a kernel's fixed cost, as the CUDA model's kernels have

bool TreeAllReduce() {
  static const bool tree = [] {
    const char* v = getenv("NCCL_ALGO");
    return v && strncasecmp(v, "tree", 4) == 0;
  }();
  return tree;
}

// S (bytes, as nccl-tests counts them) and the bus-bandwidth factor.
void SizeAndFactor(Func f, size_t count, size_t type_bytes, int n, double* bytes, double* factor) {
  const double c = static_cast<double>(count) * static_cast<double>(type_bytes);
  switch (f) {
    case Func::kAllReduce: *bytes = c; *factor = 2.0 * (n - 1) / n; break;
    case Func::kAllGather:
    case Func::kReduceScatter: *bytes = c * n; *factor = static_cast<double>(n - 1) / n; break;
    case Func::kAlltoAll: *bytes = c * n; *factor = static_cast<double>(n - 1) / n; break;
    default: *bytes = c; *factor = 1.0; break;  // Broadcast, Reduce, Send, Recv
  }
}

int Steps(Func f, int n) {
  if (n <= 1) return 0;
  if (f == Func::kAllReduce) return TreeAllReduce() ? 2 * static_cast<int>(std::ceil(std::log2(n))) : 2 * (n - 1);
  return n - 1;
}

uint64_t TransferNs(double bus_bytes, int steps) {
  return kBaseNs + static_cast<uint64_t>(steps) * StepNs() + static_cast<uint64_t>(std::ceil(bus_bytes / BusBytesPerNs()));
}

uint8_t Channels(double bytes) {
  const double c = std::ceil(bytes / (512.0 * 1024));
  return static_cast<uint8_t>(std::min(16.0, std::max(2.0, c)));
}

// ---- kernels

std::string KernelBase(Func f, int datatype) {
  const char* ty = kTypes[datatype].kernel;
  switch (f) {
    case Func::kAllReduce: return std::string("ncclDevKernel_AllReduce_Sum_") + ty + (TreeAllReduce() ? "_TREE_LL" : "_RING_LL");
    case Func::kReduce: return std::string("ncclDevKernel_Reduce_Sum_") + ty + "_RING_LL";
    case Func::kReduceScatter: return std::string("ncclDevKernel_ReduceScatter_Sum_") + ty + "_RING_LL";
    case Func::kAllGather: return "ncclDevKernel_AllGather_RING_LL";
    case Func::kBroadcast: return "ncclDevKernel_Broadcast_RING_LL";
    default: return "ncclDevKernel_SendRecv";  // AlltoAll runs as send/recv tasks
  }
}
std::string Mangled(const std::string& base) {
  return "_Z" + std::to_string(base.size()) + base + "24ncclDevKernelArgsStorageILm4096EE";
}

// The kernels live in one library, loaded from PTX naming every kernel the
// sim launches (the driver then knows them as a real image's kernels).
struct Kernels {
  std::mutex mutex;
  CUlibrary library = nullptr;
  std::map<std::string, CUkernel> by_name;
};
Kernels& KernelTable() {
  static Kernels* k = new Kernels();
  return *k;
}
CUkernel KernelFor(const std::string& mangled) {
  Kernels& k = KernelTable();
  std::lock_guard<std::mutex> lock(k.mutex);
  const Driver& d = GetDriver();
  if (!k.library) {
    static std::string ptx;
    ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
    std::vector<std::string> names{Mangled("ncclDevKernel_AllGather_RING_LL"), Mangled("ncclDevKernel_Broadcast_RING_LL"),
                                   Mangled("ncclDevKernel_SendRecv")};
    for (int t = 0; t < kNumTypes; ++t) {
      if (t == 0 || t == 2 || t == 4) continue;  // signed types share the unsigned kernels
      for (const char* f : {"AllReduce", "Reduce", "ReduceScatter"}) {
        for (const char* a : {"_RING_LL", "_TREE_LL"}) {
          if (std::string(f) != "AllReduce" && std::string(a) == "_TREE_LL") continue;
          names.push_back(Mangled(std::string("ncclDevKernel_") + f + "_Sum_" + kTypes[t].kernel + a));
        }
      }
    }
    for (const std::string& n : names) ptx += ".visible .entry " + n + "(\n.param .align 8 .b8 args[4096]\n)\n{\nret;\n}\n";
    if (d.cuLibraryLoadData(&k.library, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0) != CUDA_SUCCESS) {
      k.library = nullptr;
      return nullptr;
    }
  }
  auto it = k.by_name.find(mangled);
  if (it != k.by_name.end()) return it->second;
  CUkernel kernel = nullptr;
  if (d.cuLibraryGetKernel(&kernel, k.library, mangled.c_str()) != CUDA_SUCCESS) return nullptr;
  k.by_name[mangled] = kernel;
  return kernel;
}

// ---- the rendezvous

struct Message {  // one send or receive of a p2p group
  bool is_send;
  int peer;
  uint64_t n;  // index among this pair's messages
  const void* send;  // the bytes (README "Data")
  void* recv;
  size_t bytes;
  bool data_ok = true;
  bool published = false;
  bool consumed = false;
  uint64_t peer_start = 0;
};

struct Pending {
  ncclComm_t comm;
  bool p2p;
  uint64_t op = 0;      // collective index on the communicator
  std::vector<Message> messages;
  void* gate = nullptr;
  std::string truth;    // the line's fixed part
  uint64_t arrival_ns;  // the host call (sim clock)
  uint64_t transfer_ns;
  double bytes;         // nccl-tests' S
  double factor;
  uint8_t channels;
  void* plugin_task = nullptr;
  CollBytes data{};             // collectives: what the bytes are (README "Data")
  bool data_published = false;  // poller thread only
  bool data_ok = true;
  // Set by OnStart (any thread) under the poller's mutex.
  bool started = false;
  bool published = false;
  bool cancelled = false;
  uint64_t start_ns = 0;
};

struct Poller {
  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable drained;
  std::list<std::shared_ptr<Pending>> pending;
  bool running = false;
};
Poller& ThePoller() {
  static Poller* p = new Poller();  // never destroyed: exit handlers may still wait on it
  return *p;
}

void OnStart(void* arg, uint64_t start_ns) {
  auto* p = static_cast<Pending*>(arg);
  Poller& poller = ThePoller();
  {
    std::lock_guard<std::mutex> lock(poller.mutex);
    p->started = true;
    p->start_ns = start_ns;
  }
  poller.wake.notify_all();
}

uint64_t MinReleased(Shared* s, int nranks) {
  uint64_t m = UINT64_MAX;
  for (int r = 0; r < nranks; ++r) m = std::min(m, s->ranks[r].released.load(std::memory_order_acquire));
  return m;
}

// Publishes this rank's start where the peers read it; false while the
// ring slot still holds a value a peer has not used.
bool Publish(Pending& p) {
  ncclComm_t c = p.comm;
  Shared* s = c->shared;
  if (!p.p2p) {
    // The bytes first: a peer that sees the start reads them.
    if (!p.data_published) p.data_ok = PublishCollData(c, p.op, p.data);
    p.data_published = true;
    if (p.op >= static_cast<uint64_t>(kCollRing) && MinReleased(s, c->nranks) <= p.op - kCollRing) return false;
    Mailbox& m = s->coll[p.op % kCollRing][c->rank];
    m.value.store(p.start_ns, std::memory_order_relaxed);
    m.tag.store(p.op + 1, std::memory_order_release);
    return true;
  }
  bool all = true;
  for (Message& msg : p.messages) {
    if (msg.published) continue;
    Mailbox& m = msg.is_send ? s->pairs[c->rank][msg.peer].send[msg.n % kP2pRing]
                             : s->pairs[msg.peer][c->rank].recv[msg.n % kP2pRing];
    const uint64_t tag = m.tag.load(std::memory_order_acquire);
    if (tag != 0 && m.ack.load(std::memory_order_acquire) != tag) {
      all = false;  // the peer has not read the previous message in this slot
      continue;
    }
    if (msg.is_send) msg.data_ok = PublishSendData(c, msg.peer, msg.n, msg.send, msg.bytes);
    m.value.store(p.start_ns, std::memory_order_relaxed);
    m.tag.store(msg.n + 1, std::memory_order_release);
    msg.published = true;
  }
  return all;
}

// The latest start over the ranks this kernel waits for, once all are known.
bool Release(Pending& p, uint64_t* release_ns) {
  ncclComm_t c = p.comm;
  Shared* s = c->shared;
  uint64_t latest = p.start_ns;
  if (!p.p2p) {
    for (int r = 0; r < c->nranks; ++r) {
      Mailbox& m = s->coll[p.op % kCollRing][r];
      if (m.tag.load(std::memory_order_acquire) != p.op + 1) return false;
      latest = std::max(latest, m.value.load(std::memory_order_relaxed));
    }
    *release_ns = latest;
    return true;
  }
  for (Message& msg : p.messages) {
    if (!msg.consumed) {
      Mailbox& m = msg.is_send ? s->pairs[c->rank][msg.peer].recv[msg.n % kP2pRing]
                               : s->pairs[msg.peer][c->rank].send[msg.n % kP2pRing];
      if (m.tag.load(std::memory_order_acquire) != msg.n + 1) return false;
      msg.peer_start = m.value.load(std::memory_order_relaxed);
      m.ack.store(msg.n + 1, std::memory_order_release);
      msg.consumed = true;
    }
    latest = std::max(latest, msg.peer_start);
  }
  *release_ns = latest;
  return true;
}

void NoteReleased(ncclComm_t c, uint64_t op) {
  // Collectives may finish out of order (different streams): the shared
  // count is the length of the finished prefix.
  static std::mutex mutex;
  static std::map<ncclComm_t, std::set<uint64_t>> done;
  std::lock_guard<std::mutex> lock(mutex);
  auto& set = done[c];
  set.insert(op);
  while (!set.empty() && *set.begin() == c->released) {
    set.erase(set.begin());
    ++c->released;
  }
  c->shared->ranks[c->rank].released.store(c->released, std::memory_order_release);
}

// This rank's received bytes, written before the kernel's end is placed
// (work queued behind it then sees them); false if any could not be.
bool Receive(Pending& p) {
  if (!p.p2p) return ReceiveCollData(p.comm, p.op, p.data) && p.data_ok;
  bool ok = true;
  for (Message& msg : p.messages) {
    ok = (msg.is_send ? msg.data_ok : ReceiveRecvData(p.comm, msg.peer, msg.n, msg.recv, msg.bytes)) && ok;
  }
  return ok;
}

void Finish(Pending& p, uint64_t release_ns, bool timed_out) {
  const Hub& hub = GetHub();
  const bool data = !timed_out && Receive(p);
  const uint64_t end = std::max(p.start_ns, release_ns) + p.transfer_ns;
  const double dur = static_cast<double>(end - p.start_ns);
  char tail[512];
  snprintf(tail, sizeof(tail),
           ",\"start_ns\":%" PRIu64 ",\"release_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
           ",\"transfer_ns\":%" PRIu64 ",\"bus_bytes\":%.0f,\"algbw_gbps\":%.6f,\"busbw_gbps\":%.6f,\"timed_out\":%s,"
           "\"data\":%s}",
           p.start_ns, release_ns, end, release_ns > p.start_ns ? release_ns - p.start_ns : 0, p.transfer_ns, p.bytes,
           p.bytes / dur, p.bytes * p.factor / dur, timed_out ? "true" : "false", data ? "true" : "false");
  // The line goes out before the kernel is placed: once placed, the
  // program's synchronize can return and the process exit, and this
  // (detached) thread with it.
  hub.truth_line((p.truth + tail).c_str());
  hub.gate_release(p.gate, release_ns);  // the kernel is placed and reported here
  if (!p.p2p) NoteReleased(p.comm, p.op);
  PluginKernelDone(p.comm, p.plugin_task, p.channels, p.start_ns, end);
}

void PollerLoop() {
  Poller& poller = ThePoller();
  const Hub& hub = GetHub();
  std::unique_lock<std::mutex> lock(poller.mutex);
  // How long to sleep before looking again while peers are awaited: from
  // 20 us, doubling up to 500 us while nothing arrives, so that ranks
  // waiting for a late peer leave it the CPU (ranks may outnumber cores).
  uint64_t idle_us = 20;
  size_t seen = 0;  // pending entries at the last look
  for (;;) {
    poller.wake.wait(lock, [&] { return !poller.pending.empty(); });
    if (poller.pending.size() != seen) idle_us = 20;  // new work: look often again
    std::vector<std::pair<std::shared_ptr<Pending>, std::pair<uint64_t, bool>>> ready;
    for (auto it = poller.pending.begin(); it != poller.pending.end();) {
      Pending& p = **it;
      if (p.cancelled) {
        it = poller.pending.erase(it);
        continue;
      }
      if (p.started && !p.published) p.published = Publish(p);
      uint64_t release = 0;
      if (p.published && Release(p, &release)) {
        ready.push_back({*it, {release, false}});
        it = poller.pending.erase(it);
        continue;
      }
      if (p.started && hub.now_ns() > p.start_ns + TimeoutNs()) {
        fprintf(stderr, "simulated NCCL: rank %d of %d gave up waiting for its peers after %" PRIu64 " ms\n",
                p.comm->rank, p.comm->nranks, TimeoutNs() / 1000000);
        ready.push_back({*it, {hub.now_ns(), true}});
        it = poller.pending.erase(it);
        continue;
      }
      ++it;
    }
    if (!ready.empty()) {
      lock.unlock();
      for (auto& [p, r] : ready) {
        Finish(*p, r.first, r.second);
        p->comm->in_flight.fetch_sub(1);
      }
      lock.lock();
      poller.drained.notify_all();
      idle_us = 20;
      seen = poller.pending.size();
      continue;
    }
    // Peers publish through shared memory, which has no wake-up: look again.
    seen = poller.pending.size();
    poller.wake.wait_for(lock, std::chrono::microseconds(idle_us));
    idle_us = std::min<uint64_t>(idle_us * 2, 500);
  }
}

void Track(const std::shared_ptr<Pending>& p) {
  Poller& poller = ThePoller();
  {
    std::lock_guard<std::mutex> lock(poller.mutex);
    poller.pending.push_back(p);
    if (!poller.running) {
      poller.running = true;
      std::thread(PollerLoop).detach();
    }
  }
  poller.wake.notify_all();
}

std::string Hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof(b), "\"0x%016" PRIx64 "\"", v);
  return b;
}

std::string TruthHead(ncclComm_t c, const char* kernel, CUstream stream, uint64_t arrival) {
  char b[512];
  snprintf(b, sizeof(b),
           "{\"type\":\"nccl\",\"pid\":%d,\"comm\":%s,\"rank\":%d,\"nranks\":%d,\"kernel\":\"%s\",\"stream\":\"%p\","
           "\"arrival_ns\":%" PRIu64,
           static_cast<int>(getpid()), Hex(c->comm_hash).c_str(), c->rank, c->nranks, kernel,
           static_cast<void*>(stream), arrival);
  return b;
}

// One kernel on the stream, held by a gate for `pending`. Plugin events
// bracket the launch as NCCL's do (task started, kernel launch, task
// stopped = "enqueued"; the kernel's channels come later, from the poller).
ncclResult_t LaunchHeld(const std::shared_ptr<Pending>& pending, const std::string& kernel_base, CUstream stream,
                        std::vector<PluginOp>& ops, bool p2p) {
  ncclComm_t comm = pending->comm;
  const Driver& d = GetDriver();
  const Hub& hub = GetHub();
  CUkernel kernel = KernelFor(Mangled(kernel_base));
  if (!kernel) {
    SetLastError("no kernel " + kernel_base);
    return ncclInternalError;
  }
  for (PluginOp& op : ops) PluginTaskStart(comm, &op, p2p);
  pending->plugin_task = ops.empty() ? nullptr : ops.front().task;
  pending->gate = hub.gate_create(pending->transfer_ns, &OnStart, pending.get());
  comm->in_flight.fetch_add(1);
  Track(pending);
  void* launch = nullptr;
  PluginLaunchStart(comm, ops.empty() ? nullptr : &ops.front(), &launch);
  CUlaunchConfig config{};
  config.gridDimX = pending->channels;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 512;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream;
  // As NCCL sets its communicator's device around a launch: the calling
  // thread may have another device current (ncclCommInitAll's communicators
  // driven from one thread). Only then do driver context calls appear.
  CUcontext saved = nullptr;
  const bool switched = hub.current_device() != comm->device;
  if (switched) {
    CUcontext primary = nullptr;
    d.cuCtxGetCurrent(&saved);
    if (d.cuDevicePrimaryCtxRetain(&primary, comm->device) == CUDA_SUCCESS) d.cuCtxSetCurrent(primary);
  }
  hub.gate_arm(pending->gate);
  CUresult r = d.cuLaunchKernelEx(&config, reinterpret_cast<CUfunction>(kernel), nullptr, nullptr);
  if (switched) d.cuCtxSetCurrent(saved);
  PluginLaunchStop(comm, launch);
  for (PluginOp& op : ops) PluginTaskStop(comm, &op);
  if (r != CUDA_SUCCESS) {
    hub.gate_arm(nullptr);
    {
      std::lock_guard<std::mutex> lock(ThePoller().mutex);
      pending->cancelled = true;
    }
    comm->in_flight.fetch_sub(1);
    SetLastError("kernel launch failed: CUresult " + std::to_string(r));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

PluginOp PluginOpOf(const Task& t, uint64_t seq, uint8_t channels, bool p2p) {
  PluginOp op{};
  op.func = FuncName(t.func);
  op.datatype = kTypes[t.datatype].name;
  op.count = t.count;
  op.root = t.root;
  op.peer = t.peer;
  op.sendbuff = t.send;
  op.recvbuff = t.recv;
  op.seq = seq;
  op.channels = channels;
  op.algo = p2p ? "" : (t.func == Func::kAllReduce && TreeAllReduce() ? "TREE" : "RING");
  op.proto = p2p ? "" : "LL";
  op.stream = t.stream;
  return op;
}

ncclResult_t LaunchColl(const Task& t, uint64_t arrival) {
  ncclComm_t c = t.comm;
  auto p = std::make_shared<Pending>();
  p->comm = c;
  p->p2p = false;
  p->op = c->ops++;
  p->arrival_ns = arrival;
  SizeAndFactor(t.func, t.count, kTypes[t.datatype].bytes, c->nranks, &p->bytes, &p->factor);
  p->transfer_ns = TransferNs(p->bytes * p->factor, Steps(t.func, c->nranks));
  p->channels = Channels(p->bytes);
  p->data = CollBytes{t.func, t.datatype, t.redop, t.count, t.root, t.send, t.recv};
  const uint64_t nccl_seq = c->seq_by_func[static_cast<int>(t.func)]++;
  const uint64_t seq = ++c->coll_seq;
  const std::string kernel = KernelBase(t.func, t.datatype);
  char b[512];
  snprintf(b, sizeof(b),
           ",\"coll\":\"%s\",\"seq\":%" PRIu64 ",\"nccl_seq\":%" PRIu64 ",\"op\":%" PRIu64
           ",\"count\":%zu,\"datatype\":\"%s\",\"type_bytes\":%zu,\"root\":%d,\"channels\":%d,\"algo\":\"%s\"",
           FuncName(t.func), seq, nccl_seq, p->op, t.count, kTypes[t.datatype].name, kTypes[t.datatype].bytes, t.root,
           p->channels, t.func == Func::kAllReduce && TreeAllReduce() ? "TREE" : "RING");
  p->truth = TruthHead(c, (kernel + "(ncclDevKernelArgsStorage<4096ul>)").c_str(), t.stream, arrival) + b;
  std::vector<PluginOp> ops{PluginOpOf(t, nccl_seq, p->channels, false)};
  return LaunchHeld(p, kernel, t.stream, ops, false);
}

// One SendRecv kernel for the sends and receives a group has on one
// communicator and stream.
ncclResult_t LaunchP2p(const std::vector<Task>& tasks, uint64_t arrival) {
  ncclComm_t c = tasks.front().comm;
  auto p = std::make_shared<Pending>();
  p->comm = c;
  p->p2p = true;
  p->arrival_ns = arrival;
  double send_bytes = 0, recv_bytes = 0;
  std::string list;
  std::vector<PluginOp> ops;
  const uint64_t seq = ++c->p2p_seq;
  for (const Task& t : tasks) {
    const bool is_send = t.func == Func::kSend;
    const uint64_t n = is_send ? c->sent_to[t.peer]++ : c->received_from[t.peer]++;
    const double bytes = static_cast<double>(t.count) * kTypes[t.datatype].bytes;
    p->messages.push_back(Message{is_send, t.peer, n, t.send, t.recv, static_cast<size_t>(bytes)});
    (is_send ? send_bytes : recv_bytes) += bytes;
    const uint64_t nccl_seq = c->seq_by_func[static_cast<int>(t.func)]++;
    char b[256];
    snprintf(b, sizeof(b), "%s{\"func\":\"%s\",\"peer\":%d,\"count\":%zu,\"datatype\":\"%s\",\"type_bytes\":%zu}",
             list.empty() ? "" : ",", FuncName(t.func), t.peer, t.count, kTypes[t.datatype].name,
             kTypes[t.datatype].bytes);
    list += b;
    ops.push_back(PluginOpOf(t, nccl_seq, 0, true));
  }
  p->bytes = std::max(send_bytes, recv_bytes);
  p->factor = 1.0;
  p->transfer_ns = TransferNs(p->bytes, 1);
  p->channels = Channels(p->bytes);
  for (PluginOp& op : ops) op.channels = p->channels;
  char b[128];
  snprintf(b, sizeof(b), ",\"coll\":\"SendRecv\",\"seq\":%" PRIu64 ",\"channels\":%d,\"ops\":[", seq, p->channels);
  p->truth = TruthHead(c, "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", tasks.front().stream, arrival) +
             b + list + "]";
  return LaunchHeld(p, "ncclDevKernel_SendRecv", tasks.front().stream, ops, true);
}

// ---- groups

thread_local int t_group_depth = 0;
thread_local std::vector<Task> t_group;
thread_local uint64_t t_group_arrival = 0;
thread_local ncclResult_t t_group_error = ncclSuccess;

ncclResult_t Launch(std::vector<Task>& tasks, uint64_t arrival) {
  ncclResult_t result = ncclSuccess;
  // Collectives in call order; then each (comm, stream)'s sends and receives as one kernel.
  std::vector<std::pair<std::pair<ncclComm_t, CUstream>, std::vector<Task>>> p2p;
  for (const Task& t : tasks) {
    if (t.func == Func::kSend || t.func == Func::kRecv) {
      auto it = std::find_if(p2p.begin(), p2p.end(), [&](auto& g) { return g.first == std::make_pair(t.comm, t.stream); });
      if (it == p2p.end()) {
        p2p.push_back({{t.comm, t.stream}, {}});
        it = p2p.end() - 1;
      }
      it->second.push_back(t);
      continue;
    }
    if (ncclResult_t r = LaunchColl(t, arrival); r != ncclSuccess) result = r;
  }
  for (auto& g : p2p) {
    if (ncclResult_t r = LaunchP2p(g.second, arrival); r != ncclSuccess) result = r;
  }
  tasks.clear();
  return result;
}

ncclResult_t Check(const Task& t) {
  if (!t.comm) return ncclInvalidArgument;
  if (t.comm->finalized || t.comm->aborted) {
    SetLastError("communicator finalized or aborted");
    return ncclInvalidUsage;
  }
  if (t.datatype < 0 || t.datatype >= kNumTypes) {
    SetLastError("invalid datatype " + std::to_string(t.datatype));
    return ncclInvalidArgument;
  }
  const int n = t.comm->nranks;
  const bool rooted = t.func == Func::kBroadcast || t.func == Func::kReduce;
  if ((rooted && (t.root < 0 || t.root >= n)) ||
      ((t.func == Func::kSend || t.func == Func::kRecv) && (t.peer < 0 || t.peer >= n))) {
    SetLastError("invalid root or peer");
    return ncclInvalidArgument;
  }
  if (t.count > 0 && ((t.func != Func::kRecv && !t.send) || (t.func != Func::kSend && !t.recv))) {
    SetLastError("null buffer");
    return ncclInvalidArgument;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (GetDriver().cuStreamIsCapturing(t.stream, &status) != CUDA_SUCCESS) {
    SetLastError("invalid stream");
    return ncclInvalidArgument;
  }
  if (status != CU_STREAM_CAPTURE_STATUS_NONE) {
    SetLastError("collectives in CUDA graphs are not simulated");
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t Submit(Task t, bool op_valid) {
  if (!GetHub().ok) {
    SetLastError("the simulated NCCL needs the simulated driver (libcuda.so.1 from test/sim)");
    return ncclSystemError;
  }
  if (!op_valid) {
    SetLastError("invalid reduction operation");
    return ncclInvalidArgument;
  }
  if (ncclResult_t r = Check(t); r != ncclSuccess) {
    if (t_group_depth > 0) t_group_error = r;
    return r;
  }
  // The API event (v5's CollApi/P2pApi) is the call itself.
  PluginOp api = PluginOpOf(t, 0, 0, t.func == Func::kSend || t.func == Func::kRecv);
  PluginApiStart(t.comm, &api, t.func == Func::kSend || t.func == Func::kRecv);
  ncclResult_t result = ncclSuccess;
  if (t_group_depth > 0) {
    if (t_group.empty()) t_group_arrival = GetHub().now_ns();
    t_group.push_back(t);
  } else {
    std::vector<Task> one{t};
    result = Launch(one, GetHub().now_ns());
  }
  PluginApiStop(t.comm, &api);
  return result;
}

bool ValidOp(ncclRedOp_t op) { return op >= ncclSum && op <= ncclAvg; }

}  // namespace

void DrainComm(ncclComm_t comm) {
  Poller& poller = ThePoller();
  std::unique_lock<std::mutex> lock(poller.mutex);
  poller.drained.wait_for(lock, std::chrono::nanoseconds(TimeoutNs() + 1000000000ull),
                          [&] { return comm->in_flight.load() == 0; });
}

}  // namespace simnccl

using namespace simnccl;

NCCL_SIM_API(ncclAllReduce, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                             ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kAllReduce, comm, reinterpret_cast<CUstream>(stream), datatype, count, -1, -1, sendbuff, recvbuff,
                     op},
                ValidOp(op));
}

NCCL_SIM_API(ncclBroadcast, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                             ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kBroadcast, comm, reinterpret_cast<CUstream>(stream), datatype, count, root, -1, sendbuff, recvbuff},
                true);
}

NCCL_SIM_API(ncclBcast, (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                         cudaStream_t stream)) {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_SIM_API(ncclReduce, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                          int root, ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kReduce, comm, reinterpret_cast<CUstream>(stream), datatype, count, root, -1, sendbuff, recvbuff,
                     op},
                ValidOp(op));
}

NCCL_SIM_API(ncclAllGather, (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                             ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kAllGather, comm, reinterpret_cast<CUstream>(stream), datatype, sendcount, -1, -1, sendbuff, recvbuff},
                true);
}

NCCL_SIM_API(ncclReduceScatter, (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                 ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kReduceScatter, comm, reinterpret_cast<CUstream>(stream), datatype, recvcount, -1, -1, sendbuff,
                     recvbuff, op},
                ValidOp(op));
}

NCCL_SIM_API(ncclAlltoAll, (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream)) {
  return Submit(Task{Func::kAlltoAll, comm, reinterpret_cast<CUstream>(stream), datatype, count, -1, -1, sendbuff, recvbuff},
                true);
}

NCCL_SIM_API(ncclSend, (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                        cudaStream_t stream)) {
  return Submit(Task{Func::kSend, comm, reinterpret_cast<CUstream>(stream), datatype, count, -1, peer, sendbuff, nullptr},
                true);
}

NCCL_SIM_API(ncclRecv, (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                        cudaStream_t stream)) {
  return Submit(Task{Func::kRecv, comm, reinterpret_cast<CUstream>(stream), datatype, count, -1, peer, nullptr, recvbuff},
                true);
}

NCCL_SIM_API(ncclGroupStart, ()) {
  if (t_group_depth++ == 0) t_group_error = ncclSuccess;
  return ncclSuccess;
}

NCCL_SIM_API(ncclGroupEnd, ()) {
  if (t_group_depth == 0) {
    SetLastError("ncclGroupEnd without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--t_group_depth > 0) return ncclSuccess;
  if (t_group_error != ncclSuccess) {
    t_group.clear();
    return t_group_error;
  }
  return Launch(t_group, t_group_arrival);
}
