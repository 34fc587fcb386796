// The simulated NCCL's internals (README "Collectives"): communicators,
// the shared-memory meeting place of a communicator's ranks, the driver
// entry points it launches with, and the profiler plugin it calls.
#pragma once

#include <cuda.h>
#include <nccl.h>
#include <stdint.h>

#include <atomic>
#include <string>
#include <vector>

namespace simnccl {

inline constexpr int kMaxRanks = 64;      // ranks per communicator
inline constexpr int kCollRing = 1024;    // collectives a rank may run ahead of the slowest
inline constexpr int kP2pRing = 64;       // messages per ordered rank pair in flight

// A value one side publishes and the other consumes, tagged with the
// index it belongs to (index + 1; 0 = never written).
struct Mailbox {
  std::atomic<uint64_t> tag;
  std::atomic<uint64_t> value;
  std::atomic<uint64_t> ack;  // p2p: the tag the reader consumed
};

// What the ranks of one communicator share (a file in /dev/shm named by
// the unique id; zero-filled on creation, which is its initial state).
struct Shared {
  std::atomic<uint32_t> nranks;  // set by the first rank to join
  std::atomic<uint32_t> joined;
  struct Rank {
    std::atomic<int32_t> pid;
    std::atomic<uint64_t> released;  // collectives this rank has finished with (ring slots free)
    std::atomic<int32_t> split_color;  // ncclCommSplit: this rank's colour and key for round split_round
    std::atomic<int32_t> split_key;
    std::atomic<uint32_t> split_round;  // splits published
    std::atomic<uint32_t> split_read;   // splits read
  } ranks[kMaxRanks];
  Mailbox coll[kCollRing][kMaxRanks];           // [op % ring][rank]: kernel start (sim clock)
  struct Pair {
    Mailbox send[kP2pRing];  // written by the sender, read by the receiver
    Mailbox recv[kP2pRing];  // written by the receiver, read by the sender
  } pairs[kMaxRanks][kMaxRanks];  // [src][dst]
};

// The driver functions the sim launches with, found as NVIDIA's libnccl
// finds them: dlopen("libcuda.so.1") and cuGetProcAddress (no DT_NEEDED).
struct Driver {
  bool ok = false;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuCtxGetDevice)(CUdevice*);
  CUresult (*cuLibraryLoadData)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*, void**,
                                unsigned);
  CUresult (*cuLibraryGetKernel)(CUkernel*, CUlibrary, const char*);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*cuStreamIsCapturing)(CUstream, CUstreamCaptureStatus*);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
};
const Driver& GetDriver();


}  // namespace simnccl

// ncclComm_t points to one of these.
struct ncclComm {
  std::string name;          // the shared segment's name
  std::string comm_name;     // ncclConfig_t::commName, or ""
  simnccl::Shared* shared = nullptr;
  int nranks = 0;
  int rank = 0;
  int device = 0;
  uint64_t comm_hash = 0;    // equal on every rank
  uint64_t ops = 0;          // collectives launched (index into the ring)
  uint64_t released = 0;     // collectives finished here (mirror of shared->ranks[rank].released)
  uint64_t seq_by_func[16] = {};  // NCCL's seqNumber: per collective type
  uint64_t coll_seq = 0;     // collectives called (the trace's "Seq")
  uint64_t p2p_seq = 0;      // point-to-point groups called
  std::vector<uint64_t> sent_to, received_from;  // messages per peer
  uint32_t split_rounds = 0;
  void* plugin_context = nullptr;  // as the plugin's init set it (null allowed)
  int plugin_mask = 0;
  bool plugin_on = false;          // init succeeded: events as the mask asks
  bool finalized = false;
  bool aborted = false;
  std::atomic<int> next_user_op{0};  // ncclRedOpCreatePreMulSum: the next operator is ncclNumOps + this
  std::atomic<int> in_flight{0};  // launched kernels not yet released
};

namespace simnccl {

// The simulated driver's hub (libcuda.so.1's simhub_* functions), found in
// the already loaded driver: the sim's NCCL needs the sim's driver.
struct Hub {
  bool ok = false;
  uint64_t (*now_ns)();
  void (*truth_line)(const char*);
  void* (*gate_create)(uint64_t, void (*)(void*, uint64_t), void*);
  void (*gate_arm)(void*);
  void (*gate_release)(void*, uint64_t);
  int (*current_device)();  // simhub_current_device: no API call
  int (*memory_holds)(const void*, size_t);  // simhub_memory_holds: no API call
};
const Hub& GetHub();

// ---- data.cpp (README "Collectives", "Data")
enum class CollFunc { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kSend, kRecv };
// What one collective reads and writes on this rank.
struct CollBytes {
  CollFunc func;
  int datatype;  // ncclDataType_t
  int redop;     // ncclRedOp_t (reductions)
  size_t count;  // as the call's count argument (sendcount, recvcount)
  int root;
  const void* send;
  void* recv;
};
// This rank's contribution to collective `op`, copied where the peers read
// it; call before publishing the kernel's start. False when the bytes could
// not be given (the buffer is not memory the sim knows: NCCL's kernel would
// fault); the peers then leave their results unwritten.
bool PublishCollData(ncclComm_t comm, uint64_t op, const CollBytes& b);
// Once every rank published: this rank's result, written into its receive
// buffer. False when it could not be computed.
bool ReceiveCollData(ncclComm_t comm, uint64_t op, const CollBytes& b);
// A point-to-point message: the n-th from this rank to peer, and the n-th
// from peer to this rank.
bool PublishSendData(ncclComm_t comm, int peer, uint64_t n, const void* buff, size_t bytes);
bool ReceiveRecvData(ncclComm_t comm, int peer, uint64_t n, void* buff, size_t bytes);

// ---- comm.cpp
ncclResult_t JoinComm(const char* segment, int nranks, int rank, const char* comm_name, uint64_t comm_hash,
                      ncclComm_t* out);
void SetLastError(const std::string& text);
void TruthComm(ncclComm_t comm, const char* what);  // a comm_init / comm_destroy / comm_abort line
uint64_t TimeoutNs();

// ---- collectives.cpp
// Blocks until every collective this communicator launched was released.
void DrainComm(ncclComm_t comm);

// ---- profiler_plugin.cpp
void PluginCommInit(ncclComm_t comm);
void PluginCommFinalize(ncclComm_t comm);
int PluginVersion();  // 0: no plugin
// Events of one collective or point-to-point group on the calling thread.
struct PluginOp {
  const char* func;         // "AllReduce", ... "Send"/"Recv"
  const char* datatype;     // "ncclFloat32"
  size_t count;
  int root;                 // -1 where none
  int peer;                 // p2p
  const void* sendbuff;
  void* recvbuff;
  uint64_t seq;             // NCCL's seqNumber
  uint8_t channels;
  const char* algo;
  const char* proto;
  void* stream;
  void* group_api = nullptr;   // handles (filled by the plugin side)
  void* api = nullptr;
  void* group = nullptr;
  void* task = nullptr;
};
void PluginApiStart(ncclComm_t comm, PluginOp* op, bool p2p);
void PluginApiStop(ncclComm_t comm, PluginOp* op);
void PluginTaskStart(ncclComm_t comm, PluginOp* op, bool p2p);   // group + coll/p2p, before the launch
void PluginLaunchStart(ncclComm_t comm, PluginOp* op, void** handle);
void PluginLaunchStop(ncclComm_t comm, void* handle);
void PluginTaskStop(ncclComm_t comm, PluginOp* op);             // after the launch ("enqueued")
// The kernel ran [start, end] (sim clock): one KernelCh event per channel,
// parented to the task; then the task is done with.
void PluginKernelDone(ncclComm_t comm, void* task, int channels, uint64_t start_ns, uint64_t end_ns);

}  // namespace simnccl
