// The CUPTI collector's decoding, on the writer thread with decode_mutex_
// held: the buffers CUPTI handed over (collector_buffers.cpp) and the
// RUNTIME records built from callbacks (BuildIfLeftOut) become
// DeviceRecords held in pending_ until the window their call was launched in
// is sealed (collector_window.cpp); what cannot be kept is noted in the
// loss ledger.
#include <algorithm>
#include <mutex>
#include <vector>

#include "base/log.h"
#include "base/thread_id.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/activity_decoder.h"
#include "collectors/cupti/api_classes.h"

namespace prof::cupti {

namespace {

// Only device work answers a call that put work in flight; the call's own
// RUNTIME/DRIVER record arrives at its exit, before a kernel still running.
bool IsDeviceWork(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset;
}

bool IsApiRecord(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kRuntimeApi || kind == DeviceKind::kDriverApi;
}

// The kind of a raw record not decoded (a scratch buffer's), for the loss
// counts by kind; kOverhead: none of the three counted by kind.
DeviceKind KindOfRaw(const CUpti_Activity& a) {
  switch (a.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return DeviceKind::kKernel;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return DeviceKind::kMemcpy;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return DeviceKind::kMemset;
    default:
      return DeviceKind::kOverhead;
  }
}

}  // namespace

bool CuptiCollector::HasCallbackWhileRecording(bool runtime, uint32_t cbid) {
  // libprof's own device queries are subscribed while recording too
  // (EnableCallbacks); an application's call of them is awaited.
  uint32_t own_query = runtime ? static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020)
                                : static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice);
  if (cbid == own_query) return true;
  for (const uint32_t* id = runtime ? RuntimeCallbackIds() : DriverWorkCallbackIds(); *id != 0; ++id) {
    if (*id == cbid) return true;
  }
  return false;
}

void CuptiCollector::DrainCompletedLocked() {
  std::vector<Completed> batch;
  {
    std::lock_guard<std::mutex> lock(completed_mutex_);
    batch.swap(completed_);
  }
  DecodeContext context{&names_, &clock_, &layouts_};
  // Records built from callbacks (BuildIfLeftOut) first: CUPTI's own of the
  // same call, written after its exit callback, is then dropped below.
  HoldBuiltRecords(context);
  for (const Completed& done : batch) DecodeBuffer(done, context);
}

void CuptiCollector::HoldBuiltRecords(const DecodeContext& context) {
  std::vector<CUpti_ActivityAPI> built;
  {
    std::lock_guard<std::mutex> lock(synth_mutex_);
    built.swap(synth_);
  }
  for (const CUpti_ActivityAPI& a : built) {
    LaunchRegistry::ApiState state;
    if (registry_->LookUpApi(a.correlationId, &state) && state.api_record_delivered) continue;  // CUPTI's came
    DeviceRecord record;
    if (DecodeActivity(reinterpret_cast<const CUpti_Activity&>(a), context, &record) != DecodeStatus::kRecord) continue;
    synth_ids_.push_back(a.correlationId);
    HoldRecord(record);
  }
}

void CuptiCollector::DecodeBuffer(const Completed& done, const DecodeContext& context) {
  bool scratch = pool_->IsScratch(done.buffer);
  CUpti_Activity* activity = nullptr;
  while (done.valid_size > 0 && api_.ActivityGetNextRecord(done.buffer, done.valid_size, &activity) == CUPTI_SUCCESS) {
    if (scratch) {
      losses_.NoteScratchRecord(KindOfRaw(*activity));
      continue;
    }
    DeviceRecord record;
    DecodeStatus status = DecodeActivity(*activity, context, &record);
    if (status == DecodeStatus::kNoTimestamp) NoteUntimed(record);
    if (status == DecodeStatus::kUnknownKind) losses_.NoteUnknownKind();
    if (status != DecodeStatus::kRecord) continue;  // kFiltered: a kind deliberately not kept
    if (record.graph_node_id != 0) record.capture_stack_id = graph_sites_.StackOf(record.graph_node_id);
    if (!synth_ids_.empty() && IsApiRecord(record)) {
      auto built_id = std::find(synth_ids_.begin(), synth_ids_.end(), record.correlation_id);
      if (built_id != synth_ids_.end()) {
        synth_ids_.erase(built_id);  // held already, built from the callbacks
        continue;
      }
    }
    HoldRecord(record);
  }
  // Raw and decoded records share the device side's memory: once they
  // would together exceed the raw pool's cap (a window larger than the
  // pool), a decoded buffer's pages go back to the kernel, so decoding
  // turns raw memory into decoded memory instead of adding to it. Small
  // windows never reach this, and CUPTI refills resident buffers first.
  size_t decoded_bytes = pending_.live() * (sizeof(DeviceRecord) + sizeof(uint64_t));
  pool_->Release(done.buffer, done.valid_size,
                 /*evict=*/decoded_bytes + pool_->resident_bytes() > pool_->cap_bytes());
}

void CuptiCollector::NoteUntimed(const DeviceRecord& record) {
  // A forced flush hands over records of work still running (CUPTI
  // documents it); those are of calls made after the window's own records
  // were in, which no window holds. Only an untimed record of a call some
  // window recorded is that window's loss.
  uint64_t launch_ns = 0;
  if (record.correlation_id != 0 && IsDeviceWork(record) && !registry_->IsOwn(record.correlation_id) &&
      registry_->EnterNs(record.correlation_id, &launch_ns)) {
    registry_->MarkDelivered(record.correlation_id);  // it came: not also "never delivered"
    losses_.NoteUntimed(launch_ns, static_cast<DeviceKind>(record.kind));
  }
}

void CuptiCollector::HoldRecord(const DeviceRecord& record) {
  // libprof's own calls (the writer's version and device queries) are not
  // the application's.
  if (IsApiRecord(record) && IsLibprofThread(record.thread_id)) return;
  // libprof's own calls on application threads (OwnCudaCall).
  if (record.correlation_id != 0 && registry_->IsOwn(record.correlation_id)) return;
  if (record.correlation_id != 0 && IsDeviceWork(record)) registry_->MarkDelivered(record.correlation_id);
  if (record.correlation_id != 0 && IsApiRecord(record)) registry_->MarkApiDelivered(record.correlation_id);
  uint64_t launch_ns = record.start_ns;
  bool call_known = record.correlation_id != 0 && registry_->EnterNs(record.correlation_id, &launch_ns);
  if (IsDeviceWork(record) && OfSealedWindowLocked(record, call_known, launch_ns)) {
    // Its window is written without it: not silent (a window's awaited
    // records that never came are counted missing when it is sealed).
    if (late_device_records_.fetch_add(1, std::memory_order_relaxed) == 0) {
      Log().warn("a GPU record came after its window was written (a call that put several records in flight, or "
                 "a thread descheduled inside a call for longer than the window waited); such records are "
                 "counted and logged at exit");
    }
    return;
  }
  if (record.correlation_id != 0 && !call_known && IsDeviceWork(record) && registry_->overflowed() == 0) {
    // Device work of a call the registry never saw: it entered while no
    // window was recording (a wait step; its device work was enqueued
    // after recording resumed), or its window was sealed already. No
    // window holds that call, so none holds its record.
    launch_ns = 0;
  }
  if (IsApiRecord(record) && launch_ns >= sealed_start_ns_ && launch_ns < sealed_end_ns_ &&
      !HasCallbackWhileRecording(static_cast<DeviceKind>(record.kind) == DeviceKind::kRuntimeApi, record.cbid)) {
    // A call with no callback of the window sealed last, whose record came
    // after the window was written: not silent (awaited calls' records
    // are counted missing when their window is sealed).
    if (late_api_records_.fetch_add(1, std::memory_order_relaxed) == 0) {
      Log().warn("a call's CUPTI record came after its window was written (its thread was descheduled between the "
                 "call's return and the record, a busy machine); such records are counted and logged at exit");
    }
    return;
  }
  if (pending_.slots() >= max_pending_) pending_.Compact();
  if (pending_.slots() >= max_pending_) {
    losses_.NoteBudgetDrop(launch_ns, static_cast<DeviceKind>(record.kind));
    return;
  }
  // Reserved whole (address space only: pages count once written), so
  // growth never holds an old and a new copy at once.
  pending_.Reserve(max_pending_);
  pending_.Append(record, launch_ns);
}

void CuptiCollector::NoteSealedLocked(uint64_t start_ns, uint64_t end_ns) {
  SealedSpan& span = sealed_spans_[sealed_next_++ % kSealedSpans];
  span = SealedSpan{start_ns, end_ns, 0, 0};
  registry_->IdSpan(start_ns, end_ns, &span.low_id, &span.high_id);
}

bool CuptiCollector::OfSealedWindowLocked(const DeviceRecord& record, bool call_known, uint64_t launch_ns) const {
  if (record.correlation_id == 0) return false;
  for (const SealedSpan& s : sealed_spans_) {
    if (s.end_ns == 0) continue;
    // Known: a call registered after its window was sealed (its thread
    // descheduled between the wrapper's clock read and the callback).
    if (call_known ? launch_ns >= s.start_ns && launch_ns < s.end_ns
                   : s.low_id != 0 && record.correlation_id >= s.low_id && record.correlation_id <= s.high_id) {
      return true;
    }
  }
  return false;
}

}  // namespace prof::cupti
