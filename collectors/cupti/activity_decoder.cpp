#include "collectors/cupti/activity_decoder.h"

#include <cstring>
#include <string>

#include "collectors/cupti/api_classes.h"

namespace prof::cupti {
namespace {

// Every decoded record starts zeroed, so fields a kind lacks read as 0.
DeviceRecord Blank(DeviceKind kind) {
  DeviceRecord record;
  std::memset(&record, 0, sizeof(record));
  record.kind = static_cast<uint8_t>(kind);
  return record;
}

bool SetTimes(const DecodeContext& context, uint64_t start, uint64_t end, DeviceRecord* out) {
  if (start == 0 || end < start) return false;
  out->start_ns = context.clock->ToAgent(start);
  out->end_ns = context.clock->ToAgent(end);
  return true;
}

uint32_t ApiName(const DecodeContext& context, ApiDomain domain, uint32_t cbid) {
  const char* name = CallbackName(domain, cbid);
  if (name != nullptr) return context.names->Intern(name);
  return context.names->Intern((domain == ApiDomain::kRuntime ? "runtime cbid " : "driver cbid ") +
                               std::to_string(cbid));
}

DecodeStatus Kernel(const CUpti_ActivityKernel10& k, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kKernel);
  if (!SetTimes(context, k.start, k.end, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = k.correlationId;
  out->name_id = k.name != nullptr ? context.names->Intern(k.name) : 0;
  out->stream_id = k.streamId;
  out->context_id = k.contextId;
  out->device_id = k.deviceId;
  out->graph_id = k.graphId;
  out->grid[0] = k.gridX;
  out->grid[1] = k.gridY;
  out->grid[2] = k.gridZ;
  out->block[0] = k.blockX;
  out->block[1] = k.blockY;
  out->block[2] = k.blockZ;
  out->registers_per_thread = k.registersPerThread;
  out->static_shared_bytes = static_cast<uint32_t>(k.staticSharedMemory);
  out->dynamic_shared_bytes = static_cast<uint32_t>(k.dynamicSharedMemory);
  return DecodeStatus::kRecord;
}

// The fields copies (Memcpy6, MemcpyPtoP4) and memsets (Memset4) share.
template <typename Record>
DecodeStatus MoveLike(DeviceKind kind, const Record& m, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(kind);
  if (!SetTimes(context, m.start, m.end, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = m.correlationId;
  out->bytes = m.bytes;
  out->stream_id = m.streamId;
  out->context_id = m.contextId;
  out->device_id = m.deviceId;
  out->graph_id = m.graphId;
  return DecodeStatus::kRecord;
}

template <typename CopyRecord>
DecodeStatus AnyCopy(const CopyRecord& m, const DecodeContext& context, DeviceRecord* out) {
  DecodeStatus status = MoveLike(DeviceKind::kMemcpy, m, context, out);
  out->copy_kind = m.copyKind;
  out->src_kind = m.srcKind;
  out->dst_kind = m.dstKind;
  return status;
}

DecodeStatus Memcpy(const CUpti_ActivityMemcpy6& m, const DecodeContext& context, DeviceRecord* out) {
  return AnyCopy(m, context, out);
}

DecodeStatus Peer(const CUpti_ActivityMemcpyPtoP4& m, const DecodeContext& context, DeviceRecord* out) {
  return AnyCopy(m, context, out);
}

DecodeStatus Memset(const CUpti_ActivityMemset4& m, const DecodeContext& context, DeviceRecord* out) {
  DecodeStatus status = MoveLike(DeviceKind::kMemset, m, context, out);
  out->dst_kind = static_cast<uint8_t>(m.memoryKind);
  return status;
}

DecodeStatus Api(const CUpti_ActivityAPI& a, ApiDomain domain, const DecodeContext& context, DeviceRecord* out) {
  if (domain == ApiDomain::kDriver) {
    // DRIVER records are kept only for launches and memory calls; the rest
    // (cuCtxGetCurrent, cuPointerGetAttribute, ...) is noise at high rates.
    ApiClass c = ClassifyCallback(domain, a.cbid);
    if (c != ApiClass::kLaunch && c != ApiClass::kMemcpy && c != ApiClass::kMemset && c != ApiClass::kMemory) {
      return DecodeStatus::kFiltered;
    }
  }
  *out = Blank(domain == ApiDomain::kRuntime ? DeviceKind::kRuntimeApi : DeviceKind::kDriverApi);
  if (!SetTimes(context, a.start, a.end, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = a.correlationId;
  out->name_id = ApiName(context, domain, a.cbid);
  out->cbid = a.cbid;
  out->thread_id = a.threadId;
  return DecodeStatus::kRecord;
}

DecodeStatus Sync(const CUpti_ActivitySynchronization2& s, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kSync);
  if (!SetTimes(context, s.start, s.end, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = s.correlationId;
  out->context_id = s.contextId;
  out->stream_id = s.streamId;
  out->cbid = static_cast<uint32_t>(s.type);
  return DecodeStatus::kRecord;
}

DecodeStatus Memory(const CUpti_ActivityMemory4& m, const DecodeContext& context, DeviceRecord* out) {
  DeviceKind kind;
  switch (m.memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      kind = DeviceKind::kMemAlloc;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      kind = DeviceKind::kMemFree;
      break;
    default:
      return DecodeStatus::kFiltered;
  }
  *out = Blank(kind);
  // An allocation is an instant: one timestamp.
  if (!SetTimes(context, m.timestamp, m.timestamp, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = m.correlationId;
  out->address = m.address;
  out->bytes = m.bytes;
  out->device_id = m.deviceId;
  out->context_id = m.contextId;
  out->stream_id = m.streamId;
  out->dst_kind = static_cast<uint8_t>(m.memoryKind);
  out->memory_pool = static_cast<uint32_t>(m.memoryPoolConfig.memoryPoolType);
  return DecodeStatus::kRecord;
}

DecodeStatus Overhead(const CUpti_ActivityOverhead3& o, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kOverhead);
  if (!SetTimes(context, o.start, o.end, out)) return DecodeStatus::kNoTimestamp;
  out->correlation_id = o.correlationId;
  out->cbid = static_cast<uint32_t>(o.overheadKind);
  return DecodeStatus::kRecord;
}

template <typename Struct>
const Struct& As(const CUpti_Activity& activity) {
  return *reinterpret_cast<const Struct*>(&activity);
}

}  // namespace

DecodeStatus DecodeActivity(const CUpti_Activity& activity, const DecodeContext& context, DeviceRecord* out) {
  switch (activity.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return Kernel(As<CUpti_ActivityKernel10>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return Memcpy(As<CUpti_ActivityMemcpy6>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return Peer(As<CUpti_ActivityMemcpyPtoP4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return Memset(As<CUpti_ActivityMemset4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return Api(As<CUpti_ActivityAPI>(activity), ApiDomain::kRuntime, context, out);
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return Api(As<CUpti_ActivityAPI>(activity), ApiDomain::kDriver, context, out);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return Sync(As<CUpti_ActivitySynchronization2>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return Memory(As<CUpti_ActivityMemory4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return Overhead(As<CUpti_ActivityOverhead3>(activity), context, out);
    default:
      return DecodeStatus::kUnknownKind;
  }
}

}  // namespace prof::cupti
