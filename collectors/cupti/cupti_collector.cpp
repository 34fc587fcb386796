#include "collectors/cupti/cupti_collector.h"

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "agent/clock.h"
#include "agent/hooks.h"
#include "agent/hot_state.h"
#include "agent/strings.h"
#include "agent/thread_id.h"
#include "agent/loader_guard.h"
#include "agent/log.h"
#include "collectors/cupti/activity_collector.h"
#include "collectors/cupti/activity_decoder.h"
#include "collectors/cupti/api_classes.h"
#include "collectors/cupti/cupti_loader.h"
#include "collectors/cupti/record_order.h"

namespace prof::cupti {

// What the API callbacks keep per application thread, in one thread_local:
// each thread_local of a shared library is a lookup of its own, so a
// callback finds all of this with one.
struct CallbackThread {
  // Runtime calls this thread is inside, and the outermost one's
  // correlation id: a driver call made by the runtime has its own
  // correlation id, while its device work may carry the runtime's.
  int runtime_depth = 0;
  uint32_t runtime_correlation = 0;
  // The outermost call in progress on this thread that the registry expects
  // device work from (0: none). A graph node created inside it means the
  // call was captured into a graph: it put nothing in flight.
  uint32_t expecting_correlation = 0;
  // Driver calls this thread is inside outside any runtime call (a
  // driver-API program's own calls): only the outermost call reaches the
  // marker path.
  int driver_depth = 0;
  // The outermost call in progress on this thread (both depths above 0):
  // the collector's narrow_epoch_ and quiet_epoch_ when it entered and
  // whether it is watched between windows. A call that is not watched loses
  // its exit callback when callbacks are narrowed while it runs.
  uint32_t outer_epoch = 0;
  uint32_t outer_quiet_epoch = 0;
  bool outer_watched = true;
};

namespace {

// CUPTI's buffer callbacks carry no user data: they reach the one collector
// that registered them through this pointer (CUPTI allows one subscriber).
std::atomic<CuptiCollector*> g_buffer_owner{nullptr};

// ---- static trampolines: C callbacks forwarding to the object ----

// Defined with the callbacks below (it dispatches to them).
void CUPTIAPI CallbackTrampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

void CUPTIAPI BufferRequestedTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferRequested(buffer, size, max_records);
  } catch (...) {
    *buffer = nullptr;  // declined: CUPTI counts the records it drops
    *size = 0;
  }
}

void CUPTIAPI BufferCompletedTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid_size) {
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  try {
    if (owner != nullptr) owner->OnBufferCompleted(buffer, size, valid_size);
  } catch (...) {
    // The buffer is lost (never reused); its records count as missing.
  }
}

// Safety net for an exit that comes between the end of the schedule and the
// next CUDA call (where cuptiFinalize would run): release the subscriber so
// nothing stays enabled. Registered once, after the agent's own exit handler,
// so it runs first and the agent can still collect the flushed records.
//
// It runs on the exiting thread, and a forced flush waits for CUPTI to hand
// back every buffer, which a late CUPTI can make take a minute: the release
// runs on a helper thread and the exit waits for it at most
// kExitReleaseBudget (the agent's own exit work is bounded separately).
constexpr auto kExitReleaseBudget = std::chrono::seconds(1);

void ReleaseAtExit() {
  CuptiCollector* owner = g_buffer_owner.load(std::memory_order_acquire);
  if (owner == nullptr) return;
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  try {
    std::thread([owner, done] {
      owner->OnExit();
      std::lock_guard<std::mutex> lock(done->mu);
      done->done = true;
      done->cv.notify_all();
    }).detach();
  } catch (...) {
    return;  // no thread: skip the release rather than risk the host's exit
  }
  std::unique_lock<std::mutex> lock(done->mu);
  done->cv.wait_for(lock, kExitReleaseBudget, [&] { return done->done; });
}

// CUPTI stamps every record with the agent's clock: no mapping needed.
uint64_t CUPTIAPI AgentTimestamp() { return NowNs(); }

// Activity kinds per Config::activities (PROF_ACTIVITIES).
std::vector<CUpti_ActivityKind> KindsFor(uint32_t activities) {
  std::vector<CUpti_ActivityKind> kinds;
  if (activities & kActKernel) kinds.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (activities & kActMemcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
  }
  if (activities & kActMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (activities & kActRuntime) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (activities & kActDriver) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (activities & kActSync) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (activities & kActMemory) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (activities & kActOverhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  return kinds;
}

// The optional entry points a CUPTI lacks, for one log line ("" if none).
std::string MissingOptional(const CuptiApi& api) {
  std::string missing;
  auto note = [&missing](bool absent, const char* what) {
    if (absent) missing += std::string(missing.empty() ? "" : "; ") + what;
  };
  note(api.SubscribeV2 == nullptr, "cuptiSubscribe_v2 (CUPTI 13+): subscribing with cuptiSubscribe, a refusal cannot name the other tool");
  note(api.ActivityRegisterTimestampCallback == nullptr,
       "cuptiActivityRegisterTimestampCallback: CUPTI times mapped by paired clock samples");
  note(api.Finalize == nullptr, "cuptiFinalize: CUPTI stays attached after the last window");
  note(api.SetThreadIdType == nullptr, "cuptiSetThreadIdType: API records carry pthread ids");
  note(api.ActivitySetAttribute == nullptr, "cuptiActivitySetAttribute: CUPTI clears each buffer itself");
  note(api.ActivityEnableRuntimeApi == nullptr,
       "cuptiActivityEnableRuntimeApi: RUNTIME records are written for calls the wrappers record too");
  note(api.GetResultString == nullptr, "cuptiGetResultString: results logged as numbers");
  return missing;
}

// Whether a call of this class leaves a record of an enabled kind behind.
bool ExpectsRecord(ApiClass c, uint32_t activities) {
  switch (c) {
    case ApiClass::kLaunch:
      return (activities & kActKernel) != 0;
    case ApiClass::kMemcpy:
      return (activities & kActMemcpy) != 0;
    case ApiClass::kMemset:
      return (activities & kActMemset) != 0;
    default:
      return false;
  }
}

// Whether a copy or memset call moves zero bytes. Such a call enqueues no
// device operation, so CUPTI writes no MEMCPY/MEMSET record for it and the
// window must not wait for one nor count it missing (issue 9 item 3; the
// runtime and driver references define these calls by their byte count:
// "Copies count bytes", "Fills the first count bytes", "Sets the memory
// range of N 8-bit values"). Plain (1D), 2D and 3D copies and memsets of
// both APIs: a 2D/3D one moves width x height (x depth) bytes or elements,
// none when any of them is 0 (the simulated stack, following the same
// definitions, enqueues nothing then).
// The driver's 1D copies and memsets (generated_cuda_meta.h: cuMemcpy_params,
// cuMemcpyHtoD_v2_params, cuMemsetD8_v2_params, ... ) all hold two 8-byte
// fields (pointers, or a pointer and a value padded to 8) and then the size_t
// byte or element count. That header's legacy _v1 structs do not compile
// beside cupti.h's cuda.h, so the shared prefix is spelled here.
struct DriverBytesParams {
  uint64_t first;
  uint64_t second;
  size_t bytes;
};

// 2D and 3D: a box with no row, no byte per row or no slice holds no byte.
template <typename P>
bool ZeroRect(const void* params) {
  const auto* p = static_cast<const P*>(params);
  return p->width == 0 || p->height == 0;
}
template <typename P>
bool ZeroBox3D(const void* params) {  // cudaMemcpy3D*(const cudaMemcpy3DParms* p) and the Peer form
  const auto* p = static_cast<const P*>(params)->p;
  return p != nullptr && (p->extent.width == 0 || p->extent.height == 0 || p->extent.depth == 0);
}
template <typename P>
bool ZeroExtent(const void* params) {  // cudaMemset3D*(..., cudaExtent extent)
  const cudaExtent& e = static_cast<const P*>(params)->extent;
  return e.width == 0 || e.height == 0 || e.depth == 0;
}
// Driver 2D/3D copies take one descriptor (CUDA_MEMCPY2D/3D) as their
// first parameter; the 2D memsets (cuMemsetD2D8_v2_params, ...) hold the
// pointer, the pitch and the value (padded to 8) before Width and Height.
template <typename Desc>
bool ZeroDriverCopy2D(const void* params) {
  const Desc* d = *static_cast<const Desc* const*>(params);
  return d != nullptr && (d->WidthInBytes == 0 || d->Height == 0);
}
bool ZeroDriverCopy3D(const void* params) {
  const CUDA_MEMCPY3D* d = *static_cast<const CUDA_MEMCPY3D* const*>(params);
  return d != nullptr && (d->WidthInBytes == 0 || d->Height == 0 || d->Depth == 0);
}
struct DriverSet2DParams {
  uint64_t dst;
  size_t pitch;
  uint64_t value;
  size_t width;
  size_t height;
};

bool MovesZeroBytes(bool runtime, CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return false;
  if (runtime) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020: return ZeroRect<cudaMemcpy2D_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000: return ZeroRect<cudaMemcpy2D_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020: return ZeroRect<cudaMemcpy2DAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000:
        return ZeroRect<cudaMemcpy2DAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_v3020:
        return ZeroRect<cudaMemcpy2DToArray_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArray_ptds_v7000:
        return ZeroRect<cudaMemcpy2DToArray_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020:
        return ZeroRect<cudaMemcpy2DToArrayAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_ptsz_v7000:
        return ZeroRect<cudaMemcpy2DToArrayAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_v3020:
        return ZeroRect<cudaMemcpy2DFromArray_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArray_ptds_v7000:
        return ZeroRect<cudaMemcpy2DFromArray_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020:
        return ZeroRect<cudaMemcpy2DFromArrayAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000:
        return ZeroRect<cudaMemcpy2DFromArrayAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_v3020:
        return ZeroRect<cudaMemcpy2DArrayToArray_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_ptds_v7000:
        return ZeroRect<cudaMemcpy2DArrayToArray_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020: return ZeroRect<cudaMemset2D_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000: return ZeroRect<cudaMemset2D_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020: return ZeroRect<cudaMemset2DAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000:
        return ZeroRect<cudaMemset2DAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020: return ZeroBox3D<cudaMemcpy3D_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000: return ZeroBox3D<cudaMemcpy3D_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020: return ZeroBox3D<cudaMemcpy3DAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000:
        return ZeroBox3D<cudaMemcpy3DAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000: return ZeroBox3D<cudaMemcpy3DPeer_v4000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_ptds_v7000:
        return ZeroBox3D<cudaMemcpy3DPeer_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000:
        return ZeroBox3D<cudaMemcpy3DPeerAsync_v4000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000:
        return ZeroBox3D<cudaMemcpy3DPeerAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020: return ZeroExtent<cudaMemset3D_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000: return ZeroExtent<cudaMemset3D_ptds_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020: return ZeroExtent<cudaMemset3DAsync_v3020_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000:
        return ZeroExtent<cudaMemset3DAsync_ptsz_v7000_params>(params);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        return static_cast<const cudaMemcpy_v3020_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
        return static_cast<const cudaMemcpy_ptds_v7000_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        return static_cast<const cudaMemcpyAsync_v3020_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
        return static_cast<const cudaMemcpyAsync_ptsz_v7000_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
        return static_cast<const cudaMemcpyPeer_v4000_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000:
        return static_cast<const cudaMemcpyPeerAsync_v4000_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
        return static_cast<const cudaMemset_v3020_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
        return static_cast<const cudaMemset_ptds_v7000_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
        return static_cast<const cudaMemsetAsync_v3020_params*>(params)->count == 0;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000:
        return static_cast<const cudaMemsetAsync_ptsz_v7000_params*>(params)->count == 0;
      default:
        return false;
    }
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2:
      return ZeroDriverCopy2D<CUDA_MEMCPY2D>(params);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2:
      return ZeroDriverCopy3D(params);
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async: {
      const auto* s = static_cast<const DriverSet2DParams*>(params);
      return s->width == 0 || s->height == 0;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
      return static_cast<const DriverBytesParams*>(params)->bytes == 0;
    default:
      return false;
  }
}

thread_local CallbackThread t_calls;

// The marker path's idea of a call, from its CUPTI class.
ApiKind KindOf(ApiClass c, const char* name) {
  switch (c) {
    case ApiClass::kLaunch: return ApiKind::kLaunch;
    case ApiClass::kMemcpy: return ApiKind::kMemcpy;
    case ApiClass::kMemset: return ApiKind::kMemset;
    case ApiClass::kSync: return ApiKind::kSync;
    case ApiClass::kMemory: {
      std::string_view n = name != nullptr ? name : "";
      return n.find("Free") != std::string_view::npos || n.find("Release") != std::string_view::npos ? ApiKind::kFree
                                                                                                    : ApiKind::kAlloc;
    }
    default: return ApiKind::kOther;
  }
}

// Only device work answers a call that put work in flight; the call's own
// RUNTIME/DRIVER record arrives at its exit, before a kernel still running.
bool IsDeviceWork(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset;
}

// How long a window waits, once all its calls returned, for API records
// still not delivered (they are written as a call returns; CUPTI may have
// dropped them).
constexpr uint64_t kApiRecordGraceNs = 50'000'000;

int CountLoads(dl_phdr_info* info, size_t, void* data) {
  *static_cast<uint64_t*>(data) = info->dlpi_adds;
  return 1;  // dlpi_adds is the process's count: the first object is enough
}

// How many objects the process has loaded so far (dlopen included).
uint64_t LoadedObjects() {
  uint64_t adds = 0;
  LoaderSection section;  // agent/loader_guard.h: the agent thread calls this once a second
  dl_iterate_phdr(CountLoads, &adds);
  return adds;
}

bool IsApiRecord(const DeviceRecord& r) {
  DeviceKind kind = static_cast<DeviceKind>(r.kind);
  return kind == DeviceKind::kRuntimeApi || kind == DeviceKind::kDriverApi;
}

}  // namespace

CuptiCollector::CuptiCollector(Loader loader) : loader_(std::move(loader)) {}

CuptiCollector::~CuptiCollector() {
  CuptiCollector* self = this;
  g_buffer_owner.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

// ---- control (application thread) ----

void CuptiCollector::GoOff(const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mode_mutex_);
    if (!off_cause_.empty()) return;
    off_cause_ = cause;
  }
  state_.store(CollectorState::kOff, std::memory_order_release);
  callbacks_live_.store(false, std::memory_order_release);
  Log().warn(
      "CUPTI unavailable: {}; running interception-only (API calls and allocations keep host "
      "timestamps, no GPU timings)",
      cause);
}

bool CuptiCollector::LoadAndCheckVersion(const Config& config) {
  if (loaded_) return true;
  std::string cause;
  if (!loader_(config, &api_, &cause)) {
    GoOff(cause);
    return false;
  }
  CUptiResult result = api_.GetVersion(&cupti_version_);
  if (result != CUPTI_SUCCESS) {
    GoOff("cuptiGetVersion failed in " + api_.path + ": " + ResultName(api_, result));
    return false;
  }
  if (!LayoutsFor(cupti_version_, &layouts_)) {
    std::string release = CuptiRelease(cupti_version_);
    GoOff(api_.path + " reports CUPTI API version " + std::to_string(cupti_version_) +
          (release.empty() ? std::string() : " (CUDA " + release + ")") + ", outside the range libprof decodes (" +
          SupportedCuptiRange() + "); set PROF_CUPTI_LIB to a CUPTI in that range");
    return false;
  }
  loaded_ = true;
  Log().info("CUPTI: {} ({}), API version {} (CUDA {}); records read as {}", api_.path, api_.found_by,
             cupti_version_, CuptiRelease(cupti_version_), DescribeLayouts(layouts_));
  std::string missing = MissingOptional(api_);
  if (!missing.empty()) Log().info("CUPTI {} lacks optional functions: {}", api_.path, missing);
  size_t half = std::max<size_t>(config.buffer_bytes / 2, 1);
  // The pool of raw CUPTI buffers, the launch registry and the decoded
  // records share PROF_BUFFER_MB with the host-side buffers: half of it
  // here, a quarter for raw buffers and a quarter for the registry's ring
  // plus the decoded records (one copy: the window takes them by move).
  // CUPTI accepts a NULL buffer from API version 27 on (every 13.x does);
  // older ones get scratch buffers whose records are counted and discarded.
  pool_ = std::make_unique<BufferPool>(half / 2, /*null_allowed=*/cupti_version_ >= 27);
  size_t registry_calls = std::max<size_t>(half / 256, 16384);
  registry_ = std::make_unique<LaunchRegistry>(registry_calls);
  size_t registry_bytes = LaunchRegistry::BytesFor(registry_calls);
  size_t decoded_bytes = half / 2 > registry_bytes ? half / 2 - registry_bytes : 0;
  max_pending_ = std::max<size_t>(decoded_bytes / (sizeof(DeviceRecord) + sizeof(uint64_t)), 1024);
  return true;
}

bool CuptiCollector::Subscribe() {
  CUptiResult result;
  const char* how = "cuptiSubscribe";
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  if (api_.SubscribeV2 != nullptr) {
    how = "cuptiSubscribe_v2";
    CUpti_SubscriberParams params;
    std::memset(&params, 0, sizeof(params));
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "libprof";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN;
    result = api_.SubscribeV2(&subscriber_, CallbackTrampoline, this, &params);
  } else {
    result = api_.Subscribe(&subscriber_, CallbackTrampoline, this);
  }
  if (result == CUPTI_SUCCESS) return true;
  subscriber_ = nullptr;
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    std::string who = holder[0] != '\0' ? std::string(" (") + holder + ")" : std::string();
    GoOff("another tool already holds CUPTI" + who + ", e.g. Nsight, torch.profiler or DCGM");
  } else if (result == CUPTI_ERROR_UNKNOWN || result == CUPTI_ERROR_NOT_INITIALIZED) {
    // What NVIDIA's libcupti answers on a machine without a driver (999).
    // Say what happened, with the file; guess at the cause only when the
    // process has no driver loaded at all.
    std::string what = std::string(how) + " in " + api_.path + " returned " + ResultName(api_, result);
    GoOff(DriverLoaded() ? what : what + "; no CUDA driver is loaded in this process (libcuda.so.1)");
  } else {
    GoOff(std::string(how) + " in " + api_.path + " returned " + ResultName(api_, result));
  }
  return false;
}

void CuptiCollector::EnableCallbacks(bool enable) {
  SetCallbacks(enable);
  // libprof's own device queries (agent/device_collector.h: OwnCudaCall) are
  // seen while recording, so their records are known as libprof's and
  // dropped. Not subscribed while only watching calls for step markers: a
  // program that asks for its device constantly pays nothing then.
  uint32_t on = enable ? 1 : 0;
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020);
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice);
  callbacks_live_.store(enable, std::memory_order_release);
}

void CuptiCollector::SetCallbacks(bool enable) {
  uint32_t on = enable ? 1 : 0;
  if (enable) {
    for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
      api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
    }
  } else {
    CUptiResult r = api_.EnableDomain(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (r != CUPTI_SUCCESS) Log().debug("cuptiEnableDomain(runtime, 0) returned {}", ResultName(api_, r));
  }
  // Driver calls that launch or copy: gives work a library launched through
  // the driver API (cuBLAS, Triton) a launch time too.
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
  // Context destruction: flush first so its records survive.
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  // Stream capture: a launch or copy into a capturing stream creates a graph
  // node instead of device work (CUPTI issues this inside the call).
  api_.EnableCallback(on, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
}

void CuptiCollector::ComputeWatchedLocked() {
  uint32_t classes = 0;
  switch (config_.step_source) {
    case StepSource::kSync: classes = ClassBit(ApiClass::kSync); break;
    case StepSource::kKernel: classes = ClassBit(ApiClass::kLaunch); break;
    case StepSource::kApi: classes = ClassesOfCallsNamed(BaseApiName(ApiName(config_.step_api))); break;
    case StepSource::kAuto:
      // The detector's tokens: launches, copies and memsets at enter, synchronize returns.
      classes = ClassBit(ApiClass::kLaunch) | ClassBit(ApiClass::kMemcpy) | ClassBit(ApiClass::kMemset) |
                ClassBit(ApiClass::kSync);
      break;
    default: break;
  }
  // Which hot bits make a wrapper feed a call of each watched id to the
  // marker path (intercept.h): seen unfed while one of them is set, the call
  // reached no wrapper. Under api:<fn> only fn's own calls (the wrappers
  // pass the others of its class through unfed).
  std::string_view api_base =
      config_.step_source == StepSource::kApi ? BaseApiName(ApiName(config_.step_api)) : std::string_view();
  for (int d = 0; d < 2; ++d) {
    ApiDomain domain = d == 0 ? ApiDomain::kRuntime : ApiDomain::kDriver;
    for (auto& w : watched_[d]) w.store(0, std::memory_order_relaxed);
    for (auto& u : unfed_sign_[d]) u.store(0, std::memory_order_relaxed);
    for (uint32_t id : CallbackIdsOfClasses(domain, classes)) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[d][id].store(1, std::memory_order_relaxed);
      const char* name = CallbackName(domain, id);
      uint32_t bits = 0;
      switch (ClassifyCallback(domain, id)) {
        case ApiClass::kLaunch: bits = kHotLaunchMarker; break;
        case ApiClass::kMemcpy:
        case ApiClass::kMemset: bits = kHotCopyMarker; break;
        case ApiClass::kSync: bits = kHotSyncMarker; break;
        default: break;
      }
      if (!api_base.empty() && name != nullptr && BaseApiName(name) == api_base) bits |= kHotApiMarker;
      unfed_sign_[d][id].store(bits, std::memory_order_relaxed);
    }
  }
  if (config_.range_kind == RangeKind::kProfilerApi) {
    // PROF_RANGE=cudaProfilerApi: the range edges, whatever PROF_STEP watches.
    for (uint32_t id : {static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000),
                        static_cast<uint32_t>(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)}) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[0][id].store(1, std::memory_order_relaxed);
      unfed_sign_[0][id].store(kHotRangeMarker, std::memory_order_relaxed);
    }
    for (uint32_t id : {static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart),
                        static_cast<uint32_t>(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop)}) {
      if (id >= kMaxWatchedCbid) continue;
      watched_[1][id].store(1, std::memory_order_relaxed);
      unfed_sign_[1][id].store(kHotRangeMarker, std::memory_order_relaxed);
    }
  }
}

void CuptiCollector::SetConfigLocked(const Config& config) {
  config_ = config;
  for (int d = 0; d < 2; ++d) {
    for (uint32_t id = 0; id < kMaxWatchedCbid; ++id) {
      call_traits_[d][id].store(TraitsOf(/*runtime=*/d == 0, id), std::memory_order_relaxed);
    }
  }
}

uint8_t CuptiCollector::TraitsOf(bool runtime, CUpti_CallbackId cbid) const {
  ApiClass c = ClassifyCallback(runtime ? ApiDomain::kRuntime : ApiDomain::kDriver, cbid);
  uint8_t traits = 0;
  if (ExpectsRecord(c, config_.activities)) traits |= kTraitExpectsRecord;
  if (c == ApiClass::kMemcpy || c == ApiClass::kMemset) traits |= kTraitCountsBytes;
  if ((config_.activities & (runtime ? kActRuntime : kActDriver)) != 0) traits |= kTraitExpectsApiRecord;
  return traits;
}

void CuptiCollector::EnableWatchedCallbacks() {
  for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
    if (Watched(/*runtime=*/true, *id)) api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  }
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    if (Watched(/*runtime=*/false, *id)) api_.EnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
}

void CuptiCollector::NarrowToWatchedCallbacks() {
  // Id by id, never the whole domain off and the watched ids on again: a
  // marker call on another thread in between would be missed.
  narrow_epoch_.fetch_add(1, std::memory_order_relaxed);
  for (const uint32_t* id = RuntimeCallbackIds(); *id != 0; ++id) {
    if (!Watched(/*runtime=*/true, *id)) api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, *id);
  }
  for (const uint32_t* id = DriverWorkCallbackIds(); *id != 0; ++id) {
    if (!Watched(/*runtime=*/false, *id)) api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, *id);
  }
  api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  api_.EnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
}

void CuptiCollector::EnableActivities(bool enable) {
  if (enable && !enabled_kinds_.empty()) return;  // still on: a pause that never stopped
  if (!enable) {
    for (CUpti_ActivityKind kind : enabled_kinds_) api_.ActivityDisable(kind);
    enabled_kinds_.clear();
    // Setting the RUNTIME kind overrides the per-id choices (cupti_activity.h,
    // cuptiActivityEnableRuntimeApi): the next enable records every id, and
    // the next ApplyRuntimeSelectionLocked leaves the wrapped ones out again.
    rt_select_ok_ = false;
    for (auto& bits : rt_api_) {
      if (bits.load(std::memory_order_relaxed) & kRtOff) bits.fetch_and(static_cast<uint8_t>(~kRtOff));
    }
    rt_select_dirty_.store(true, std::memory_order_relaxed);
    return;
  }
  std::string failed;
  for (CUpti_ActivityKind kind : KindsFor(config_.activities)) {
    CUptiResult r = api_.ActivityEnable(kind);
    if (r == CUPTI_SUCCESS) {
      enabled_kinds_.push_back(kind);
    } else {
      failed += (failed.empty() ? "" : ", ") + std::to_string(static_cast<int>(kind)) + ": " + ResultName(api_, r);
    }
  }
  if (!failed.empty()) Log().warn("CUPTI refused some activity kinds ({}); their records are missing", failed);
  // Records built from callbacks carry gettid and agent-clock times, as
  // CUPTI's do only with both of these.
  rt_select_ok_ = api_.ActivityEnableRuntimeApi != nullptr && !rt_select_failed_ && thread_ids_system_ &&
                  agent_clock_ &&
                  std::find(enabled_kinds_.begin(), enabled_kinds_.end(), CUPTI_ACTIVITY_KIND_RUNTIME) !=
                      enabled_kinds_.end();
}

void CuptiCollector::ApplyRuntimeSelectionLocked() {
  if (!rt_select_ok_ || !rt_select_dirty_.exchange(false, std::memory_order_acq_rel)) return;
  for (uint32_t cbid = 1; cbid < kMaxWatchedCbid; ++cbid) {
    uint8_t bits = rt_api_[cbid].load(std::memory_order_acquire);
    bool off = (bits & kRtOff) != 0;
    bool leave_out = (bits & kRtFed) != 0 && (bits & kRtUnfed) == 0 && !rt_select_failed_;
    if (leave_out == off) continue;
    if (leave_out) {
      // Marked first: a callback that still sees the id clear is sure its
      // record comes (CUPTI stops recording it only after this).
      rt_api_[cbid].fetch_or(kRtOff, std::memory_order_seq_cst);
      CUptiResult r = api_.ActivityEnableRuntimeApi(cbid, 0);
      if (r != CUPTI_SUCCESS) {
        // Keep today's records: this id, and no other from now on.
        rt_api_[cbid].fetch_and(static_cast<uint8_t>(~kRtOff), std::memory_order_seq_cst);
        rt_select_failed_ = true;
        Log().info("cuptiActivityEnableRuntimeApi({}, 0) returned {}; RUNTIME records of wrapped calls stay on",
                   cbid, ResultName(api_, r));
      }
    } else if (api_.ActivityEnableRuntimeApi(cbid, 1) == CUPTI_SUCCESS) {
      rt_api_[cbid].fetch_and(static_cast<uint8_t>(~kRtOff), std::memory_order_seq_cst);
    } else {
      // Still left out: calls no wrapper records keep getting built records.
      rt_select_dirty_.store(true, std::memory_order_relaxed);
    }
  }
}

bool CuptiCollector::SubscribeAndRegister(CollectorState state) {
  // Subscribe before registering anything: a refused subscriber must not
  // take another tool's buffers or timestamps.
  if (!Subscribe()) return false;
  // A new session may count correlation ids from 1 again; nothing of the
  // last one is awaited any more (its windows were collected).
  if (state == CollectorState::kDetached) registry_->Clear();
  subscribed_pid_ = getpid();
  static std::once_flag exit_hook;
  std::call_once(exit_hook, [] { std::atexit(ReleaseAtExit); });
  // The timestamp callback must be in place before any kind is enabled.
  bool agent_clock = api_.ActivityRegisterTimestampCallback != nullptr &&
                     api_.ActivityRegisterTimestampCallback(AgentTimestamp) == CUPTI_SUCCESS;
  agent_clock_ = agent_clock;
  if (agent_clock) {
    clock_ = ClockMap();
  } else {
    clock_.Calibrate(NowNs, [this](uint64_t* ns) { return api_.GetTimestamp(ns) == CUPTI_SUCCESS; });
    Log().info("CUPTI timestamps mapped onto the agent clock by paired samples (offset {} ns, +-{} ns)",
               clock_.offset_ns(), clock_.uncertainty_ns());
  }
  // API records carry the OS thread id (gettid), as host events do;
  // CUPTI's default is pthread_self().
  thread_ids_system_ = api_.SetThreadIdType != nullptr &&
                      api_.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS;
  // Our buffers come zeroed (fresh pages, and the decoding thread clears
  // what CUPTI wrote before a buffer goes back): otherwise CUPTI zeroes
  // each whole buffer on the thread that asked for it, a stall NVIDIA
  // documents, on an application thread.
  if (api_.ActivitySetAttribute != nullptr) {
    uint8_t zeroed = 1;
    size_t size = sizeof(zeroed);
    api_.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &zeroed);
  }
  g_buffer_owner.store(this, std::memory_order_release);
  CUptiResult r = api_.ActivityRegisterCallbacks(BufferRequestedTrampoline, BufferCompletedTrampoline);
  if (r != CUPTI_SUCCESS) {
    api_.Unsubscribe(subscriber_);
    subscriber_ = nullptr;
    GoOff("cuptiActivityRegisterCallbacks returned " + ResultName(api_, r));
    return false;
  }
  return true;
}

void CuptiCollector::AttachImpl(const Config& config) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kOff || state == CollectorState::kAttached) return;
  if (state == CollectorState::kIdle) SetConfigLocked(config);
  if (!LoadAndCheckVersion(config_)) return;

  if ((state == CollectorState::kIdle || state == CollectorState::kDetached) && !SubscribeAndRegister(state)) return;
  // From kQuiet: the window's calls are a probe too (its callbacks see which
  // calls wrappers fed), so the steps counted before it still count.
  if (state == CollectorState::kQuiet && !ResubscribeLocked(/*new_probe=*/false)) return;
  finalize_after_ns_.store(~0ull, std::memory_order_release);
  quiet_pending_.store(false, std::memory_order_relaxed);  // recording instead
  stop_pending_ = false;  // the last window's pause never stopped: keep going
  ReadCuptiDropsLocked();
  dropped_at_attach_ = cupti_dropped_.load(std::memory_order_relaxed);
  EnableCallbacks(true);
  EnableActivities(true);
  ApplyRuntimeSelectionLocked();
  state_.store(CollectorState::kAttached, std::memory_order_release);
}

void CuptiCollector::WatchCallsImpl(const Config& config) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kOff || state == CollectorState::kFinishing || state == CollectorState::kQuiet) return;
  if (state == CollectorState::kIdle) SetConfigLocked(config);
  if (!LoadAndCheckVersion(config_)) return;
  marker_names_ = config_.step_source == StepSource::kKernel;
  ComputeWatchedLocked();
  loads_seen_ = LoadedObjects();
  watching_calls_.store(true, std::memory_order_release);
  if (state == CollectorState::kIdle || state == CollectorState::kDetached) {
    if (!SubscribeAndRegister(state)) {
      watching_calls_.store(false, std::memory_order_release);
      return;
    }
    // Subscribed, no activity kinds: what a pause between windows is.
    state_.store(CollectorState::kPaused, std::memory_order_release);
  }
  // The watched ids on; callbacks_live_ stays as it is (off between
  // windows: the calls feed the marker path, nothing is registered or
  // recorded). A window recording (or still to stop) keeps every id on
  // until it stops (StopIfPausedLocked narrows then).
  if (state_.load(std::memory_order_acquire) != CollectorState::kAttached && !stop_pending_) EnableWatchedCallbacks();
}

void CuptiCollector::BeginRecordImpl(uint64_t start_ns) {
  // Warmup records need nothing here: they are discarded when the window is
  // collected, because their launches precede its start_ns. Records CUPTI
  // dropped during warmup are set aside so the window's count is its own;
  // try_lock because the writer may be flushing (best effort, never wait).
  (void)start_ns;
  windows_begun_.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kAttached) return;
  ReadCuptiDropsLocked();
  uint64_t total = cupti_dropped_.load(std::memory_order_relaxed);
  warmup_dropped_.fetch_add(total - dropped_at_attach_, std::memory_order_relaxed);
  dropped_at_attach_ = total;
  // What warmup's calls taught: the window leaves their records out.
  ApplyRuntimeSelectionLocked();
}

void CuptiCollector::PauseImpl() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (state_.load(std::memory_order_acquire) != CollectorState::kAttached) return;
  // Not now: calls of the window may still be in progress (a blocking copy
  // whose device work is enqueued after the step's end, a synchronize that
  // returns after it). CollectWindow stops recording once they are done.
  stop_pending_ = true;
  state_.store(CollectorState::kPaused, std::memory_order_release);
  // The writer may have collected the window already (its calls were all
  // done): then nothing is left to wait for. Both this and the end of
  // CollectWindow look under control_mutex_, so one of them stops.
  StopIfPausedLocked(/*collecting=*/false);
}

bool CuptiCollector::StopIfPausedLocked(bool collecting) {
  if (!stop_pending_ || state_.load(std::memory_order_acquire) != CollectorState::kPaused) return false;
  // Only once the last window begun is being (or was) collected: a window
  // still queued behind stops recording in its own collection.
  uint64_t collected = windows_collected_.load(std::memory_order_acquire) + (collecting ? 1 : 0);
  if (collected < windows_begun_.load(std::memory_order_acquire)) return false;
  stop_pending_ = false;
  EnableActivities(false);
  // Calls keep feeding the marker path between windows when it watches
  // them: the ids it watches stay on.
  if (watching_calls_.load(std::memory_order_acquire)) {
    callbacks_live_.store(false, std::memory_order_release);
    NarrowToWatchedCallbacks();
  } else {
    EnableCallbacks(false);
  }
  return true;
}

void CuptiCollector::FinishImpl() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  CollectorState state = state_.load(std::memory_order_acquire);
  if (state == CollectorState::kQuiet) {
    // Unsubscribed already, every window collected: nothing to finalize.
    watching_calls_.store(false, std::memory_order_release);
    state_.store(CollectorState::kDetached, std::memory_order_release);
    return;
  }
  if (state != CollectorState::kAttached && state != CollectorState::kPaused) return;
  // Activity kinds stay as they are: the last window's calls may still be in
  // progress; the detach after its collection turns everything off.
  // Runtime callbacks stay on: cuptiFinalize may only run from an API exit.
  // It runs after the last window was collected (CollectWindow lowers this),
  // or after the flush timeout if no window is collected.
  bool recording = state == CollectorState::kAttached || stop_pending_;
  stop_pending_ = false;
  quiet_pending_.store(false, std::memory_order_relaxed);
  EnableCallbacks(true);
  callbacks_live_.store(recording, std::memory_order_release);
  // The schedule is done: no step will start a window again.
  watching_calls_.store(false, std::memory_order_release);
  bool collected = windows_collected_.load(std::memory_order_acquire) >= windows_begun_.load(std::memory_order_acquire);
  finalize_after_ns_.store(collected ? 0 : NowNs() + config_.flush_timeout_ns, std::memory_order_release);
  state_.store(CollectorState::kFinishing, std::memory_order_release);
}

void CuptiCollector::FlushLocked(bool forced) {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  CUptiResult r = api_.ActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (r != CUPTI_SUCCESS) Log().debug("cuptiActivityFlushAll returned {}", ResultName(api_, r));
  ReadCuptiDropsLocked();
}

void CuptiCollector::ReadCuptiDropsLocked() {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  size_t dropped = 0;
  if (api_.ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    cupti_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  }
}

void CuptiCollector::DetachLocked(bool finalize) {
  if (!Subscribed(state_.load(std::memory_order_acquire))) return;
  FlushLocked(/*forced=*/true);
  EnableActivities(false);
  callbacks_live_.store(false, std::memory_order_release);
  api_.Unsubscribe(subscriber_);
  subscriber_ = nullptr;
  if (finalize && api_.Finalize != nullptr) {
    CUptiResult r = api_.Finalize();
    if (r != CUPTI_SUCCESS) Log().debug("cuptiFinalize returned {}", ResultName(api_, r));
  }
  finalize_after_ns_.store(~0ull, std::memory_order_release);
  state_.store(CollectorState::kDetached, std::memory_order_release);
}

void CuptiCollector::OnWaitingStepImpl() {
  // Cheap while it does not apply: one relaxed load each for a source that
  // watches no calls or a process with calls no wrapper sees.
  if (!watching_calls_.load(std::memory_order_relaxed) || saw_unfed_.load(std::memory_order_relaxed)) return;
  if (state_.load(std::memory_order_acquire) != CollectorState::kPaused) return;
  if (probe_steps_.fetch_add(1, std::memory_order_relaxed) + 1 < kProbeSteps) return;
  if (quiet_pending_.load(std::memory_order_relaxed)) return;
  // try_lock: the writer may be collecting (it holds the lock while flushing);
  // the next waiting step tries again.
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || !CanGoQuietLocked()) return;
  // CUPTI stays attached to the process, and costs every call, until
  // cuptiFinalize, which is safe only from an API-exit callback: the next
  // watched call's exit detaches (MaybeGoQuietFromApiExit).
  quiet_pending_.store(true, std::memory_order_release);
}

// OnWaitingStepImpl's early returns, negated: attached and probing whether
// every watched call is fed, and not yet asked to detach.
bool CuptiCollector::WantsWaitingSteps() const {
  return watching_calls_.load(std::memory_order_relaxed) && !saw_unfed_.load(std::memory_order_relaxed) &&
         state_.load(std::memory_order_relaxed) == CollectorState::kPaused &&
         !quiet_pending_.load(std::memory_order_relaxed);
}

bool CuptiCollector::CanGoQuietLocked() const {
  return state_.load(std::memory_order_acquire) == CollectorState::kPaused && !stop_pending_ &&
         !saw_unfed_.load(std::memory_order_acquire) && watching_calls_.load(std::memory_order_acquire) &&
         // Every window begun was collected: nothing of CUPTI's is still awaited.
         windows_collected_.load(std::memory_order_acquire) >= windows_begun_.load(std::memory_order_acquire);
}

void CuptiCollector::MaybeGoQuietFromApiExit() {
  // try_lock: an application thread must never wait here (as for finalize).
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  quiet_pending_.store(false, std::memory_order_relaxed);
  if (!CanGoQuietLocked()) return;
  // Calls in progress now lose their exit callbacks (see OnApiEnter).
  quiet_epoch_.fetch_add(1, std::memory_order_relaxed);
  DetachLocked(/*finalize=*/true);
  state_.store(CollectorState::kQuiet, std::memory_order_release);
  next_probe_ns_ = NowNs() + probe_interval_ns_;
  Log().debug("CUPTI detached while waiting (the last {} step boundaries' watched calls all reached a wrapper)",
              probe_steps_.load(std::memory_order_relaxed));
}

bool CuptiCollector::ResubscribeLocked(bool new_probe) {
  // After cuptiFinalize, as a new cycle after the schedule's end: subscribe,
  // register buffers and timestamps again, correlation ids may restart.
  quiet_pending_.store(false, std::memory_order_relaxed);
  if (!SubscribeAndRegister(CollectorState::kDetached)) return false;
  if (new_probe) probe_steps_.store(0, std::memory_order_relaxed);
  state_.store(CollectorState::kPaused, std::memory_order_release);
  EnableWatchedCallbacks();
  return true;
}

void CuptiCollector::TickImpl(uint64_t now_ns) {
  // Nothing to do unless detached: no lock, no loader call while attached.
  if (!watching_calls_.load(std::memory_order_acquire) || saw_unfed_.load(std::memory_order_relaxed) ||
      state_.load(std::memory_order_acquire) != CollectorState::kQuiet) {
    return;
  }
  uint64_t loads = LoadedObjects();  // the loader's lock, not ours
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kQuiet) return;
  bool loaded_more = loads != loads_seen_;
  loads_seen_ = loads;
  if (!loaded_more && now_ns < next_probe_ns_) return;
  // A library loaded since (it may carry a static cudart), or the interval
  // is up: watch through CUPTI again until kProbeSteps waiting steps pass.
  if (!loaded_more) probe_interval_ns_ = std::min<uint64_t>(probe_interval_ns_ * 2, 64'000'000'000ull);
  next_probe_ns_ = now_ns + probe_interval_ns_;
  if (ResubscribeLocked(/*new_probe=*/true)) {
    Log().debug("CUPTI attached again while waiting ({})", loaded_more ? "libraries loaded" : "re-probe");
  }
}

void CuptiCollector::OnExitImpl() {
  // A forked child must not touch the parent's CUPTI session.
  if (getpid() != subscribed_pid_) return;
  // The exit path must not wait long: if a window is being collected (the
  // writer holds control_mutex_ while flushing), give it a moment, then go.
  std::unique_lock<std::mutex> lock(control_mutex_, std::defer_lock);
  for (int i = 0; i < 100 && !lock.try_lock(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!lock.owns_lock()) return;
  // Not finalized: outside an API-exit callback that is unsafe, and the
  // process is ending anyway. Unsubscribing releases CUPTI for others.
  DetachLocked(/*finalize=*/false);
}

std::string CuptiCollector::Mode() const {
  std::lock_guard<std::mutex> lock(mode_mutex_);
  return off_cause_.empty() ? std::string("activity") : "interception-only (" + off_cause_ + ")";
}

// ---- the DeviceCollector interface: nothing escapes into the host ----

template <typename Fn>
void CuptiCollector::Guarded(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    GoOffNoThrow(std::string(what) + " failed: " + e.what());
  } catch (...) {
    GoOffNoThrow(std::string(what) + " failed");
  }
}

void CuptiCollector::GoOffNoThrow(const std::string& cause) {
  try {
    // A part that failed must not leave CUPTI attached behind it.
    std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
    if (lock.owns_lock()) DetachLocked(/*finalize=*/false);
  } catch (...) {
  }
  try {
    GoOff(cause);
  } catch (...) {
    state_.store(CollectorState::kOff, std::memory_order_release);
    callbacks_live_.store(false, std::memory_order_release);
  }
}

void CuptiCollector::Attach(const Config& config) {
  Guarded("Attach", [&] { AttachImpl(config); });
}
void CuptiCollector::WatchCalls(const Config& config) {
  Guarded("WatchCalls", [&] { WatchCallsImpl(config); });
}
void CuptiCollector::BeginRecord(uint64_t start_ns) {
  Guarded("BeginRecord", [&] { BeginRecordImpl(start_ns); });
}
void CuptiCollector::Pause() {
  Guarded("Pause", [&] { PauseImpl(); });
}
void CuptiCollector::Finish() {
  Guarded("Finish", [&] { FinishImpl(); });
}
void CuptiCollector::OnWaitingStep() {
  Guarded("OnWaitingStep", [&] { OnWaitingStepImpl(); });
}
void CuptiCollector::Tick(uint64_t now_ns) {
  Guarded("Tick", [&] { TickImpl(now_ns); });
}
void CuptiCollector::OnExit() {
  Guarded("OnExit", [&] { OnExitImpl(); });
}
void CuptiCollector::CollectWindow(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) {
  Guarded("CollectWindow", [&] { CollectWindowImpl(start_ns, end_ns, deadline_ns, out); });
}

// ---- CUPTI callbacks (application threads, CUPTI's thread) ----

namespace {

// The dispatch is here rather than in a member, so that each callback is one
// call from CUPTI into the half it needs.
void CUPTIAPI CallbackTrampoline(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (userdata == nullptr) return;  // never ours (we subscribe with the collector)
  auto* collector = static_cast<CuptiCollector*>(userdata);
  try {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
      const auto* info = static_cast<const CUpti_CallbackData*>(data);
      bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      if (tls_own_cuda_calls > 0) {
        collector->OnOwnCall(info);
      } else if (info->callbackSite == CUPTI_API_ENTER) {
        // The thread's state is found here once and handed on (each TLS
        // lookup is a call in a shared library).
        collector->OnApiEnter(t_calls, runtime, cbid, info);
      } else {
        collector->OnApiExit(t_calls, runtime, cbid, info);
      }
    } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      collector->OnResourceCallback(cbid);
    }
  } catch (...) {
    // Never let an exception unwind into CUPTI or the host.
  }
}

}  // namespace

void CuptiCollector::OnOwnCall(const CUpti_CallbackData* info) {
  // libprof's own call (and any call nested in it): no step marker, no
  // expectation, no correlation for the wrapper; its records are dropped.
  if (info->callbackSite == CUPTI_API_ENTER && registry_) registry_->OnOwnCall(info->correlationId, NowNs());
}

void CuptiCollector::OnResourceCallback(CUpti_CallbackId cbid) {
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    // Captured, not run: no record will come for this call, so the window
    // must not wait for one nor count it missing. (A graph launch's
    // kernels carry the cudaGraphLaunch call's correlation id.)
    uint32_t expecting = t_calls.expecting_correlation;
    if (expecting != 0) registry_->OnExit(expecting, /*succeeded=*/false);
    return;
  }
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && callbacks_live_.load(std::memory_order_acquire)) {
    // Records of a context are lost with it; flush while it exists. No
    // control_mutex_: a flush may run beside another, CUPTI serializes.
    api_.ActivityFlushAll(0);
  }
}

void CuptiCollector::OnApiEnter(CallbackThread& t, bool runtime, CUpti_CallbackId cbid,
                                const CUpti_CallbackData* info) {
  bool live = callbacks_live_.load(std::memory_order_acquire);
  if ((t.runtime_depth != 0 || t.driver_depth != 0) &&
      ((!t.outer_watched && t.outer_epoch != narrow_epoch_.load(std::memory_order_relaxed)) ||
       t.outer_quiet_epoch != quiet_epoch_.load(std::memory_order_relaxed))) {
    // The outermost call this thread was inside was not watched and the
    // callbacks were narrowed since it entered, or the collector
    // unsubscribed since: its exit never came.
    t.runtime_depth = 0;
    t.driver_depth = 0;
    t.runtime_correlation = 0;
    t.expecting_correlation = 0;
  }
  if (t.runtime_depth == 0 && t.driver_depth == 0) {
    t.outer_epoch = narrow_epoch_.load(std::memory_order_relaxed);
    t.outer_quiet_epoch = quiet_epoch_.load(std::memory_order_relaxed);
    t.outer_watched = Watched(runtime, cbid);
  }
  bool outermost = runtime ? t.runtime_depth == 0 : t.runtime_depth == 0 && t.driver_depth == 0;
  if (runtime && t.runtime_depth++ == 0) t.runtime_correlation = info->correlationId;
  if (!runtime) ++t.driver_depth;
  bool marker = false;
  if (outermost && !tls_wrapper_feeds_markers && watching_calls_.load(std::memory_order_acquire)) {
    // A call the marker path needs that no wrapper fed: the collector
    // must stay subscribed to see such calls while waiting.
    if (Unfed(runtime, cbid) && !saw_unfed_.load(std::memory_order_relaxed)) {
      saw_unfed_.store(true, std::memory_order_relaxed);
    }
    marker = ObserveCall(/*enter=*/true, runtime, cbid, info);
    live = callbacks_live_.load(std::memory_order_acquire);  // the marker may have opened or closed a window
  }
  if (!live) {
    // A marker that just closed a window starts the next step: its records
    // must be placed after the boundary, not by their own start time
    // (taken before this callback).
    if (marker && registry_) registry_->OnEnter(info->correlationId, NowNs(), /*expects_record=*/false);
    return;
  }
  // PROF_RANGE's step edges (config_ is the session's: no range, no call).
  if (outermost && config_.range_kind != RangeKind::kNone) hooks::NoteCall();
  if (runtime || tls_correlation_id == 0) tls_correlation_id = info->correlationId;
  if (runtime && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020) api_.ActivityFlushAll(0);
  uint8_t traits = CallTraits(runtime, cbid);
  bool nested = !runtime && t.runtime_depth > 0;
  bool expects = !nested && (traits & kTraitExpectsRecord) != 0 &&
                 !((traits & kTraitCountsBytes) != 0 && MovesZeroBytes(runtime, cbid, info->functionParams));
  if (expects) t.expecting_correlation = info->correlationId;
  // Inside an NCCL call (collectors/nccl): its kernel launches, in order.
  if (expects && tls_launch_sink != nullptr && tls_launch_sink->count < LaunchSink::kMax) {
    tls_launch_sink->ids[tls_launch_sink->count++] = info->correlationId;
  }
  // Its own RUNTIME/DRIVER record comes when it returns (unless CUPTI was
  // told to leave it out: a wrapper records this call).
  // The wrapper's start when it timed this call (same instant as the host
  // event), else 0.
  uint64_t call_start_ns = tls_call_start_ns;
  bool expects_api = (traits & kTraitExpectsApiRecord) != 0;
  if (runtime && expects_api) {
    // Known on the call's side (a timing wrapper's or not): nothing to note.
    // An id past the table counts as known and never left out.
    uint8_t side = outermost && call_start_ns != 0 ? kRtFed : kRtUnfed;
    uint8_t bits = cbid < kMaxWatchedCbid ? rt_api_[cbid].load(std::memory_order_acquire) : side;
    if ((bits & side) == 0) bits = NoteRuntimeSide(cbid, side == kRtFed, bits);
    expects_api = (bits & kRtOff) == 0;
  }
  uint64_t enter_ns = call_start_ns != 0 ? call_start_ns : NowNs();
  registry_->OnEnter(info->correlationId, enter_ns, expects, nested ? t.runtime_correlation : 0, expects_api);
}

void CuptiCollector::OnApiExit(CallbackThread& t, bool runtime, CUpti_CallbackId cbid,
                               const CUpti_CallbackData* info) {
  bool live = callbacks_live_.load(std::memory_order_acquire);
  if (runtime && t.runtime_depth > 0 && --t.runtime_depth == 0) t.runtime_correlation = 0;
  if (!runtime && t.driver_depth > 0) --t.driver_depth;
  bool outermost = t.runtime_depth == 0 && t.driver_depth == 0;
  if (info->correlationId == t.expecting_correlation) t.expecting_correlation = 0;
  if (live && info->functionReturnValue != nullptr) {
    // cudaError_t and CUresult are both int-sized enums; 0 is success.
    bool ok = *static_cast<const int*>(info->functionReturnValue) == 0;
    bool api_record_comes = true;
    if (runtime && cbid < kMaxWatchedCbid && (config_.activities & kActRuntime) != 0) {
      // Inline for an id never left out (no wrapper records it) and for an
      // outermost call a wrapper timed.
      uint8_t bits = rt_api_[cbid].load(std::memory_order_acquire);
      if ((bits & kRtFed) != 0) {
        api_record_comes = t.runtime_depth == 0 && tls_call_start_ns != 0 ? (bits & kRtOff) == 0
                                                                          : BuildIfLeftOut(cbid, bits, info);
      }
    }
    registry_->OnExit(info->correlationId, ok, api_record_comes);
  }
  if (outermost && !tls_wrapper_feeds_markers && watching_calls_.load(std::memory_order_acquire)) {
    ObserveCall(/*enter=*/false, runtime, cbid, info);
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) MaybeFinalizeFromApiExit();
  if (quiet_pending_.load(std::memory_order_relaxed)) MaybeGoQuietFromApiExit();
}

uint8_t CuptiCollector::NoteRuntimeSide(CUpti_CallbackId cbid, bool fed, uint8_t bits) {
  std::atomic<uint8_t>& slot = rt_api_[cbid];
  if (fed) {
    // A recording wrapper timed it: its host event, with this correlation
    // id, is what the trace shows of the call.
    bits = slot.fetch_or(kRtFed, std::memory_order_relaxed);
    rt_select_dirty_.store(true, std::memory_order_relaxed);
  } else if ((LoadHotBits() & kHotRecording) != 0) {
    // Recorded by no wrapper although one would have: its record is shown.
    bits = slot.fetch_or(kRtUnfed, std::memory_order_acq_rel);
    rt_select_dirty_.store(true, std::memory_order_relaxed);
  }
  return bits;
}

bool CuptiCollector::BuildIfLeftOut(CUpti_CallbackId cbid, uint8_t bits, const CUpti_CallbackData* info) {
  LaunchRegistry::ApiState state;
  if (!registry_->LookUpApi(info->correlationId, &state)) return true;
  // On when it entered and still on: CUPTI writes its record.
  if ((bits & kRtOff) == 0 && state.expects_api_record) return true;
  // Left out when it entered or now, and no wrapper shows it: the record
  // CUPTI would have written, from the callbacks (CUPTI's own, if it comes
  // anyway, is dropped when decoded).
  CUpti_ActivityAPI r;
  std::memset(&r, 0, sizeof(r));
  r.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  r.cbid = cbid;
  r.start = state.enter_ns;
  r.end = NowNs();
  r.processId = static_cast<uint32_t>(getpid());
  r.threadId = ThisThreadId();
  r.correlationId = info->correlationId;
  r.returnValue = *static_cast<const uint32_t*>(info->functionReturnValue);
  std::lock_guard<std::mutex> lock(synth_mutex_);
  synth_.push_back(r);
  return false;
}

bool CuptiCollector::ObserveCall(bool enter, bool runtime, CUpti_CallbackId cbid, const CUpti_CallbackData* info) {
  ApiDomain domain = runtime ? ApiDomain::kRuntime : ApiDomain::kDriver;
  const char* name = CallbackName(domain, cbid);
  ObservedEvent event;
  event.site = enter ? MarkerSite::kCallEnter : MarkerSite::kCallReturn;
  event.feed = MarkerFeed::kCupti;
  event.kind = KindOf(ClassifyCallback(domain, cbid), name);
  event.api = name != nullptr ? name : (info->functionName != nullptr ? info->functionName : "");
  if (marker_names_ && enter && event.kind == ApiKind::kLaunch && info->symbolName != nullptr) {
    event.name_id = Strings().Intern(info->symbolName);
  }
  if (!enter && info->functionReturnValue != nullptr) event.result_ok = *static_cast<const int*>(info->functionReturnValue) == 0;
  return hooks::Observe(event);
}

void CuptiCollector::MaybeFinalizeFromApiExit() {
  if (NowNs() < finalize_after_ns_.load(std::memory_order_acquire)) return;
  // try_lock: an application thread must never wait here, and the writer
  // may hold the lock while CUPTI waits for this very callback to return.
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || state_.load(std::memory_order_acquire) != CollectorState::kFinishing) return;
  // The only place cuptiFinalize is safe: an API-exit callback.
  DetachLocked(/*finalize=*/true);
  Log().debug("CUPTI detached: schedule finished, nothing stays enabled");
}

void CuptiCollector::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // No locks but the pool's leaf mutex: CUPTI may ask from inside a flush
  // that holds control_mutex_.
  *max_records = 0;
  if (!pool_) return;
  *buffer = pool_->Acquire();
  *size = *buffer != nullptr ? pool_->buffer_bytes() : 0;
}

void CuptiCollector::OnBufferCompleted(uint8_t* buffer, size_t, size_t valid_size) {
  // Hand over only: decoding happens on the writer thread (CollectWindow).
  if (buffer == nullptr) return;
  std::lock_guard<std::mutex> lock(completed_mutex_);
  completed_.push_back(Completed{buffer, valid_size});
}

// ---- decoding and windows (writer thread) ----

void CuptiCollector::DrainCompletedLocked() {
  std::vector<Completed> batch;
  {
    std::lock_guard<std::mutex> lock(completed_mutex_);
    batch.swap(completed_);
  }
  DecodeContext context{&names_, &clock_, &layouts_};
  auto hold = [&](const DeviceRecord& record) {
    // libprof's own calls (the writer's version and device queries) are
    // not the application's.
    if (IsApiRecord(record) && IsLibprofThread(record.thread_id)) return;
    // libprof's own calls on application threads (OwnCudaCall).
    if (record.correlation_id != 0 && registry_->IsOwn(record.correlation_id)) return;
    if (record.correlation_id != 0 && IsDeviceWork(record)) registry_->MarkDelivered(record.correlation_id);
    if (record.correlation_id != 0 && IsApiRecord(record)) registry_->MarkApiDelivered(record.correlation_id);
    uint64_t launch_ns = record.start_ns;
    if (record.correlation_id != 0 && !registry_->EnterNs(record.correlation_id, &launch_ns) &&
        IsDeviceWork(record) && registry_->overflowed() == 0) {
      // Device work of a call the registry never saw: it entered while no
      // window was recording (a wait step; its device work was enqueued
      // after recording resumed), or its window was sealed already. No
      // window holds that call, so none holds its record.
      launch_ns = 0;
    }
    if (pending_.slots() >= max_pending_) pending_.Compact();
    if (pending_.slots() >= max_pending_) {
      ++dropped_by_launch_[launch_ns >> kDropBucketShift];
      return;
    }
    // Reserved whole (address space only: pages count once written), so
    // growth never holds an old and a new copy at once.
    pending_.Reserve(max_pending_);
    pending_.Append(record, launch_ns);
  };
  // Records built from callbacks (BuildIfLeftOut) first: CUPTI's own of the
  // same call, written after its exit callback, is then dropped below.
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
    hold(record);
  }
  for (const Completed& done : batch) {
    bool scratch = pool_->IsScratch(done.buffer);
    CUpti_Activity* activity = nullptr;
    while (done.valid_size > 0 &&
           api_.ActivityGetNextRecord(done.buffer, done.valid_size, &activity) == CUPTI_SUCCESS) {
      if (scratch) {
        ++own_dropped_;
        continue;
      }
      DeviceRecord record;
      switch (DecodeActivity(*activity, context, &record)) {
        case DecodeStatus::kRecord:
          break;
        case DecodeStatus::kFiltered:
          continue;
        case DecodeStatus::kNoTimestamp:
          ++untimed_;
          continue;
        case DecodeStatus::kUnknownKind:
          ++unknown_kinds_;
          continue;
      }
      if (!synth_ids_.empty() && IsApiRecord(record)) {
        auto built_id = std::find(synth_ids_.begin(), synth_ids_.end(), record.correlation_id);
        if (built_id != synth_ids_.end()) {
          synth_ids_.erase(built_id);  // held already, built from the callbacks
          continue;
        }
      }
      hold(record);
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
}

void CuptiCollector::CollectWindowImpl(uint64_t start_ns, uint64_t end_ns, uint64_t deadline_ns, Window* out) {
  out->meta.cupti_api_version = cupti_version_;
  if (!loaded_ || state_.load(std::memory_order_acquire) == CollectorState::kOff) {
    out->meta.cupti_mode =
        loaded_ || state() == CollectorState::kOff ? Mode() : "interception-only (CUPTI was not attached)";
    out->meta.has_gpu_timings = false;
    return;
  }
  uint64_t outstanding = 0;
  auto poll = std::chrono::milliseconds(1);
  bool stopped = false;
  uint64_t returned_ns = 0;  // when every call of the window had returned
  // Every call returned and its device records are in, but some API records
  // are not: they may sit in a buffer a plain flush does not deliver (one
  // holding records of work still running), so the next flushes are forced.
  // Without this a call's record could miss its window's grace and then be
  // no window's (a loaded run of many threads lost one now and then).
  bool force_flush = false;
  for (;;) {
    LaunchRegistry::Pending pending;
    {
      std::lock_guard<std::mutex> control(control_mutex_);
      FlushLocked(/*forced=*/force_flush);
    }
    {
      std::lock_guard<std::mutex> decode(decode_mutex_);
      DrainCompletedLocked();
      outstanding = registry_->Outstanding(start_ns, end_ns, &pending);
    }
    bool timed_out = NowNs() >= deadline_ns;
    // Every call of the window returned, so all its device work is enqueued:
    // recording may stop (if the window's end paused it). Records of what is
    // enqueued keep coming.
    if (!stopped && (pending.in_progress == 0 || timed_out)) {
      std::lock_guard<std::mutex> control(control_mutex_);
      stopped = StopIfPausedLocked(/*collecting=*/true);
      if (stopped) continue;  // flush and look again at once
    }
    // Done once the device records and the calls' own API records (written
    // as each call returns) are in. API records CUPTI dropped never come: once
    // every call returned, they get a short grace, not the whole deadline.
    if (pending.in_progress == 0 && returned_ns == 0) returned_ns = NowNs();
    bool api_done = pending.api_records == 0 || (returned_ns != 0 && NowNs() - returned_ns > kApiRecordGraceNs);
    if ((outstanding == 0 && pending.in_progress == 0 && api_done) || timed_out) break;
    force_flush = outstanding == 0 && pending.in_progress == 0 && pending.api_records > 0;
    // Detached (the process is exiting): the detach's forced flush was the
    // last delivery, just decoded; waiting longer would only cost the window
    // the exit path's bounded wait for the writer.
    if (state_.load(std::memory_order_acquire) == CollectorState::kDetached) break;
    // Records still on their way (GPU busy, CUPTI's worker): poll, bounded,
    // backing off to 16 ms (each poll flushes and scans the window's calls).
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(16));
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) {
    // The last window: force out what CUPTI still holds (half-filled
    // buffers), since nothing more will come after the detach.
    {
      std::lock_guard<std::mutex> control(control_mutex_);
      FlushLocked(/*forced=*/true);
    }
    std::lock_guard<std::mutex> decode(decode_mutex_);
    DrainCompletedLocked();
    outstanding = registry_->Outstanding(start_ns, end_ns);
  }

  std::lock_guard<std::mutex> decode(decode_mutex_);
  std::vector<DeviceRecord> window = pending_.Take(start_ns, end_ns);
  WindowStrings strings(&out->strings);
  for (DeviceRecord& r : window) r.name_id = strings.Map(names_, r.name_id);
  SortByStart(&window);
  if (out->device_records.empty()) {
    out->device_records = std::move(window);
  } else {
    out->device_records.insert(out->device_records.end(), window.begin(), window.end());
    SortByStart(&out->device_records);
  }
  registry_->ForgetBefore(end_ns);
  // Built records of sealed windows: CUPTI's own of them, if any came late,
  // belong to no window now.
  if (!synth_ids_.empty()) {
    std::erase_if(synth_ids_, [this](uint32_t id) {
      uint64_t enter_ns = 0;
      return !registry_->EnterNs(id, &enter_ns);
    });
  }

  LossCounts& losses = out->meta.losses;
  losses.device_records_missing += outstanding;
  losses.device_records_dropped += own_dropped_ + untimed_;
  // Budget drops of calls launched in this window; later windows' stay for
  // them, earlier ones (warmup, between windows) would have been discarded
  // anyway and are forgotten.
  for (auto it = dropped_by_launch_.begin();
       it != dropped_by_launch_.end() && (it->first << kDropBucketShift) < end_ns;
       it = dropped_by_launch_.erase(it)) {
    if (it->first >= (start_ns >> kDropBucketShift)) losses.device_records_dropped += it->second;
  }
  uint64_t dropped_total = cupti_dropped_.load(std::memory_order_relaxed);
  uint64_t warmup = warmup_dropped_.exchange(0, std::memory_order_relaxed);
  uint64_t window_dropped = dropped_total - dropped_reported_;
  window_dropped = window_dropped > warmup ? window_dropped - warmup : 0;
  dropped_reported_ = dropped_total;
  losses.cupti_records_dropped += window_dropped;
  losses.unknown_activity_kinds += unknown_kinds_;
  own_dropped_ = untimed_ = unknown_kinds_ = 0;
  out->meta.cupti_mode = Mode();
  out->meta.has_gpu_timings = true;

  // The last window is in: let the next API exit release CUPTI.
  windows_collected_.fetch_add(1, std::memory_order_acq_rel);
  {
    // A pause that came after this window's calls were done (see PauseImpl).
    std::lock_guard<std::mutex> control(control_mutex_);
    StopIfPausedLocked(/*collecting=*/false);
    // Windows back to back (no Attach between): what this one taught.
    ApplyRuntimeSelectionLocked();
  }
  if (state_.load(std::memory_order_acquire) == CollectorState::kFinishing) {
    finalize_after_ns_.store(0, std::memory_order_release);
  }
}

}  // namespace prof::cupti

namespace prof {

std::unique_ptr<DeviceCollector> MakeCuptiCollector() {
  return std::make_unique<cupti::CuptiCollector>([](const Config& config, cupti::CuptiApi* api, std::string* cause) {
    return cupti::LoadCupti(cupti::ProcessSearch(config.cupti_lib), api, cause);
  });
}

}  // namespace prof
