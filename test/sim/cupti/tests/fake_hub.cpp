// See fake_hub.h. Implements the hub's C interface with test controls.
#include "fake_hub.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>

namespace {

constexpr uint64_t kStartNs = 1000000000;  // the clock never reads 0

std::atomic<uint64_t> g_now{kStartNs};
std::atomic<uint32_t> g_next_correlation{1};
std::atomic<SimApiHook> g_api_hook{nullptr};
std::atomic<SimOpHook> g_op_hook{nullptr};
std::atomic<SimResourceHook> g_resource_hook{nullptr};
std::atomic<SimGraphHook> g_graph_hook{nullptr};
std::mutex g_mu;
uint64_t (*g_source)(void) = nullptr;
int64_t g_offset_ns = 0;
// Never destroyed: libcupti writes its state line from a destructor at exit.
auto& g_faults = *new std::map<std::string, std::string>();
auto& g_truth = *new std::vector<std::string>();
int g_context_storage;

}  // namespace

extern "C" {

void simhub_set_api_hook(SimApiHook hook) { g_api_hook.store(hook); }
void simhub_set_op_hook(SimOpHook hook) { g_op_hook.store(hook); }
void simhub_set_resource_hook(SimResourceHook hook) { g_resource_hook.store(hook); }
void simhub_set_graph_hook(SimGraphHook hook) { g_graph_hook.store(hook); }

void simhub_api_enter(SimApiSite* site) {
  site->correlation_id = g_next_correlation.fetch_add(1);
  site->thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
  site->process_id = static_cast<uint32_t>(getpid());
  site->context = &g_context_storage;
  site->context_uid = 1;
  site->start_ns = g_now.load();
  site->end_ns = 0;
  if (SimApiHook hook = g_api_hook.load()) hook(site, 0);
}

void simhub_api_exit(SimApiSite* site) {
  site->end_ns = g_now.load();
  if (SimApiHook hook = g_api_hook.load()) hook(site, 1);
}

uint64_t simhub_now_ns(void) { return g_now.load(); }

void simhub_set_timestamp_source(uint64_t (*source)(void)) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_source = source;
  g_offset_ns = source ? static_cast<int64_t>(source()) - static_cast<int64_t>(g_now.load()) : 0;
}

uint64_t simhub_to_reported_ns(uint64_t sim_ns) {
  std::lock_guard<std::mutex> lock(g_mu);
  return static_cast<uint64_t>(static_cast<int64_t>(sim_ns) + g_offset_ns);
}

void simhub_truth_line(const char* json_object) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_truth.emplace_back(json_object);
}

// The fake hub has no driver objects.
int simhub_stream_id(void*, int, uint32_t*) { return 0; }
int simhub_graph_id(void*, uint32_t*) { return 0; }
int simhub_graph_exec_id(void*, uint32_t*) { return 0; }
int simhub_graph_node_id(void*, uint64_t*) { return 0; }

const char* simhub_fault(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_faults.find(name);
  return it == g_faults.end() ? nullptr : it->second.c_str();
}

}  // extern "C"

namespace fakehub {

void Reset() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_now.store(kStartNs);
  g_faults.clear();
  g_truth.clear();
  g_source = nullptr;
  g_offset_ns = 0;
}

uint64_t Now() { return g_now.load(); }
void Advance(uint64_t ns) { g_now.fetch_add(ns); }

void SetFault(const std::string& name, const char* value) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (value == nullptr) {
    g_faults.erase(name);
  } else {
    g_faults[name] = value;
  }
}

void BeginCall(SimApiSite* site, const Call& call, int* result) {
  site->domain = call.domain;
  site->cbid = call.cbid;
  site->function_name = call.name;
  site->symbol_name = call.symbol;
  site->params = call.params;
  site->return_value = result;
  simhub_api_enter(site);
}

void EndCall(SimApiSite* site, const Call& call) {
  g_now.fetch_add(call.duration_ns);
  *static_cast<int*>(site->return_value) = call.result;
  simhub_api_exit(site);
}

uint32_t MakeCall(const Call& call) {
  return MakeCall(call, [](uint32_t) {});
}

SimOp Op(int kind, uint32_t correlation_id, uint32_t stream, uint64_t start_ns, uint64_t end_ns) {
  SimOp op{};
  op.kind = kind;
  op.correlation_id = correlation_id;
  op.context_id = 1;
  op.stream_id = stream;
  op.launch_ns = g_now.load();
  op.start_ns = start_ns;
  op.end_ns = end_ns;
  return op;
}

SimOp Kernel(uint32_t correlation_id, uint32_t stream, uint64_t start_ns, uint64_t end_ns, const char* name) {
  SimOp op = Op(SIM_OP_KERNEL, correlation_id, stream, start_ns, end_ns);
  op.name = name;
  op.grid[0] = op.grid[1] = op.grid[2] = 1;
  op.block[0] = 128;
  op.block[1] = op.block[2] = 1;
  return op;
}

void Enqueue(const SimOp& op) {
  if (SimOpHook hook = g_op_hook.load()) hook(&op);
}

void ContextEvent(bool destroy, void* context, uint32_t uid) {
  if (SimResourceHook hook = g_resource_hook.load()) hook(destroy ? 1 : 0, context, uid, 0);
}

void GraphEvent(const SimGraphEvent& event) {
  if (SimGraphHook hook = g_graph_hook.load()) hook(&event);
}

void* Context() { return &g_context_storage; }

std::vector<std::string> TruthLines() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_truth;
}

}  // namespace fakehub
