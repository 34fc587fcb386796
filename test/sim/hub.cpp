// The hub: hooks, correlation ids, clocks, truth log and fault switches shared
// by the simulated driver (this library), runtime and CUPTI. See hub.h.
#include "hub.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "hub_internal.h"

#define SIMHUB_EXPORT extern "C" __attribute__((visibility("default")))

namespace sim {
namespace {

std::atomic<SimApiHook> g_api_hook{nullptr};
std::atomic<SimOpHook> g_op_hook{nullptr};
std::atomic<SimResourceHook> g_resource_hook{nullptr};
std::atomic<SimGraphHook> g_graph_hook{nullptr};
// One counter for runtime and driver calls, as in CUPTI. Starts at 1: CUPTI
// uses 0 for "no correlation".
std::atomic<uint32_t> g_next_correlation{1};

std::atomic<void*> g_context{nullptr};
std::atomic<uint32_t> g_context_uid{0};
thread_local void* t_context = nullptr;  // overrides g_context on this thread
thread_local uint32_t t_context_uid = 0;

// Reported clock: the client's timestamp callback, in whatever monotonic
// unit it counts (ns, TSC ticks...). The map from sim ns to it is linear
// through the latest "knot", a (sim, client) pair sampled together, with
// the rate measured between the first sample and the latest one:
//   reported(t) = knot_client + (t - knot_sim) * rate
// Knots are taken at API entry, spaced by what the rate's baseline allows
// (the gap never exceeds the time since the first sample, nor 10 ms), so the
// error stays near the sampling jitter whatever the unit.
std::atomic<uint64_t (*)(void)> g_ts_source{nullptr};
struct Knot {
  int64_t sim_ns;
  int64_t client;
  double rate;  // client units per sim ns
};
std::atomic<uint32_t> g_knot_seq{0};  // seqlock: odd while a knot is written
std::atomic<int64_t> g_knot_sim{0};
std::atomic<int64_t> g_knot_client{0};
std::atomic<double> g_knot_rate{1.0};
int64_t g_anchor_sim = 0;     // first sample (under g_knot_mutex)
int64_t g_anchor_client = 0;
std::mutex g_knot_mutex;      // one writer at a time
constexpr int64_t kMaxKnotGapNs = 10000000;
// Conversions made for one event (an op's record and its truth line, an API
// record and its truth line) use one knot, even if another thread moves it.
thread_local int t_pin_depth = 0;
thread_local Knot t_pinned{};

// Nesting of API calls on this thread; the outermost call owns device work.
thread_local int t_depth = 0;
thread_local uint32_t t_outer_correlation = 0;
thread_local const char* t_outer_name = "";

std::mutex g_truth_mutex;  // serialises truth-log writes (one write per line)
int g_truth_fd = -2;       // -2: not opened yet, -1: no SIM_TRUTH_FILE

// A fork while another thread writes must not leave the child's lock held.
void LockTruth() { g_truth_mutex.lock(); }
void UnlockTruth() { g_truth_mutex.unlock(); }
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(&LockTruth, &UnlockTruth, &UnlockTruth);

// Whether SIM_TRUTH_FILE is set, decided once: without it no line is even
// formatted, so the sim's own overhead stays out of benchmarks.
bool TruthEnabled() {
  static const bool enabled = [] {
    const char* path = getenv("SIM_TRUTH_FILE");
    return path && *path;
  }();
  return enabled;
}

void WriteTruth(const std::string& line) {
  if (!TruthEnabled()) return;
  std::lock_guard<std::mutex> lock(g_truth_mutex);
  if (g_truth_fd == -2) {
    g_truth_fd = open(getenv("SIM_TRUTH_FILE"), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  }
  if (g_truth_fd < 0) return;
  std::string with_newline = line + "\n";
  // O_APPEND + one write per line: lines of concurrent processes (fork) never interleave.
  ssize_t ignored = write(g_truth_fd, with_newline.data(), with_newline.size());
  (void)ignored;
}

const char* OpKindName(int kind) {
  switch (kind) {
    case SIM_OP_KERNEL: return "kernel";
    case SIM_OP_MEMCPY: return "memcpy";
    case SIM_OP_MEMSET: return "memset";
    case SIM_OP_SYNC: return "sync";
    case SIM_OP_MEM_ALLOC: return "mem_alloc";
    case SIM_OP_MEM_FREE: return "mem_free";
  }
  return "unknown";
}

std::string U64(uint64_t v) { return std::to_string(v); }

// One (sim, client) sample: the client clock read between two sim reads,
// the tightest of three tries, dated at the middle.
void Sample(uint64_t (*source)(void), int64_t* sim_ns, int64_t* client) {
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const auto before = static_cast<int64_t>(simhub_now_ns());
    const auto value = static_cast<int64_t>(source());
    const auto after = static_cast<int64_t>(simhub_now_ns());
    if (after - before < best_width) {
      best_width = after - before;
      *sim_ns = before + (after - before) / 2;
      *client = value;
    }
  }
}

Knot LoadKnot() {
  if (t_pin_depth > 0) return t_pinned;
  for (;;) {
    const uint32_t seq = g_knot_seq.load(std::memory_order_acquire);
    if (seq & 1) continue;
    Knot k{g_knot_sim.load(std::memory_order_relaxed), g_knot_client.load(std::memory_order_relaxed),
           g_knot_rate.load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_knot_seq.load(std::memory_order_relaxed) == seq) return k;
  }
}

void StoreKnot(const Knot& k) {
  g_knot_seq.fetch_add(1, std::memory_order_acq_rel);
  g_knot_sim.store(k.sim_ns, std::memory_order_relaxed);
  g_knot_client.store(k.client, std::memory_order_relaxed);
  g_knot_rate.store(k.rate, std::memory_order_relaxed);
  g_knot_seq.fetch_add(1, std::memory_order_release);
}

// Takes a new knot when the latest is old enough (called at API entry).
void MaybeRefreshKnot() {
  uint64_t (*source)(void) = g_ts_source.load(std::memory_order_acquire);
  if (!source) return;
  const Knot k = LoadKnot();
  const auto now = static_cast<int64_t>(simhub_now_ns());
  std::unique_lock<std::mutex> lock(g_knot_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const int64_t gap = std::min<int64_t>(kMaxKnotGapNs, std::max<int64_t>(k.sim_ns - g_anchor_sim, 1));
  if (now - k.sim_ns < gap || g_ts_source.load() != source) return;
  Knot next{};
  Sample(source, &next.sim_ns, &next.client);
  if (next.sim_ns <= g_anchor_sim) return;
  next.rate = static_cast<double>(next.client - g_anchor_client) / static_cast<double>(next.sim_ns - g_anchor_sim);
  StoreKnot(next);
}

void PinKnot() {
  if (t_pin_depth == 0) t_pinned = LoadKnot();
  ++t_pin_depth;
}
void UnpinKnot() { --t_pin_depth; }

}  // namespace

uint32_t OuterCorrelationId() { return t_outer_correlation; }
const char* OuterFunctionName() { return t_outer_name; }

void SetCurrentContext(void* context, uint32_t context_uid) {
  g_context.store(context);
  g_context_uid.store(context_uid);
}

void SetThreadApiContext(void* context, uint32_t context_uid) {
  t_context = context;
  t_context_uid = context_uid;
}

void FireResourceHook(int is_destroy, void* context, uint32_t context_uid, uint32_t device_id) {
  if (SimResourceHook hook = g_resource_hook.load()) hook(is_destroy, context, context_uid, device_id);
}

uint32_t ThreadId() {
  thread_local uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return tid;
}

std::string JsonString(const char* text) {
  std::string out = "\"";
  for (const char* p = text ? text : ""; *p; ++p) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void EmitOpPinned(const SimOp& op, const char* api);

void FireGraphHook(const SimGraphEvent& event) {
  if (SimGraphHook hook = g_graph_hook.load()) hook(&event);
  if (!TruthEnabled()) return;
  std::string line = event.kind == SIM_GRAPH_NODE_CREATED  ? "{\"type\":\"graph_node\""
                     : event.kind == SIM_GRAPH_NODE_CLONED ? "{\"type\":\"graph_node_clone\""
                                                            : "{\"type\":\"graph_exec\"";
  line += ",\"pid\":" + std::to_string(getpid());
  line += ",\"correlation\":" + U64(OuterCorrelationId());
  line += ",\"api\":" + JsonString(OuterFunctionName());
  line += ",\"graph_id\":" + U64(event.graph_id) + ",\"node_id\":" + U64(event.node_id);
  if (event.kind == SIM_GRAPH_NODE_CLONED) line += ",\"original_node_id\":" + U64(event.original_node_id);
  line += "}";
  WriteTruth(line);
}

void EmitOp(const SimOp& op) { EmitOpAs(op, OuterFunctionName()); }

void EmitOpAs(const SimOp& op, const char* api) {
  PinKnot();
  EmitOpPinned(op, api);
  UnpinKnot();
}

void EmitOpPinned(const SimOp& op, const char* api) {
  if (SimOpHook hook = g_op_hook.load()) hook(&op);
  if (!TruthEnabled()) return;
  std::string line = "{\"type\":\"" + std::string(OpKindName(op.kind)) + "\"";
  line += ",\"pid\":" + std::to_string(getpid());
  line += ",\"correlation\":" + U64(op.correlation_id);
  line += ",\"api\":" + JsonString(api);
  line += ",\"device\":" + U64(op.device_id) + ",\"context\":" + U64(op.context_id);
  line += ",\"stream\":" + U64(op.stream_id);
  line += ",\"launch_ns\":" + U64(op.launch_ns) + ",\"start_ns\":" + U64(op.start_ns) +
          ",\"end_ns\":" + U64(op.end_ns);
  line += ",\"launch_rep_ns\":" + U64(simhub_to_reported_ns(op.launch_ns)) +
          ",\"start_rep_ns\":" + U64(simhub_to_reported_ns(op.start_ns)) +
          ",\"end_rep_ns\":" + U64(simhub_to_reported_ns(op.end_ns));
  line += ",\"name\":" + JsonString(op.name);
  line += ",\"bytes\":" + U64(op.bytes) + ",\"address\":" + U64(op.address);
  line += ",\"copy_kind\":" + std::to_string(op.copy_kind) + ",\"src_kind\":" + std::to_string(op.src_kind) +
          ",\"dst_kind\":" + std::to_string(op.dst_kind) + ",\"sync_type\":" + std::to_string(op.sync_type);
  line += ",\"event_id\":" + U64(op.event_id) + ",\"waited_until_ns\":" + U64(op.waited_until_ns);
  line += ",\"grid\":[" + std::to_string(op.grid[0]) + "," + std::to_string(op.grid[1]) + "," +
          std::to_string(op.grid[2]) + "],\"block\":[" + std::to_string(op.block[0]) + "," +
          std::to_string(op.block[1]) + "," + std::to_string(op.block[2]) + "]";
  line += ",\"dynamic_shared_bytes\":" + U64(op.dynamic_shared_bytes);
  line += ",\"graph_id\":" + U64(op.graph_id) + ",\"graph_node_id\":" + U64(op.graph_node_id);
  if (op.kind == SIM_OP_MEMCPY) {
    line += ",\"src_device\":" + U64(op.src_device_id) + ",\"dst_device\":" + U64(op.dst_device_id);
  }
  WriteTruth(line + "}");
}

// One "api" truth line, written at the call's exit.
void WriteApiLine(const SimApiSite& site) {
  const int result = site.return_value ? *static_cast<const int*>(site.return_value) : 0;
  std::string line = "{\"type\":\"api\",\"pid\":" + std::to_string(site.process_id);
  line += ",\"domain\":\"" + std::string(site.domain == 2 ? "runtime" : "driver") + "\"";
  line += ",\"name\":" + JsonString(site.function_name);
  line += ",\"cbid\":" + std::to_string(site.cbid);
  line += ",\"correlation\":" + std::to_string(site.correlation_id);
  line += ",\"outer_correlation\":" + std::to_string(t_outer_correlation);
  line += ",\"thread\":" + std::to_string(site.thread_id);
  line += ",\"start_ns\":" + U64(site.start_ns) + ",\"end_ns\":" + U64(site.end_ns);
  line += ",\"start_rep_ns\":" + U64(simhub_to_reported_ns(site.start_ns)) +
          ",\"end_rep_ns\":" + U64(simhub_to_reported_ns(site.end_ns));
  if (site.symbol_name) line += ",\"symbol\":" + JsonString(site.symbol_name);
  line += ",\"result\":" + std::to_string(result) + "}";
  WriteTruth(line);
}

}  // namespace sim

SIMHUB_EXPORT void simhub_set_api_hook(SimApiHook hook) { sim::g_api_hook.store(hook); }
SIMHUB_EXPORT void simhub_set_op_hook(SimOpHook hook) { sim::g_op_hook.store(hook); }
SIMHUB_EXPORT void simhub_set_resource_hook(SimResourceHook hook) { sim::g_resource_hook.store(hook); }
SIMHUB_EXPORT void simhub_set_graph_hook(SimGraphHook hook) { sim::g_graph_hook.store(hook); }

SIMHUB_EXPORT uint64_t simhub_now_ns(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

SIMHUB_EXPORT void simhub_set_timestamp_source(uint64_t (*source)(void)) {
  std::lock_guard<std::mutex> lock(sim::g_knot_mutex);
  sim::g_ts_source.store(nullptr);
  if (!source) return;
  // The first rate comes from two samples 50 us apart; later knots measure
  // it over ever longer baselines from the first sample.
  int64_t sim0 = 0, client0 = 0, sim1 = 0, client1 = 0;
  sim::Sample(source, &sim0, &client0);
  while (static_cast<int64_t>(simhub_now_ns()) - sim0 < 50000) {
  }
  sim::Sample(source, &sim1, &client1);
  sim::g_anchor_sim = sim0;
  sim::g_anchor_client = client0;
  const double rate = sim1 > sim0 ? static_cast<double>(client1 - client0) / static_cast<double>(sim1 - sim0) : 1.0;
  sim::StoreKnot(sim::Knot{sim1, client1, rate});
  sim::g_ts_source.store(source, std::memory_order_release);
}

SIMHUB_EXPORT uint64_t simhub_to_reported_ns(uint64_t sim_ns) {
  if (sim_ns == 0 || sim::g_ts_source.load(std::memory_order_acquire) == nullptr) return sim_ns;
  const sim::Knot k = sim::LoadKnot();
  const double delta = static_cast<double>(static_cast<int64_t>(sim_ns) - k.sim_ns) * k.rate;
  return static_cast<uint64_t>(k.client + static_cast<int64_t>(std::llround(delta)));
}

SIMHUB_EXPORT void simhub_api_enter(SimApiSite* site) {
  site->correlation_id = sim::g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  site->context = sim::t_context ? sim::t_context : sim::g_context.load();
  site->context_uid = sim::t_context ? sim::t_context_uid : sim::g_context_uid.load();
  site->thread_id = sim::ThreadId();
  site->process_id = static_cast<uint32_t>(getpid());
  site->start_ns = simhub_now_ns();
  site->end_ns = 0;
  sim::MaybeRefreshKnot();
  if (sim::t_depth++ == 0) {
    sim::t_outer_correlation = site->correlation_id;
    sim::t_outer_name = site->function_name;
  }
  if (SimApiHook hook = sim::g_api_hook.load()) hook(site, /*is_exit=*/0);
}

SIMHUB_EXPORT void simhub_api_exit(SimApiSite* site) {
  site->end_ns = simhub_now_ns();
  // The context may have been created by this very call (first runtime call).
  if (!site->context) {
    site->context = sim::g_context.load();
    site->context_uid = sim::g_context_uid.load();
  }
  sim::PinKnot();  // the API record and its truth line convert with one knot
  if (SimApiHook hook = sim::g_api_hook.load()) hook(site, /*is_exit=*/1);
  const bool outermost = --sim::t_depth == 0;
  if (sim::TruthEnabled()) sim::WriteApiLine(*site);
  sim::UnpinKnot();
  if (outermost) {
    sim::t_outer_correlation = 0;
    sim::t_outer_name = "";
  }
}

SIMHUB_EXPORT void simhub_truth_line(const char* json_object) {
  if (json_object) sim::WriteTruth(json_object);
}

SIMHUB_EXPORT const char* simhub_fault(const char* name) {
  if (!name) return nullptr;
  std::string var = std::string("SIM_") + name;
  const char* value = getenv(var.c_str());
  return (value && *value) ? value : nullptr;
}
