// cuDNN's version queries, status strings and handle (cuDNN API reference,
// cudnn_graph library: cudnnCreate, cudnnSetStream, cudnnGetVersion, ...).
// The backend (graph) API is cudnn_backend_*.cpp; every other cuDNN entry
// point is a generated stub answering CUDNN_STATUS_NOT_SUPPORTED
// (gen_stubs.py).
#include <cudnn.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "cudnn_handle.h"
#include "launch.h"

namespace {

using simmath::kLiveCudnn;
bool Live(cudnnHandle_t h) { return simmath::LiveCudnn(h); }

// The version reported (major*10000 + minor*100 + patch): the build's
// choice (CMakeLists.txt: the newest cuDNN 9 header it found, since a
// program built against a newer cuDNN 9 refuses an older one), or
// SIM_CUDNN_VERSION when set to a cuDNN 9 version.
#ifndef SIM_CUDNN_REPORTED_VERSION
#define SIM_CUDNN_REPORTED_VERSION CUDNN_VERSION
#endif
size_t Version() {
  static const size_t v = [] {
    const char* env = getenv("SIM_CUDNN_VERSION");
    const long parsed = env ? strtol(env, nullptr, 10) : 0;
    return parsed / 10000 == CUDNN_MAJOR ? static_cast<size_t>(parsed) : static_cast<size_t>(SIM_CUDNN_REPORTED_VERSION);
  }();
  return v;
}

// Data, not logic: each simulated library answers from its own table of its own enum.
struct StatusName {
  cudnnStatus_t status;
  const char* name;
};
const StatusName kNames[] = {
    {CUDNN_STATUS_SUCCESS, "CUDNN_STATUS_SUCCESS"},
    {CUDNN_STATUS_NOT_INITIALIZED, "CUDNN_STATUS_NOT_INITIALIZED"},
    {CUDNN_STATUS_BAD_PARAM, "CUDNN_STATUS_BAD_PARAM"},
    {CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"},
    {CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED"},
    {CUDNN_STATUS_INTERNAL_ERROR, "CUDNN_STATUS_INTERNAL_ERROR"},
    {CUDNN_STATUS_EXECUTION_FAILED, "CUDNN_STATUS_EXECUTION_FAILED"},
};

}  // namespace

extern "C" {

size_t cudnnGetVersion(void) { return Version(); }
size_t cudnnGetMaxDeviceVersion(void) { return 900; }  // the simulated H100 is sm_90
size_t cudnnGetCudartVersion(void) { return CUDART_VERSION; }

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  const int v = static_cast<int>(Version());
  switch (type) {
    case MAJOR_VERSION: *value = v / 10000; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = v / 100 % 100; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = v % 100; return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_BAD_PARAM;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  for (const StatusName& n : kNames)
    if (n.status == status) return n.name;
  return "CUDNN_STATUS_UNKNOWN";
}

// No operation runs, so no error message is ever recorded.
void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message && max_size > 0) message[0] = '\0';
}

// The sub-libraries are this one library: always consistent.
cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
cudnnStatus_t cudnnAdvVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  if (!simmath::DriverReady()) return CUDNN_STATUS_NOT_INITIALIZED;
  cudnnContext* h = new (std::nothrow) cudnnContext{kLiveCudnn, nullptr};
  if (!h) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!Live(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->magic = 0;
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  if (!Live(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId) {
  if (!Live(handle) || !streamId) return CUDNN_STATUS_BAD_PARAM;
  *streamId = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
