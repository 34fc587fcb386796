// A CUPTI client run against the whole simulated stack (libcudart.so.13 ->
// libcuda.so.1 -> hub -> libcupti.so.13) by test_sim_cupti_client.py.
// It does what a profiler does and prints what it observed as JSON lines
// on stdout; the Python test compares them with the hub's truth log.
//
//   sim_cupti_client trace       callbacks + every record kind, timestamp callback
//   sim_cupti_client flush       unforced vs forced flush around a slow kernel
//   sim_cupti_client drops       records lost to declined buffers, counted
//   sim_cupti_client late        SIM_CUPTI_LATE_MS delivery
//   sim_cupti_client subscribe   subscription refusals (faults set by the test)
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// Registration entry points nvcc-generated code calls (crt/host_runtime.h).
extern "C" void** __cudaRegisterFatBinary(void* fat_cubin);
extern "C" void __cudaRegisterFatBinaryEnd(void** handle);
extern "C" void __cudaRegisterFunction(void** handle, const char* host_fun, char* device_fun, const char* device_name,
                                       int thread_limit, uint3* tid, uint3* bid, dim3* block, dim3* grid, int* wsize);

namespace {

constexpr uint64_t kClientOffsetNs = 1000000000000ull;  // the client's clock is far from the sim clock

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
// CLIENT_TICKS_PER_NS=k: the clock counts k ticks per ns (like a TSC), not ns.
uint64_t g_ticks_per_ns = 1;
uint64_t CUPTIAPI ClientClock() { return MonotonicNs() * g_ticks_per_ns + kClientOffsetNs; }
uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

std::mutex g_print_mu;
void Line(const std::string& json) {
  std::lock_guard<std::mutex> lock(g_print_mu);
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
}
std::string S(const char* text) { return std::string("\"") + (text ? text : "") + "\""; }
std::string N(uint64_t v) { return std::to_string(v); }

// ---- buffers ----

std::atomic<bool> g_decline{false};
std::atomic<int> g_requests{0};
std::atomic<int> g_records{0};
std::atomic<int> g_deliveries{0};
uint32_t g_main_tid = 0;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  ++g_requests;
  *max_records = 0;
  if (g_decline) {
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *size = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
}

void PrintRecord(const CUpti_Activity* record, const std::string& where) {
  std::string line = "{\"ev\":\"record\",\"kind\":" + N(record->kind) + where;
  // One line per record kind, with its own fields: a table as a switch.
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"cbid\":" + N(r->cbid) + ",\"start\":" + N(r->start) +
              ",\"end\":" + N(r->end) + ",\"tid\":" + N(r->threadId) + ",\"ret\":" + N(r->returnValue);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"start\":" + N(r->start) + ",\"end\":" + N(r->end) +
              ",\"stream\":" + N(r->streamId) + ",\"name\":" + S(r->name) + ",\"grid\":" + N(r->gridX) +
              ",\"block\":" + N(r->blockX);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"start\":" + N(r->start) + ",\"end\":" + N(r->end) +
              ",\"bytes\":" + N(r->bytes) + ",\"copy_kind\":" + N(r->copyKind) + ",\"stream\":" + N(r->streamId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"start\":" + N(r->start) + ",\"end\":" + N(r->end) +
              ",\"bytes\":" + N(r->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"start\":" + N(r->start) + ",\"end\":" + N(r->end) +
              ",\"sync_type\":" + N(r->type);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      auto* r = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      line += ",\"corr\":" + N(r->correlationId) + ",\"start\":" + N(r->timestamp) + ",\"op\":" +
              N(r->memoryOperationType) + ",\"bytes\":" + N(r->bytes) + ",\"address\":" + N(r->address);
      break;
    }
    default: break;
  }
  Line(line + "}");
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  ++g_deliveries;
  const std::string where = ",\"on_main\":" + std::string(Tid() == g_main_tid ? "1" : "0") +
                            ",\"at_ns\":" + N(MonotonicNs());
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    ++g_records;
    PrintRecord(record, where);
  }
  std::free(buffer);
}

// ---- callbacks ----

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    Line("{\"ev\":\"resource\",\"cbid\":" + N(cbid) + "}");
    return;
  }
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  // correlationData: stash at enter, check at exit (shared storage).
  bool data_ok = true;
  if (info->callbackSite == CUPTI_API_ENTER) {
    *info->correlationData = info->correlationId * 7ull + 1;
  } else {
    data_ok = *info->correlationData == info->correlationId * 7ull + 1;
  }
  Line("{\"ev\":\"cb\",\"domain\":" + N(domain) + ",\"cbid\":" + N(cbid) + ",\"site\":" + N(info->callbackSite) +
       ",\"name\":" + S(info->functionName) + ",\"symbol\":" + S(info->symbolName) + ",\"corr\":" +
       N(info->correlationId) + ",\"data_ok\":" + (data_ok ? "1" : "0") + "}");
}

// ---- a kernel without nvcc: register a host stub by hand ----

void KernelStub() {}
void SlowStub() {}
char g_fatbin[64];

void RegisterKernels() {
  void** handle = __cudaRegisterFatBinary(g_fatbin);
  __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&KernelStub), const_cast<char*>("_Z5scalePfi"),
                         "_Z5scalePfi", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&SlowStub), const_cast<char*>("_Z4slowPf"),
                         "_Z4slowPf", -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(handle);
}

void Check(const char* what, int result) {
  if (result != 0) Line("{\"ev\":\"error\",\"what\":" + S(what) + ",\"result\":" + N(result) + "}");
}

CUpti_SubscriberHandle Subscribe(const char* name) {
  CUpti_SubscriberHandle handle = nullptr;
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, name, nullptr, 0};
  Check("cuptiSubscribe_v2", cuptiSubscribe_v2(&handle, OnCallback, nullptr, &params));
  return handle;
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
                                     CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                     CUPTI_ACTIVITY_KIND_MEMORY2};

void EnableAll() {
  for (CUpti_ActivityKind kind : kKinds) Check("cuptiActivityEnable", cuptiActivityEnable(kind));
}
void DisableAll() {
  for (CUpti_ActivityKind kind : kKinds) Check("cuptiActivityDisable", cuptiActivityDisable(kind));
}

// The same device work in every scenario: alloc, copy in, kernel, memset, sync, free.
void Workload(cudaStream_t stream) {
  float* device = nullptr;
  std::vector<float> host(1024, 1.0f);
  Check("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&device), host.size() * sizeof(float)));
  Check("cudaMemcpyAsync", cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice,
                                           stream));
  int n = static_cast<int>(host.size());
  void* args[] = {&device, &n};
  Check("cudaLaunchKernel", cudaLaunchKernel(reinterpret_cast<const void*>(&KernelStub), dim3(4), dim3(256), args,
                                             0, stream));
  Check("cudaMemsetAsync", cudaMemsetAsync(device, 0, host.size() * sizeof(float), stream));
  Check("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  Check("cudaFree", cudaFree(device));
}

void Finish(CUpti_SubscriberHandle handle) {
  size_t dropped = 0;
  Check("cuptiActivityGetNumDroppedRecords", cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped));
  Line("{\"ev\":\"dropped\",\"count\":" + N(dropped) + ",\"requests\":" + N(g_requests) + "}");
  DisableAll();
  if (handle != nullptr) Check("cuptiUnsubscribe", cuptiUnsubscribe(handle));
  Check("cuptiFinalize", cuptiFinalize());
}

int Trace() {
  Check("cuptiActivityRegisterTimestampCallback", cuptiActivityRegisterTimestampCallback(ClientClock));
  Check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  CUpti_SubscriberHandle handle = Subscribe("sim-cupti-client");
  // A second subscriber (another profiler in the process) is refused and told who holds CUPTI.
  CUpti_SubscriberHandle second = nullptr;
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, "second", holder, sizeof(holder)};
  const CUptiResult refused = cuptiSubscribe_v2(&second, OnCallback, nullptr, &params);
  Line("{\"ev\":\"second_subscriber\",\"result\":" + N(refused) + ",\"holder\":" + S(holder) + "}");
  for (auto domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RESOURCE}) {
    Check("cuptiEnableDomain", cuptiEnableDomain(1, handle, domain));
  }
  EnableAll();
  RegisterKernels();
  cudaStream_t stream = nullptr;
  Check("cudaStreamCreate", cudaStreamCreate(&stream));
  Workload(stream);
  Check("cudaDeviceSynchronize", cudaDeviceSynchronize());
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(0));  // all work has ended: everything comes back
  Line("{\"ev\":\"flushed\",\"records\":" + N(g_records) + "}");
  Finish(handle);
  return 0;
}

int Flush() {
  Check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  RegisterKernels();
  cudaStream_t stream = nullptr;
  Check("cudaStreamCreate", cudaStreamCreate(&stream));
  Check("cudaStreamSynchronize", cudaStreamSynchronize(stream));  // context exists before the window
  Check("cuptiActivityEnable", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  Check("cuptiActivityEnable", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  float* nothing = nullptr;
  void* args[] = {&nothing};
  // SIM_KERNEL_NS (set by the test) makes this kernel run for a long time.
  Check("cudaLaunchKernel", cudaLaunchKernel(reinterpret_cast<const void*>(&SlowStub), dim3(1), dim3(32), args, 0,
                                             stream));
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(0));
  Line("{\"ev\":\"after_unforced\",\"records\":" + N(g_records) + "}");
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Line("{\"ev\":\"after_forced\",\"records\":" + N(g_records) + "}");
  Check("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  Check("cuptiActivityDisable", cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME));
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Line("{\"ev\":\"after_sync\",\"records\":" + N(g_records) + "}");
  Finish(nullptr);
  return 0;
}

int Drops(bool decline) {
  g_decline = decline;
  Check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  RegisterKernels();
  cudaStream_t stream = nullptr;
  Check("cudaStreamCreate", cudaStreamCreate(&stream));
  EnableAll();
  Workload(stream);
  Workload(stream);
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  Line("{\"ev\":\"flushed\",\"records\":" + N(g_records) + "}");
  Finish(nullptr);
  return 0;
}

int Late() {
  Check("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  Check("cuptiActivityEnable", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  int count = 0;
  Check("cudaGetDeviceCount", cudaGetDeviceCount(&count));
  const uint64_t before = MonotonicNs();
  Check("cuptiActivityFlushAll", cuptiActivityFlushAll(0));
  const uint64_t returned = MonotonicNs();
  Line("{\"ev\":\"unforced_returned\",\"flush_ns\":" + N(returned - before) + ",\"records\":" + N(g_records) +
       ",\"at_ns\":" + N(returned) + "}");
  for (int i = 0; i < 300 && g_deliveries == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Line("{\"ev\":\"waited\",\"deliveries\":" + N(g_deliveries) + "}");
  Finish(nullptr);
  return 0;
}

int SubscribeScenario() {
  CUpti_SubscriberHandle handle = nullptr;
  const CUptiResult plain = cuptiSubscribe(&handle, OnCallback, nullptr);
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUpti_SubscriberParams params{CUpti_SubscriberParams_STRUCT_SIZE, "sim-cupti-client", holder, sizeof(holder)};
  CUpti_SubscriberHandle second = nullptr;
  const CUptiResult v2 = cuptiSubscribe_v2(&second, OnCallback, nullptr, &params);
  Line("{\"ev\":\"subscribe\",\"plain\":" + N(plain) + ",\"v2\":" + N(v2) + ",\"holder\":" + S(holder) +
       ",\"enable\":" + N(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)) + "}");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_main_tid = Tid();
  if (const char* ticks = std::getenv("CLIENT_TICKS_PER_NS")) g_ticks_per_ns = std::strtoull(ticks, nullptr, 10);
  const std::string scenario = argc > 1 ? argv[1] : "";
  if (scenario == "trace") return Trace();
  if (scenario == "flush") return Flush();
  if (scenario == "drops") return Drops(/*decline=*/true);
  if (scenario == "drops_fault") return Drops(/*decline=*/false);
  if (scenario == "late") return Late();
  if (scenario == "subscribe") return SubscribeScenario();
  std::fprintf(stderr, "usage: %s trace|flush|drops|drops_fault|late|subscribe\n", argv[0]);
  return 2;
}
