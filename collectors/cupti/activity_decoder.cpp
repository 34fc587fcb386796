#include "collectors/cupti/activity_decoder.h"

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <string>

#include "collectors/cupti/api_classes.h"
#include "collectors/cupti/cupti_13_2.h"

namespace prof::cupti {
namespace {

// An enum field's bytes as an integer. Loading a CUPTI enum that holds a
// value outside the enum's range (a record of a newer or damaged layout) is
// undefined behaviour; its bytes are not.
// By address: binding the field to a reference already counts as a load of
// the enum for GCC's -fsanitize=enum.
template <typename Enum>
uint32_t Raw(const Enum* field) {
  if constexpr (std::is_enum_v<Enum>) {
    static_assert(sizeof(Enum) == sizeof(uint32_t));
    uint32_t value;
    std::memcpy(&value, field, sizeof(value));
    return value;
  } else {
    return *field;  // already an integer in this struct (Memset4's memoryKind is a uint16_t)
  }
}

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
  // Before the agent's clock began: no time libprof can place.
  return out->start_ns != 0;
}

uint32_t ApiName(const DecodeContext& context, ApiDomain domain, uint32_t cbid) {
  bool cuda12 = context.layouts != nullptr && context.layouts->cuda12_runtime_names;
  const char* name = CallbackName(domain, cbid, cuda12);
  if (name != nullptr) return context.names->InternStatic(name);
  return context.names->Intern((domain == ApiDomain::kRuntime ? "runtime cbid " : "driver cbid ") +
                               std::to_string(cbid));
}

// The fields read from kernel records exist in Kernel9 and Kernel10 alike
// (Kernel10 appends isDeviceLaunched); a template reads each through its own
// struct. Kernel11 (13.1, 13.2) is Kernel10 with priority appended: read
// through its Kernel10 part, a record of 224 bytes is never read past.
template <typename KernelRecord>
DecodeStatus Kernel(const KernelRecord& k, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kKernel);
  out->correlation_id = k.correlationId;  // also for kNoTimestamp: whose record went untimed
  if (!SetTimes(context, k.start, k.end, out)) return DecodeStatus::kNoTimestamp;
  out->name_id = k.name != nullptr ? context.names->Intern(k.name) : 0;
  out->stream_id = k.streamId;
  out->context_id = k.contextId;
  out->device_id = k.deviceId;
  out->graph_id = k.graphId;
  out->graph_node_id = k.graphNodeId;
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
  out->correlation_id = m.correlationId;
  if (!SetTimes(context, m.start, m.end, out)) return DecodeStatus::kNoTimestamp;
  out->bytes = m.bytes;
  out->stream_id = m.streamId;
  out->context_id = m.contextId;
  out->device_id = m.deviceId;
  out->graph_id = m.graphId;
  out->graph_node_id = m.graphNodeId;
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


DecodeStatus Peer(const CUpti_ActivityMemcpyPtoP4& m, const DecodeContext& context, DeviceRecord* out) {
  return AnyCopy(m, context, out);
}

DecodeStatus Memset(const CUpti_ActivityMemset4& m, const DecodeContext& context, DeviceRecord* out) {
  DecodeStatus status = MoveLike(DeviceKind::kMemset, m, context, out);
  out->dst_kind = static_cast<uint8_t>(Raw(&m.memoryKind));
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
  out->correlation_id = a.correlationId;
  if (!SetTimes(context, a.start, a.end, out)) return DecodeStatus::kNoTimestamp;
  out->name_id = ApiName(context, domain, a.cbid);
  out->cbid = a.cbid;
  out->thread_id = a.threadId;
  return DecodeStatus::kRecord;
}

template <typename SyncRecord>
DecodeStatus Sync(const SyncRecord& s, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kSync);
  out->correlation_id = s.correlationId;
  if (!SetTimes(context, s.start, s.end, out)) return DecodeStatus::kNoTimestamp;
  out->context_id = s.contextId;
  out->stream_id = s.streamId;
  out->cbid = Raw(&s.type);
  return DecodeStatus::kRecord;
}

// Memory2, Memory3 and Memory4 differ only by trailing fields: what is read
// here sits at the same offsets in each, so a 12.x record of any of them is
// never read past its end.
#define MEMORY_FIELD_SHARED_BY_2_3_4(field)                                                   \
  static_assert(offsetof(CUpti_ActivityMemory2, field) == offsetof(CUpti_ActivityMemory3, field) && \
                offsetof(CUpti_ActivityMemory3, field) == offsetof(CUpti_ActivityMemory4, field))
MEMORY_FIELD_SHARED_BY_2_3_4(memoryOperationType);
MEMORY_FIELD_SHARED_BY_2_3_4(memoryKind);
MEMORY_FIELD_SHARED_BY_2_3_4(correlationId);
MEMORY_FIELD_SHARED_BY_2_3_4(address);
MEMORY_FIELD_SHARED_BY_2_3_4(bytes);
MEMORY_FIELD_SHARED_BY_2_3_4(timestamp);
MEMORY_FIELD_SHARED_BY_2_3_4(deviceId);
MEMORY_FIELD_SHARED_BY_2_3_4(contextId);
MEMORY_FIELD_SHARED_BY_2_3_4(streamId);
MEMORY_FIELD_SHARED_BY_2_3_4(memoryPoolConfig);
#undef MEMORY_FIELD_SHARED_BY_2_3_4
static_assert(offsetof(CUpti_ActivityMemory2, memoryPoolConfig) + sizeof(CUpti_ActivityMemoryPoolType) <=
              sizeof(CUpti_ActivityMemory2));

// MoveLike's shape for allocation records: an instant, and the memory's own fields.
template <typename MemoryRecord>
DecodeStatus Memory(const MemoryRecord& m, const DecodeContext& context, DeviceRecord* out) {
  DeviceKind kind;
  switch (Raw(&m.memoryOperationType)) {
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
  out->correlation_id = m.correlationId;
  if (!SetTimes(context, m.timestamp, m.timestamp, out)) return DecodeStatus::kNoTimestamp;
  out->address = m.address;
  out->bytes = m.bytes;
  out->device_id = m.deviceId;
  out->context_id = m.contextId;
  out->stream_id = m.streamId;
  out->dst_kind = static_cast<uint8_t>(Raw(&m.memoryKind));
  out->memory_pool = Raw(&m.memoryPoolConfig.memoryPoolType);
  return DecodeStatus::kRecord;
}

// CUpti_ActivityOverhead (before 12.2) has no correlation id: it stays 0.
template <typename OverheadRecord>
DecodeStatus Overhead(const OverheadRecord& o, const DecodeContext& context, DeviceRecord* out) {
  *out = Blank(DeviceKind::kOverhead);
  if (!SetTimes(context, o.start, o.end, out)) return DecodeStatus::kNoTimestamp;
  if constexpr (!std::is_same_v<OverheadRecord, CUpti_ActivityOverhead>) out->correlation_id = o.correlationId;
  out->cbid = Raw(&o.overheadKind);
  return DecodeStatus::kRecord;
}

template <typename Struct>
const Struct& As(const CUpti_Activity& activity) {
  return *reinterpret_cast<const Struct*>(&activity);
}

}  // namespace

DecodeStatus DecodeActivity(const CUpti_Activity& activity, const DecodeContext& context, DeviceRecord* out) {
  static const RecordLayouts kCuda130;
  const RecordLayouts& layouts = context.layouts != nullptr ? *context.layouts : kCuda130;
  switch (Raw(&activity.kind)) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      if (layouts.kernel == KernelLayout::kKernel9) return Kernel(As<CUpti_ActivityKernel9>(activity), context, out);
      if (layouts.kernel == KernelLayout::kKernel11) {
        return Kernel(As<v13_2::ActivityKernel11>(activity).kernel10, context, out);
      }
      return Kernel(As<CUpti_ActivityKernel10>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      if (layouts.memcpy == MemcpyLayout::kMemcpy5) return AnyCopy(As<CUpti_ActivityMemcpy5>(activity), context, out);
      return AnyCopy(As<CUpti_ActivityMemcpy6>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return Peer(As<CUpti_ActivityMemcpyPtoP4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return Memset(As<CUpti_ActivityMemset4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return Api(As<CUpti_ActivityAPI>(activity), ApiDomain::kRuntime, context, out);
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return Api(As<CUpti_ActivityAPI>(activity), ApiDomain::kDriver, context, out);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      if (layouts.sync == SyncLayout::kSynchronization) {
        return Sync(As<CUpti_ActivitySynchronization>(activity), context, out);
      }
      return Sync(As<CUpti_ActivitySynchronization2>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      if (layouts.memory == MemoryLayout::kMemory3) return Memory(As<CUpti_ActivityMemory3>(activity), context, out);
      return Memory(As<CUpti_ActivityMemory4>(activity), context, out);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      switch (layouts.overhead) {
        case OverheadLayout::kOverhead:
          return Overhead(As<CUpti_ActivityOverhead>(activity), context, out);
        case OverheadLayout::kOverhead2:
          return Overhead(As<CUpti_ActivityOverhead2>(activity), context, out);
        default:
          return Overhead(As<CUpti_ActivityOverhead3>(activity), context, out);
      }
    default:
      return DecodeStatus::kUnknownKind;
  }
}

}  // namespace prof::cupti
