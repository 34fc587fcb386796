// The hub's hooks: API enter/exit -> callbacks and API records, enqueued
// ops -> activity records, context create/destroy -> resource callbacks.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "internal.h"
#include "record_layouts.h"

namespace simcupti {
namespace {

// One API call in progress on this thread. correlation_data is the
// storage CUpti_CallbackData::correlationData points at, shared by the
// call's enter and exit callbacks; a deque keeps it in place while nested
// calls (the runtime calling the driver) push frames of their own.
struct Frame {
  uint32_t correlation_id;
  int domain;
  uint64_t epoch;      // Epoch() at enter: a finalize in between cancels the record
  ClientMask record;   // the clients that had RUNTIME/DRIVER activity on at enter
  std::array<uint64_t, kMaxClients> correlation_data;  // one per subscriber slot
};
// Each thread's open API calls. Never destroyed on purpose: glibc destroys
// the main thread's thread_local objects before atexit handlers and static
// destructors run, and CUDA calls made from those (__cudaUnregisterFatBinary)
// still reach OnApi; a destroyed deque there corrupts the heap.
std::deque<Frame>& ThreadFrames() {
  thread_local std::deque<Frame>* frames = new std::deque<Frame>();
  return *frames;
}

struct ContextInfo {
  uint32_t uid;
  uint32_t device_id;
};
std::mutex g_contexts_mu;
std::unordered_map<CUcontext, ContextInfo>& Contexts() {
  static auto* contexts = new std::unordered_map<CUcontext, ContextInfo>();
  return *contexts;
}

void RememberContext(CUcontext context, uint32_t uid, uint32_t device_id) {
  if (context == nullptr) return;
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  Contexts()[context] = {uid, device_id};
}

void Callback(const SimApiSite& site, CUpti_ApiCallbackSite where, uint64_t* correlation_data) {
  // correlation_data: kMaxClients entries, one per subscriber slot.
  const auto domain = static_cast<CUpti_CallbackDomain>(site.domain);
  if (!CallbackEnabled(domain, site.cbid)) return;
  CUpti_CallbackData data{};
  data.callbackSite = where;
  data.functionName = site.function_name;
  data.functionParams = site.params;
  data.functionReturnValue = site.return_value;  // meaningful at exit only, as documented
  data.symbolName = site.symbol_name;
  data.context = static_cast<CUcontext>(site.context);
  data.contextUid = site.context_uid;
  data.correlationId = site.correlation_id;
  Dispatch(domain, site.cbid, &data, correlation_data);
}

void OnApi(const SimApiSite* site, int is_exit) {
  if (site == nullptr) return;
  // Calls this personality's CUPTI has no id for are invisible to it.
  if (!CbidKnownToRelease(site->domain, site->cbid)) return;
  if (!is_exit) {
    thread_local CUcontext last_context = nullptr;  // learn contexts cheaply
    if (site->context != nullptr && site->context != last_context) {
      last_context = static_cast<CUcontext>(site->context);
      RememberContext(last_context, site->context_uid, 0);
    }
    SampleClientClocks();  // subscribers' own clocks (nothing while none has one)
    const ClientMask record = ApiRecordClients(site->domain, site->cbid, site->context_uid);
    auto& tls_frames = ThreadFrames();
    tls_frames.push_back({site->correlation_id, site->domain, Epoch(), record, {}});
    Callback(*site, CUPTI_API_ENTER, tls_frames.back().correlation_data.data());
    return;
  }
  // Frames pop in LIFO order; search from the top in case a call's enter
  // happened before CUPTI was initialised.
  auto& tls_frames = ThreadFrames();
  auto it = tls_frames.end();
  while (it != tls_frames.begin()) {
    --it;
    if (it->correlation_id == site->correlation_id && it->domain == site->domain) break;
  }
  if (tls_frames.empty() || it->correlation_id != site->correlation_id || it->domain != site->domain) {
    std::array<uint64_t, kMaxClients> scratch{};
    Callback(*site, CUPTI_API_EXIT, scratch.data());
    return;
  }
  Frame& frame = *it;  // references into a deque survive push/pop at the ends
  Callback(*site, CUPTI_API_EXIT, frame.correlation_data.data());
  if (frame.record != 0 && frame.epoch == Epoch()) {
    RecordExternalCorrelations(*site, frame.record);
    RecordApi(*site, frame.record);
  }
  // The callback may have made CUDA calls of its own; they are gone again,
  // so this frame is back on top unless enters and exits were unbalanced.
  for (auto top = tls_frames.end(); top != tls_frames.begin();) {
    --top;
    if (&*top == &frame) {
      tls_frames.erase(top);
      break;
    }
  }
}

void OnOp(const SimOp* op) {
  // Ops are reported when enqueued: the kind must be enabled at launch.
  if (op != nullptr) RecordOp(*op);
}

void OnResource(int is_destroy, void* context, uint32_t context_uid, uint32_t device_id) {
  auto* ctx = static_cast<CUcontext>(context);
  if (!is_destroy) RememberContext(ctx, context_uid, device_id);
  CUpti_ResourceData data{};
  data.context = ctx;
  Dispatch(CUPTI_CB_DOMAIN_RESOURCE,
           is_destroy ? CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING : CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &data);
  if (is_destroy) {
    std::lock_guard<std::mutex> lock(g_contexts_mu);
    Contexts().erase(ctx);
  }
}

// Graph node created or cloned (by instantiation), executable graph created:
// a resource callback on the calling thread, inside the API call that did it
// (a launch into a capturing stream creates a node instead of device work).
void OnGraph(const SimGraphEvent* event) {
  if (event == nullptr) return;
  CUpti_GraphData data{};
  data.graph = static_cast<CUgraph>(event->graph);
  data.node = static_cast<CUgraphNode>(event->node);
  data.nodeType = static_cast<CUgraphNodeType>(event->node_type);
  data.graphExec = static_cast<CUgraphExec>(event->graph_exec);
  data.originalNode = static_cast<CUgraphNode>(event->original_node);
  CUpti_CallbackId cbid = event->kind == SIM_GRAPH_NODE_CREATED  ? CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED
                          : event->kind == SIM_GRAPH_NODE_CLONED ? CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED
                                                                 : CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED;
  // NVIDIA's samples (cuda_graphs_trace) read the graph data through the
  // resource data's resourceDescriptor, as for every resource callback.
  CUpti_ResourceData resource{};
  resource.resourceDescriptor = &data;
  Dispatch(CUPTI_CB_DOMAIN_RESOURCE, cbid, &resource);
}

}  // namespace

void InstallHooks() {
  simhub_set_api_hook(&OnApi);
  simhub_set_op_hook(&OnOp);
  simhub_set_resource_hook(&OnResource);
  simhub_set_graph_hook(&OnGraph);
}

void RemoveHooks() {
  simhub_set_api_hook(nullptr);
  simhub_set_op_hook(nullptr);
  simhub_set_resource_hook(nullptr);
  simhub_set_graph_hook(nullptr);
}

namespace {
thread_local uint32_t tls_tid = 0;  // 0: not looked up yet
// The forking thread's cached id would be the parent's in the child.
[[maybe_unused]] const int g_reset_tid_at_fork = pthread_atfork(nullptr, nullptr, [] { tls_tid = 0; });
}  // namespace

uint32_t ThreadId() {
  if (tls_tid == 0) tls_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tls_tid;
}

uint32_t CurrentRuntimeCorrelationId() {
  auto& tls_frames = ThreadFrames();
  for (auto it = tls_frames.rbegin(); it != tls_frames.rend(); ++it) {
    if (it->domain == CUPTI_CB_DOMAIN_RUNTIME_API) return it->correlation_id;
  }
  return 0;
}

bool LookupContext(CUcontext context, uint32_t* context_uid, uint32_t* device_id) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  auto it = Contexts().find(context);
  if (it == Contexts().end()) return false;
  *context_uid = it->second.uid;
  *device_id = it->second.device_id;
  return true;
}

}  // namespace simcupti
