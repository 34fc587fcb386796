// What runs when: CUPTI initialises on the first call that needs the
// driver (installing the hub hooks), detaches on cuptiFinalize (hooks,
// subscriber, kinds, buffer callbacks and timestamp callback all gone;
// the next call initialises again), and at process exit writes one
// cupti_state truth line. Lines carry both "type" (the hub's key) and
// "op". Every attach-related call writes a truth line
// with the sim-clock time, so tests can check "attached only while needed".
#include <atomic>
#include <cstdio>
#include <mutex>

#include "buffers.h"
#include "internal.h"

namespace simcupti {
namespace {

std::mutex g_init_mu;
std::atomic<bool> g_initialized{false};
std::atomic<uint64_t> g_epoch{0};
std::atomic<bool> g_finalized{false};

std::string JsonInts(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "]";
}

// The line, once: at exit (not after _exit) or dlclose, or earlier when a
// program asks (simcupti_write_state).
void WriteState() {
  static std::atomic<bool> written{false};
  if (written.exchange(true)) return;
  uint64_t delivered = 0, dropped = 0, lost = 0, dirty = 0;
  for (int client = 0; client < kMaxClients; ++client) {
    BufferPool& pool = BufferPool::Of(client);
    delivered += pool.records_delivered();
    dropped += pool.records_dropped();
    lost += pool.records_lost_at_finalize();
    dirty += pool.dirty_buffers();
  }
  std::string line = "{\"type\":\"cupti_state\",\"op\":\"cupti_state\",\"subscribed\":" + std::to_string(Subscribed() ? 1 : 0) +
                     ",\"subscribers\":" + std::to_string(SubscriberCount()) +
                     ",\"version\":" + std::to_string(ReportedVersion()) +
                     ",\"enabled_activity_kinds\":" + JsonInts(EnabledKinds()) +
                     ",\"enabled_callback_domains\":" + JsonInts(EnabledDomains()) +
                     ",\"finalized\":" + std::to_string(g_finalized.load() ? 1 : 0) +
                     ",\"records_delivered\":" + std::to_string(delivered) +
                     ",\"records_dropped\":" + std::to_string(dropped) +
                     ",\"records_lost_at_finalize\":" + std::to_string(lost) +
                     ",\"client_zeroes_buffers\":" + std::to_string(ClientZeroesBuffers(kProcessClient) ? 1 : 0) +
                     ",\"dirty_buffers\":" + std::to_string(dirty) +
                     ",\"runtime_records_by_cbid\":" + ApiRecordCounts(CUPTI_CB_DOMAIN_RUNTIME_API) +
                     ",\"driver_records_by_cbid\":" + ApiRecordCounts(CUPTI_CB_DOMAIN_DRIVER_API) + "}";
  simhub_truth_line(line.c_str());
}

__attribute__((destructor)) void WriteStateAtExit() { WriteState(); }

}  // namespace

CUptiResult EnsureInitialized() {
  Faults faults = CurrentFaults();
  if (faults.no_driver) return CUPTI_ERROR_UNKNOWN;
  if (faults.init_fail) return CUPTI_ERROR_NOT_INITIALIZED;
  if (g_initialized.load(std::memory_order_acquire)) return CUPTI_SUCCESS;
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (!g_initialized.load()) {
    ChooseLayouts();
    InstallHooks();
    g_finalized.store(false);  // attached again after a finalize
    g_initialized.store(true, std::memory_order_release);
  }
  return CUPTI_SUCCESS;
}

uint64_t Epoch() { return g_epoch.load(std::memory_order_acquire); }

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void TruthCall(const char* call, CUptiResult result, const std::string& extra) {
  const uint64_t sim_ns = simhub_now_ns();
  std::string line = "{\"type\":\"cupti_call\",\"op\":\"cupti_call\",\"call\":\"" + std::string(call) +
                     "\",\"result\":" + std::to_string(static_cast<int>(result)) +
                     ",\"sim_ns\":" + std::to_string(sim_ns) +
                     ",\"reported_ns\":" + std::to_string(simhub_to_reported_ns(sim_ns)) + extra + "}";
  simhub_truth_line(line.c_str());
}

}  // namespace simcupti

extern "C" CUptiResult CUPTIAPI cuptiFinalize(void) {
  using namespace simcupti;
  {
    std::lock_guard<std::mutex> lock(g_init_mu);
    g_epoch.fetch_add(1, std::memory_order_acq_rel);
    if (g_initialized.load()) RemoveHooks();
    g_initialized.store(false, std::memory_order_release);
  }
  ResetSubscriber();
  ResetActivityConfig();
  for (int client = 0; client < kMaxClients; ++client) BufferPool::Of(client).Discard();
  simhub_set_timestamp_source(nullptr);
  g_finalized.store(true);
  TruthCall("cuptiFinalize", CUPTI_SUCCESS);
  return CUPTI_SUCCESS;
}

// For a program that leaves with _exit (a test workload whose runtime may
// abort at interpreter exit): the cupti_state line, written now.
extern "C" __attribute__((visibility("default"))) void simcupti_write_state(void) { simcupti::WriteState(); }
