// Which CUPTI release the library impersonates: the personality's classic
// CUPTI (../personality.h), or, with SIM_CUPTI_SUBSCRIBERS=multi, CUPTI
// 13.2, whose headers declare the multi-subscriber API (cupti_13_2.h).
// The version cuptiGetVersion reports and the record layouts go together.
#include <atomic>
#include <cstdlib>

#include "internal.h"
#include "personality.h"

namespace simcupti {
namespace {

// cupti_version.h of CUPTI 13.2 (nvidia-cuda-cupti 13.2.86).
constexpr uint32_t kCupti132 = 130202;
// CUDA 13.1 replaced CUpti_ActivityKernel10 by CUpti_ActivityKernel11
// (CUPTI Python 13.2.0 release notes list Kernel11 new and Kernel10
// dropped; Kineto reads Kernel11's `priority` from CUDA 13.1 on); 13.3
// replaced Kernel11 by Kernel12 (CUPTI Python 13.3.0), whose layout no
// header here has: from 13.3 on the number changes, the layouts do not.
constexpr uint32_t kFirstKernel11 = 130100;
constexpr uint32_t kFirstKernel12 = 130300;

std::atomic<bool> g_kernel11{false};

}  // namespace

bool MultiSubscriberRelease() {
#if SIM_CUDA_MAJOR >= 13
  return CurrentFaults().multi_subscribers;
#else
  return false;  // CUPTI 12.x has no allowMultipleSubscribers
#endif
}

uint32_t ReportedVersion() {
  // SIM_CUPTI_API_VERSION=<n>: report n instead (an older or newer CUPTI).
  if (const char* forced = simhub_fault("CUPTI_API_VERSION"); forced != nullptr && *forced != '\0') {
    return static_cast<uint32_t>(std::strtoul(forced, nullptr, 10));
  }
  return MultiSubscriberRelease() ? kCupti132 : SIM_CUPTI_API_VERSION;
}

void ChooseLayouts() {
#if SIM_CUDA_MAJOR >= 13
  const uint32_t version = ReportedVersion();
  g_kernel11.store(version >= kFirstKernel11 && version < kFirstKernel12, std::memory_order_relaxed);
#endif
}

bool KernelRecordIs11() { return g_kernel11.load(std::memory_order_relaxed); }

}  // namespace simcupti
