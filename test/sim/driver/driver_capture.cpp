// Driver: stream capture (graph.h), as CUDA documents it in cuda.h and the
// programming guide's "Creating a Graph Using Stream Capture": capture
// sequences over one or more streams joined through events, each stream's
// dependency set, capture modes and the calls they prohibit, invalidation,
// and what cuStreamEndCapture checks.
#define __CUDA_API_VERSION_INTERNAL 1
#include <algorithm>
#include <mutex>
#include <vector>

#include "../hub_internal.h"
#include "device.h"
#include "driver_call.h"
#include "graph.h"
#include "graph_internal.h"

namespace sim {
namespace {

Graphs& State() { return GraphState(); }

// Nothing is being captured and no event stands for captured work.
bool Idle() { return !State().busy.load(std::memory_order_acquire); }

// The calling thread's capture interaction mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool IsLegacy(CUstream stream) { return stream == nullptr || stream == CU_STREAM_LEGACY; }

// Captures of blocking streams (not CU_STREAM_NON_BLOCKING; the per-thread
// default stream is one) on `device`: the legacy stream would depend on them.
std::vector<CaptureSeq*> BlockingCapturesLocked(Graphs& g, int device) {
  std::vector<CaptureSeq*> found;
  for (const auto& [stream, capture] : g.capturing) {
    if (stream->non_blocking || stream->device->ordinal() != device) continue;
    if (std::find(found.begin(), found.end(), capture.seq) == found.end()) found.push_back(capture.seq);
  }
  return found;
}

void InvalidateAll(const std::vector<CaptureSeq*>& seqs) {
  for (CaptureSeq* seq : seqs) seq->invalidated = true;
}

enum class Where { kNone, kCapture, kError };

// Where work enqueued on `handle` (resolved: `stream`, on `device`) goes:
// into an active capture (*capture), nowhere special, or an error (*error):
// the legacy stream while a blocking stream of its device captures
// (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, those captures invalidated), or a
// stream of an invalidated capture.
Where ClassifyLocked(Graphs& g, CUstream handle, CUstream_st* stream, int device, StreamCapture** capture,
                     CUresult* error) {
  if (IsLegacy(handle)) {
    std::vector<CaptureSeq*> blocking = BlockingCapturesLocked(g, device);
    if (blocking.empty()) return Where::kNone;
    InvalidateAll(blocking);
    *error = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    return Where::kError;
  }
  auto it = g.capturing.find(stream);
  if (it == g.capturing.end()) return Where::kNone;
  if (it->second.seq->invalidated) {
    *error = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return Where::kError;
  }
  *capture = &it->second;
  return Where::kCapture;
}

// Adds `node` after the stream's dependency set, which becomes the node.
bool CaptureNode(CUstream handle, CUgraphNode_st node, CUresult* result) {
  if (Idle()) return false;
  Device& device = Device::Of(handle);
  CUstream_st* stream = device.Resolve(handle);
  if (!stream) return false;  // not a stream: the caller reports it
  SimGraphEvent event{};
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    StreamCapture* capture = nullptr;
    switch (ClassifyLocked(g, handle, stream, device.ordinal(), &capture, result)) {
      case Where::kNone: return false;
      case Where::kError: return true;
      case Where::kCapture: break;
    }
    node.captured = true;
    CUgraphNode_st* added = AddNodeLocked(g, capture->seq->graph, capture->deps, std::move(node), &event);
    capture->deps.assign(1, added);
  }
  FireGraphHook(event);  // inside the launching call, as CUPTI issues it
  *result = CUDA_SUCCESS;
  return true;
}

// Every node the capture made is an ancestor of (or in) the origin stream's
// dependency set: every fork was joined back.
bool JoinedLocked(const CaptureSeq& seq, const StreamCapture& origin) {
  const auto& nodes = seq.graph->nodes;
  std::vector<bool> reached(nodes.size(), false);
  std::vector<size_t> todo;
  for (const CUgraphNode_st* node : origin.deps) todo.push_back(seq.graph->index_of.at(node));
  while (!todo.empty()) {
    const size_t i = todo.back();
    todo.pop_back();
    if (reached[i]) continue;
    reached[i] = true;
    for (size_t d : nodes[i]->deps) todo.push_back(d);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->captured && !reached[i]) return false;
  }
  return true;
}

void AddDeps(std::vector<CUgraphNode_st*>* to, const std::vector<CUgraphNode_st*>& from) {
  for (CUgraphNode_st* node : from) {
    if (std::find(to->begin(), to->end(), node) == to->end()) to->push_back(node);
  }
}

CUresult BeginCapture(CUstream handle, CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Device& device = Device::Of(handle);
  if (!device.IsValid(handle)) return CUDA_ERROR_INVALID_HANDLE;
  if (IsLegacy(handle)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
  CUstream_st* stream = device.Resolve(handle);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (g.capturing.count(stream)) return CUDA_ERROR_ILLEGAL_STATE;  // already in capture mode
  auto* graph = new CUgraph_st{g.next_graph_id++, {}, {}};
  g.graphs.insert(graph);
  auto* seq = new CaptureSeq{g.next_capture_id++, graph, mode, stream, ThreadId(), device.ordinal(), false, {stream}};
  g.captures[seq->id] = seq;
  g.capturing[stream] = StreamCapture{seq, {}, {}, {}};
  g.UpdateBusyLocked();
  return CUDA_SUCCESS;
}

// The same stream checks and lock as BeginCapture and IsCapturing: each entry point validates its own.
// Documented: on the origin stream (CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
// otherwise), from the beginning thread unless begun relaxed (..._WRONG_THREAD,
// the capture goes on). Every stream of the capture leaves it; an
// invalidated capture (..._INVALIDATED) or one with an unjoined fork
// (..._UNJOINED) gives no graph.
CUresult EndCapture(CUstream handle, CUgraph* graph_out) {
  if (!graph_out) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(handle);
  if (!device.IsValid(handle)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* stream = device.Resolve(handle);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto it = g.capturing.find(stream);
  if (it == g.capturing.end()) return CUDA_ERROR_ILLEGAL_STATE;
  CaptureSeq* seq = it->second.seq;
  if (seq->origin != stream) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  if (seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED && seq->thread != ThreadId()) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  CUresult result = CUDA_SUCCESS;
  if (seq->invalidated) {
    result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else if (!JoinedLocked(*seq, it->second)) {
    result = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
  }
  for (CUstream_st* member : seq->members) g.capturing.erase(member);
  g.captures.erase(seq->id);
  g.UpdateBusyLocked();
  if (result == CUDA_SUCCESS) {
    *graph_out = seq->graph;
  } else {
    *graph_out = nullptr;
    DestroyGraphLocked(g, seq->graph);
  }
  delete seq;
  return result;
}

CUresult IsCapturing(CUstream handle, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(handle);
  if (!device.IsValid(handle)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* stream = device.Resolve(handle);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  // Documented: the legacy stream while a blocking stream captures; the capture is not invalidated.
  if (IsLegacy(handle) && !BlockingCapturesLocked(g, device.ordinal()).empty()) {
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  auto it = g.capturing.find(stream);
  if (it == g.capturing.end()) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
  } else {
    *status = it->second.seq->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  return CUDA_SUCCESS;
}

// The outputs other than the status are written only for an active capture
// (documented); the dependency and edge arrays stay valid until the next
// call on the stream. Every edge is a default one (zero edge data).
CUresult CaptureInfo(CUstream handle, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                     const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps) {
  if (!status || (edges && !deps)) return CUDA_ERROR_INVALID_VALUE;
  Device& device = Device::Of(handle);
  if (!device.IsValid(handle)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* stream = device.Resolve(handle);
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (IsLegacy(handle) && !BlockingCapturesLocked(g, device.ordinal()).empty()) {
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  }
  auto it = g.capturing.find(stream);
  if (it == g.capturing.end()) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  StreamCapture& capture = it->second;
  if (capture.seq->invalidated) {
    *status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_SUCCESS;
  }
  *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = capture.seq->id;
  if (graph) *graph = capture.seq->graph;
  capture.deps_out.assign(capture.deps.begin(), capture.deps.end());
  capture.edges_out.assign(capture.deps.size(), CUgraphEdgeData{});
  if (deps) *deps = capture.deps_out.empty() ? nullptr : capture.deps_out.data();
  if (edges) *edges = capture.edges_out.empty() ? nullptr : capture.edges_out.data();
  if (num_deps) *num_deps = capture.deps_out.size();
  return CUDA_SUCCESS;
}

}  // namespace

bool CaptureKernel(CUstream stream, const SimOp& op, uint64_t duration_ns, CUresult* result) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_KERNEL;
  node.op = op;
  node.duration_ns = duration_ns;
  return CaptureNode(stream, std::move(node), result);
}

// A copy node filled field by field: assignments, alike in shape to other structs' fills.
bool CaptureCopy(CUstream stream, const CopyRegion& src, const CopyRegion& dst, size_t width, size_t rows,
                 size_t depth, CUresult* result) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  node.src = src;
  node.dst = dst;
  node.width = width;
  node.rows = rows;
  node.depth = depth;
  return CaptureNode(stream, std::move(node), result);
}

bool CaptureMemset(CUstream stream, void* dst, size_t pitch, unsigned char value, size_t width, size_t rows,
                   CUresult* result) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_MEMSET;
  node.set_dst = dst;
  node.set_pitch = pitch;
  node.set_value = value;
  node.width = width;
  node.rows = rows;
  return CaptureNode(stream, std::move(node), result);
}

bool CaptureHostFunc(CUstream stream, CUhostFn fn, void* data, CUresult* result) {
  CUgraphNode_st node{};
  node.type = CU_GRAPH_NODE_TYPE_HOST;
  node.host_fn = fn;
  node.host_data = data;
  return CaptureNode(stream, std::move(node), result);
}

bool CaptureUnsupported(CUstream handle, CUresult* result) {
  if (Idle()) return false;
  Device& device = Device::Of(handle);
  CUstream_st* stream = device.Resolve(handle);
  if (!stream) return false;
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  StreamCapture* capture = nullptr;
  switch (ClassifyLocked(g, handle, stream, device.ordinal(), &capture, result)) {
    case Where::kNone: return false;
    case Where::kError: return true;
    case Where::kCapture: break;
  }
  capture->seq->invalidated = true;
  *result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return true;
}

bool CaptureEventRecord(CUevent event, CUstream handle, bool external, CUresult* result) {
  if (Idle()) return false;
  Device& device = Device::Of(handle);
  CUstream_st* stream = device.Resolve(handle);
  if (!stream) return false;
  SimGraphEvent created{};
  bool added = false;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    StreamCapture* capture = nullptr;
    switch (ClassifyLocked(g, handle, stream, device.ordinal(), &capture, result)) {
      case Where::kNone:  // an ordinary record from now on
        g.captured_events.erase(event);
        g.UpdateBusyLocked();
        return false;
      case Where::kError: return true;
      case Where::kCapture: break;
    }
    if (external) {
      CUgraphNode_st node{};
      node.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
      node.event = event;
      node.captured = true;
      CUgraphNode_st* record = AddNodeLocked(g, capture->seq->graph, capture->deps, std::move(node), &created);
      capture->deps.assign(1, record);
      added = true;
    }
    g.captured_events[event] = EventCapture{capture->seq->id, capture->deps};
    g.UpdateBusyLocked();
  }
  if (added) FireGraphHook(created);
  *result = CUDA_SUCCESS;
  return true;
}

bool CaptureStreamWait(CUstream handle, CUevent event, bool external, CUresult* result) {
  if (Idle()) return false;
  Device& device = Device::Of(handle);
  CUstream_st* stream = device.Resolve(handle);
  if (!stream) return false;
  const bool ever_recorded = Device::Of(event).StateOf(event).recorded;  // before taking the graph lock
  SimGraphEvent created{};
  bool added = false;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto recorded_in = g.captured_events.find(event);
    CaptureSeq* event_seq = nullptr;
    if (recorded_in != g.captured_events.end()) {
      auto active = g.captures.find(recorded_in->second.seq_id);
      if (active != g.captures.end()) event_seq = active->second;
    }
    StreamCapture* capture = nullptr;
    switch (ClassifyLocked(g, handle, stream, device.ordinal(), &capture, result)) {
      case Where::kError: return true;
      case Where::kNone:
        if (recorded_in == g.captured_events.end()) return false;  // an ordinary wait
        if (!event_seq) {
          // Last recorded inside a capture that has ended: there is no work to wait for.
          *result = CUDA_SUCCESS;
          return true;
        }
        if (event_seq->invalidated) {
          *result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
          return true;
        }
        if (IsLegacy(handle)) {  // the legacy stream cannot take part in a capture
          event_seq->invalidated = true;
          *result = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
          return true;
        }
        // Joins the capture: its next node depends on what the event stands for.
        g.capturing[stream] = StreamCapture{event_seq, recorded_in->second.deps, {}, {}};
        event_seq->members.insert(stream);
        *result = CUDA_SUCCESS;
        return true;
      case Where::kCapture: break;
    }
    CaptureSeq* seq = capture->seq;
    if (external) {
      CUgraphNode_st node{};
      node.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
      node.event = event;
      node.captured = true;
      CUgraphNode_st* wait = AddNodeLocked(g, seq->graph, capture->deps, std::move(node), &created);
      capture->deps.assign(1, wait);
      added = true;
      *result = CUDA_SUCCESS;
    } else if (event_seq == seq) {
      AddDeps(&capture->deps, recorded_in->second.deps);
      *result = CUDA_SUCCESS;
    } else if (event_seq) {
      seq->invalidated = true;  // two captures would merge
      event_seq->invalidated = true;
      *result = CUDA_ERROR_STREAM_CAPTURE_MERGE;
    } else if (ever_recorded) {
      seq->invalidated = true;  // a dependency on work outside the capture
      *result = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    } else {
      *result = CUDA_SUCCESS;  // never recorded: nothing to wait for, as outside a capture
    }
  }
  if (added) FireGraphHook(created);
  return true;
}

CUresult CaptureCheckStream(CUstream handle) {
  if (Idle()) return CUDA_SUCCESS;
  Device& device = Device::Of(handle);
  CUstream_st* stream = device.Resolve(handle);
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    if (IsLegacy(handle)) {
      std::vector<CaptureSeq*> blocking = BlockingCapturesLocked(g, device.ordinal());
      if (!blocking.empty()) {
        InvalidateAll(blocking);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
    }
    auto it = g.capturing.find(stream);
    if (it != g.capturing.end()) {
      it->second.seq->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return CaptureCheckUnsafe();
}

CUresult CaptureCheckEvent(CUevent event) {
  if (Idle()) return CUDA_SUCCESS;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    auto it = g.captured_events.find(event);
    if (it != g.captured_events.end()) {
      auto active = g.captures.find(it->second.seq_id);
      if (active != g.captures.end()) active->second->invalidated = true;
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // its last record was inside a capture
    }
  }
  return CaptureCheckUnsafe();
}

CUresult CaptureCheckDevice(int device) {
  if (Idle()) return CUDA_SUCCESS;
  {
    Graphs& g = State();
    std::lock_guard<std::mutex> lock(g.mutex);
    bool any = false;
    for (const auto& [stream, capture] : g.capturing) {
      if (stream->device->ordinal() != device) continue;
      capture.seq->invalidated = true;
      any = true;
    }
    if (any) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CaptureCheckUnsafe();
}

CUresult CaptureCheckUnsafe() {
  const CUstreamCaptureMode mode = t_capture_mode;
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED || Idle()) return CUDA_SUCCESS;
  const uint32_t me = ThreadId();
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  std::vector<CaptureSeq*> prohibiting;
  for (const auto& [id, seq] : g.captures) {
    const bool mine = seq->thread == me && seq->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    const bool others_global =
        mode == CU_STREAM_CAPTURE_MODE_GLOBAL && seq->thread != me && seq->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (mine || others_global) prohibiting.push_back(seq);
  }
  if (prohibiting.empty()) return CUDA_SUCCESS;
  InvalidateAll(prohibiting);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void CaptureForgetEvent(CUevent event) {
  if (Idle()) return;
  Graphs& g = State();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.captured_events.erase(event);
  g.UpdateBusyLocked();
}

}  // namespace sim

using sim::InitializedDriverCall;
using sim::PerThread;

SIM_DRIVER_EXPORT CUresult cuStreamBeginCapture(CUstream hStream) {
  cuStreamBeginCapture_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamBeginCapture), "cuStreamBeginCapture", &params,
                               [&] { return sim::BeginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL); });
}

SIM_DRIVER_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  cuStreamBeginCapture_ptsz_params params{hStream};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamBeginCapture_ptsz), "cuStreamBeginCapture_ptsz", &params,
                               [&] { return sim::BeginCapture(PerThread(hStream), CU_STREAM_CAPTURE_MODE_GLOBAL); });
}

// One exported wrapper per entry point (params struct, cbid, name for the callback ABI): boilerplate, not logic.
SIM_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  cuStreamBeginCapture_v2_params params{hStream, mode};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamBeginCapture_v2), "cuStreamBeginCapture_v2", &params,
                               [&] { return sim::BeginCapture(hStream, mode); });
}

SIM_DRIVER_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  cuStreamBeginCapture_v2_ptsz_params params{hStream, mode};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamBeginCapture_v2_ptsz), "cuStreamBeginCapture_v2_ptsz", &params,
                               [&] { return sim::BeginCapture(PerThread(hStream), mode); });
}

SIM_DRIVER_EXPORT CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  cuStreamEndCapture_params params{hStream, phGraph};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamEndCapture), "cuStreamEndCapture", &params,
                               [&] { return sim::EndCapture(hStream, phGraph); });
}

SIM_DRIVER_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  cuStreamEndCapture_ptsz_params params{hStream, phGraph};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamEndCapture_ptsz), "cuStreamEndCapture_ptsz", &params,
                               [&] { return sim::EndCapture(PerThread(hStream), phGraph); });
}

SIM_DRIVER_EXPORT CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  cuStreamIsCapturing_params params{hStream, captureStatus};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamIsCapturing), "cuStreamIsCapturing", &params,
                               [&] { return sim::IsCapturing(hStream, captureStatus); });
}

SIM_DRIVER_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  cuStreamIsCapturing_ptsz_params params{hStream, captureStatus};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamIsCapturing_ptsz), "cuStreamIsCapturing_ptsz", &params,
                               [&] { return sim::IsCapturing(PerThread(hStream), captureStatus); });
}

// The three ABIs of cuStreamGetCaptureInfo (cuda.h: 10.1's status and id,
// 11.3's _v2 with the graph and dependencies, 12.3's _v3 with edge data).
SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                  cuuint64_t* id_out) {
  cuStreamGetCaptureInfo_params params{hStream, captureStatus_out, id_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo), "cuStreamGetCaptureInfo", &params, [&] {
    return sim::CaptureInfo(hStream, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr);
  });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                       cuuint64_t* id_out) {
  cuStreamGetCaptureInfo_ptsz_params params{hStream, captureStatus_out, id_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_ptsz), "cuStreamGetCaptureInfo_ptsz", &params,
                               [&] {
                                 return sim::CaptureInfo(PerThread(hStream), captureStatus_out, id_out, nullptr,
                                                         nullptr, nullptr, nullptr);
                               });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v2_params params{hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                          numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v2), "cuStreamGetCaptureInfo_v2", &params, [&] {
    return sim::CaptureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                            numDependencies_out);
  });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                          cuuint64_t* id_out, CUgraph* graph_out,
                                                          const CUgraphNode** dependencies_out,
                                                          size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v2_ptsz_params params{hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                                               numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v2_ptsz), "cuStreamGetCaptureInfo_v2_ptsz",
                               &params, [&] {
                                 return sim::CaptureInfo(PerThread(hStream), captureStatus_out, id_out, graph_out,
                                                         dependencies_out, nullptr, numDependencies_out);
                               });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                     cuuint64_t* id_out, CUgraph* graph_out,
                                                     const CUgraphNode** dependencies_out,
                                                     const CUgraphEdgeData** edgeData_out,
                                                     size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v3_params params{hStream, captureStatus_out, id_out, graph_out,
                                          dependencies_out, edgeData_out, numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v3), "cuStreamGetCaptureInfo_v3", &params, [&] {
    return sim::CaptureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                            numDependencies_out);
  });
}

SIM_DRIVER_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                                          cuuint64_t* id_out, CUgraph* graph_out,
                                                          const CUgraphNode** dependencies_out,
                                                          const CUgraphEdgeData** edgeData_out,
                                                          size_t* numDependencies_out) {
  cuStreamGetCaptureInfo_v3_ptsz_params params{hStream, captureStatus_out, id_out, graph_out,
                                               dependencies_out, edgeData_out, numDependencies_out};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuStreamGetCaptureInfo_v3_ptsz), "cuStreamGetCaptureInfo_v3_ptsz",
                               &params, [&] {
                                 return sim::CaptureInfo(PerThread(hStream), captureStatus_out, id_out, graph_out,
                                                         dependencies_out, edgeData_out, numDependencies_out);
                               });
}

SIM_DRIVER_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  cuThreadExchangeStreamCaptureMode_params params{mode};
  return InitializedDriverCall(SIM_DRIVER_CBID(cuThreadExchangeStreamCaptureMode),
                               "cuThreadExchangeStreamCaptureMode", &params, [&]() -> CUresult {
                                 if (!mode || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
                                 std::swap(*mode, sim::t_capture_mode);
                                 return CUDA_SUCCESS;
                               });
}
