// Hub events -> activity records in the structs of the release the library
// impersonates (record_layouts.h: CUDA 13.0 Kernel10, Memcpy6, MemcpyPtoP4,
// Memset4, Synchronization2, Memory4, and Kernel11 for 13.1/13.2; CUDA 12.4
// Kernel9, Memcpy5, MemcpyPtoP4, Memset4, Synchronization, Memory3), plus
// API and ExternalCorrelation. Each record goes to every activity client
// that has its kind on, built for that client (its thread-id type, its
// latency timestamps) in that client's buffers.
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <string>

#include "buffers.h"
#include "internal.h"
#include "record_layouts.h"

namespace simcupti {
namespace {

std::atomic<int64_t> g_next_grid_id{1};

template <typename Record>
void Put(int client, const Record& record, DeviceSpan span, const SimOp& op) {
  BufferPool::Of(client).Append(&record, sizeof(record), span, op.context_id, op.stream_id);
}

// Calls write(client) for each client in the mask.
template <typename Write>
void ForEachClient(ClientMask clients, Write write) {
  for (int client = 0; clients != 0; ++client, clients >>= 1) {
    if ((clients & 1) != 0) write(client);
  }
}

// What a kernel, copy or memset record takes from its op alike: its
// interval on the reported clock, where it ran and the launching call.
template <typename Record>
void SetSpanAndPlace(int client, Record& r, const SimOp& op) {
  r.start = ReportedFor(client, op.start_ns);
  r.end = ReportedFor(client, op.end_ns);
  r.deviceId = op.device_id;
  r.contextId = op.context_id;
  r.streamId = op.stream_id;
  r.correlationId = op.correlation_id;
}

// A copy record of either kind (MEMCPY, or MEMCPY2 between devices).
template <typename Record>
void SetCopy(int client, Record& r, CUpti_ActivityKind kind, const SimOp& op) {
  r.kind = kind;
  r.copyKind = static_cast<uint8_t>(op.copy_kind);
  r.srcKind = static_cast<uint8_t>(op.src_kind);
  r.dstKind = static_cast<uint8_t>(op.dst_kind);
  r.bytes = op.bytes;
  SetSpanAndPlace(client, r, op);
  r.graphId = op.graph_id;
  r.graphNodeId = op.graph_node_id;
}

void RecordKernel(const SimOp& op) {
  const ClientMask concurrent = ClientsRecording(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, op.context_id);
  const ClientMask serial = ClientsRecording(CUPTI_ACTIVITY_KIND_KERNEL, op.context_id) & ~concurrent;
  ForEachClient(concurrent | serial, [&](int client) {
    KernelRecord r{};
    // The serialized kind has the same struct.
    r.kind = (concurrent >> client & 1) != 0 ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    r.registersPerThread = static_cast<uint16_t>(op.registers_per_thread);
    SetSpanAndPlace(client, r, op);
    r.completed = r.end;  // no child kernels
    r.gridX = op.grid[0];
    r.gridY = op.grid[1];
    r.gridZ = op.grid[2];
    r.blockX = op.block[0];
    r.blockY = op.block[1];
    r.blockZ = op.block[2];
    r.staticSharedMemory = static_cast<int32_t>(op.static_shared_bytes);
    r.dynamicSharedMemory = static_cast<int32_t>(op.dynamic_shared_bytes);
    r.gridId = g_next_grid_id.fetch_add(1);
    r.name = op.name;
    // queued/submitted only with cuptiActivityEnableLatencyTimestamps(1).
    const bool latency = LatencyTimestamps(client);
    r.queued = latency ? ReportedFor(client, op.launch_ns) : CUPTI_TIMESTAMP_UNKNOWN;
    r.submitted = latency ? ReportedFor(client, op.launch_ns) : CUPTI_TIMESTAMP_UNKNOWN;
    r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    r.graphId = op.graph_id;
    r.graphNodeId = op.graph_node_id;
#if SIM_CUDA_MAJOR >= 13
    if (KernelRecordIs11()) {
      Kernel11Record r11{};
      r11.v10 = r;
      r11.priority = 0;  // the hub's streams all have the default priority
      Put(client, r11, {op.start_ns, op.end_ns}, op);
      return;
    }
#endif
    Put(client, r, {op.start_ns, op.end_ns}, op);
  });
}

void RecordMemcpy(const SimOp& op) {
  const bool peer = op.copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  const ClientMask as_peer = peer ? ClientsRecording(CUPTI_ACTIVITY_KIND_MEMCPY2, op.context_id) : 0;
  ForEachClient(as_peer, [&](int client) {
    PeerRecord r{};
    SetCopy(client, r, CUPTI_ACTIVITY_KIND_MEMCPY2, op);
    // The hub models one device: source and destination are both it.
    r.srcDeviceId = r.dstDeviceId = op.device_id;
    r.srcContextId = r.dstContextId = op.context_id;
    Put(client, r, {op.start_ns, op.end_ns}, op);
  });
  ForEachClient(ClientsRecording(CUPTI_ACTIVITY_KIND_MEMCPY, op.context_id) & ~as_peer, [&](int client) {
    MemcpyRecord r{};
    SetCopy(client, r, CUPTI_ACTIVITY_KIND_MEMCPY, op);
    r.runtimeCorrelationId = CurrentRuntimeCorrelationId();
    SetCopyCount(r, 1);
    Put(client, r, {op.start_ns, op.end_ns}, op);
  });
}

void RecordMemset(const SimOp& op) {
  ForEachClient(ClientsRecording(CUPTI_ACTIVITY_KIND_MEMSET, op.context_id), [&](int client) {
    MemsetRecord r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.bytes = op.bytes;
    SetSpanAndPlace(client, r, op);
    r.memoryKind = static_cast<uint16_t>(op.dst_kind != 0 ? op.dst_kind : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    r.graphId = op.graph_id;
    r.graphNodeId = op.graph_node_id;
    Put(client, r, {op.start_ns, op.end_ns}, op);
  });
}

void RecordSync(const SimOp& op) {
  ForEachClient(ClientsRecording(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, op.context_id), [&](int client) {
    SyncRecord r{};
    r.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    r.type = static_cast<CUpti_ActivitySynchronizationType>(op.sync_type);
    r.start = ReportedFor(client, op.start_ns);
    r.end = ReportedFor(client, op.end_ns);
    r.correlationId = op.correlation_id;
    r.contextId = op.context_id;
    // Fields that do not apply hold CUPTI_SYNCHRONIZATION_INVALID_VALUE.
    r.streamId = op.sync_type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                     ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
                     : op.stream_id;
    r.cudaEventId = op.event_id != 0 ? op.event_id : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    SetEventSyncId(r, CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    Put(client, r, {op.start_ns, op.end_ns}, op);
  });
}

void RecordMemory(const SimOp& op) {
  ForEachClient(ClientsRecording(CUPTI_ACTIVITY_KIND_MEMORY2, op.context_id), [&](int client) {
    MemoryRecord r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    r.memoryOperationType = op.kind == SIM_OP_MEM_ALLOC ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                                        : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    r.memoryKind = static_cast<CUpti_ActivityMemoryKind>(op.dst_kind != 0 ? op.dst_kind
                                                                           : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    r.correlationId = op.correlation_id;
    r.address = op.address;
    r.bytes = op.bytes;
    r.timestamp = ReportedFor(client, op.start_ns);
    r.processId = static_cast<uint32_t>(getpid());
    r.deviceId = op.device_id;
    r.contextId = op.context_id;
    r.streamId = op.stream_id;
    r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
    Put(client, r, {op.start_ns, op.start_ns}, op);
  });
}

}  // namespace

void RecordOp(const SimOp& op) {
  switch (op.kind) {
    case SIM_OP_KERNEL: RecordKernel(op); break;
    case SIM_OP_MEMCPY: RecordMemcpy(op); break;
    case SIM_OP_MEMSET: RecordMemset(op); break;
    case SIM_OP_SYNC: RecordSync(op); break;
    case SIM_OP_MEM_ALLOC:
    case SIM_OP_MEM_FREE: RecordMemory(op); break;
    default: break;
  }
}

namespace {

// API records written per domain and callback id (the cupti_state line).
std::array<std::atomic<uint64_t>, CUPTI_RUNTIME_TRACE_CBID_SIZE> g_runtime_records{};
std::array<std::atomic<uint64_t>, CUPTI_DRIVER_TRACE_CBID_SIZE> g_driver_records{};

template <size_t N>
std::string CountsJson(const std::array<std::atomic<uint64_t>, N>& counts) {
  std::string out = "[";
  for (size_t cbid = 0; cbid < N; ++cbid) {
    uint64_t n = counts[cbid].load(std::memory_order_relaxed);
    if (n == 0) continue;
    out += (out.size() > 1 ? ",[" : "[") + std::to_string(cbid) + "," + std::to_string(n) + "]";
  }
  return out + "]";
}

}  // namespace

std::string ApiRecordCounts(int domain) {
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CountsJson(g_runtime_records) : CountsJson(g_driver_records);
}

uint64_t ApiRecordsWritten(int domain, uint32_t cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid < g_runtime_records.size() ? g_runtime_records[cbid].load(std::memory_order_relaxed) : 0;
  }
  return cbid < g_driver_records.size() ? g_driver_records[cbid].load(std::memory_order_relaxed) : 0;
}

void RecordApi(const SimApiSite& site, ClientMask clients) {
  ForEachClient(clients, [&](int client) {
    if (site.domain == CUPTI_CB_DOMAIN_RUNTIME_API && site.cbid < g_runtime_records.size()) {
      g_runtime_records[site.cbid].fetch_add(1, std::memory_order_relaxed);
    } else if (site.domain == CUPTI_CB_DOMAIN_DRIVER_API && site.cbid < g_driver_records.size()) {
      g_driver_records[site.cbid].fetch_add(1, std::memory_order_relaxed);
    }
    CUpti_ActivityAPI r{};
    r.kind = site.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = site.cbid;
    r.start = ReportedFor(client, site.start_ns);
    r.end = ReportedFor(client, site.end_ns);
    r.processId = site.process_id;
    // The default thread-id type is pthread_self(); SYSTEM is gettid.
    r.threadId = ThreadIdIsSystem(client) ? site.thread_id : static_cast<uint32_t>(pthread_self());
    r.correlationId = site.correlation_id;
    if (site.return_value != nullptr) r.returnValue = *static_cast<const uint32_t*>(site.return_value);
    BufferPool::Of(client).Append(&r, sizeof(r), {}, site.context_uid, 0);
  });
}

void RecordExternalCorrelation(int client, CUpti_ExternalCorrelationKind kind, uint64_t external_id,
                               const SimApiSite& site) {
  CUpti_ActivityExternalCorrelation r{};
  r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  r.externalKind = kind;
  r.externalId = external_id;
  r.correlationId = site.correlation_id;
  BufferPool::Of(client).Append(&r, sizeof(r), {}, site.context_uid, 0);
}

size_t RecordSize(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
#if SIM_CUDA_MAJOR >= 13
      if (KernelRecordIs11()) return sizeof(Kernel11Record);
#endif
      return sizeof(KernelRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(MemcpyRecord);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(PeerRecord);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(MemsetRecord);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(SyncRecord);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(MemoryRecord);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
  }
}

void ClearUnfinishedTimes(CUpti_Activity* record, bool started) {
  auto clear = [started](auto* r) {
    if (!started) r->start = 0;
    r->end = 0;
  };
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* kernel = reinterpret_cast<KernelRecord*>(record);
      clear(kernel);
      kernel->completed = 0;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: clear(reinterpret_cast<MemcpyRecord*>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: clear(reinterpret_cast<PeerRecord*>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: clear(reinterpret_cast<MemsetRecord*>(record)); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: clear(reinterpret_cast<SyncRecord*>(record)); break;
    case CUPTI_ACTIVITY_KIND_MEMORY2: reinterpret_cast<MemoryRecord*>(record)->timestamp = 0; break;
    default: break;
  }
}

}  // namespace simcupti
