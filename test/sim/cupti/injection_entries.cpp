// Entry points by which NVIDIA's libcupti.so.13 joins other runtimes as
// their tool: NVTX and OpenMP (OMPT). The sim joins neither.
//
// NVIDIA's libcupti.so.13 also serves as an NVTX injection library
// (NVTX_INJECTION64_PATH=libcupti.so). The sim does not: its entry points
// return 0, which NVTX documents as "injection failed", after which every
// NVTX call is a no-op. (NVTX ranges reach tools through their own
// injection library; the sim's CUPTI records no NVTX activity.)
#define SIMCUPTI_NVTX_EXPORT extern "C" __attribute__((visibility("default")))

SIMCUPTI_NVTX_EXPORT int InitializeInjectionNvtx(void* get_export_table) {
  (void)get_export_table;
  return 0;
}

SIMCUPTI_NVTX_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  (void)get_export_table;
  return 0;
}

SIMCUPTI_NVTX_EXPORT int InitializeInjectionNvtxExtension(void* get_export_table) {
  (void)get_export_table;
  return 0;
}

// OpenMP offload tracing (OMPT): 0 tells the OpenMP runtime the tool did
// not initialise, so it makes no OMPT callbacks to CUPTI.
SIMCUPTI_NVTX_EXPORT int cuptiOpenMpInitialize(void* lookup, const char* runtime_version, unsigned int ompt_version) {
  (void)lookup;
  (void)runtime_version;
  (void)ompt_version;
  return 0;
}

SIMCUPTI_NVTX_EXPORT int cuptiOpenMpInitialize_v2(void* lookup, int initial_device_num, void* tool_data) {
  (void)lookup;
  (void)initial_device_num;
  (void)tool_data;
  return 0;
}
