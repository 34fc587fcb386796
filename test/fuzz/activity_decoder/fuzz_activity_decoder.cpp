// libFuzzer target: CUPTI activity records (collectors/cupti/activity_decoder)
// as each supported CUPTI release delivers them (delivered.h), through a
// clock map with an arbitrary offset. Whatever the bytes: no crash, no read
// past the record the release wrote (each record is a heap block of exactly
// its struct's size, under AddressSanitizer), no undefined behaviour
// (UndefinedBehaviorSanitizer, e.g. on timestamps near 2^64), and a decoded
// record is sane: start <= end, a kind that matches the activity's, a
// kernel's name as the record gave it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "collectors/cupti/activity_decoder.h"
#include "test/fuzz/activity_decoder/delivered.h"

namespace {

using prof::DeviceKind;
using prof::DeviceRecord;
using prof::cupti::ClockMap;
using prof::cupti::DecodeActivity;
using prof::cupti::DecodeContext;
using prof::cupti::DecodeStatus;
using prof::cupti::NameTable;
using prof::cupti::RecordLayouts;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "activity_decoder fuzz: %s\n", what);
  std::abort();
}

bool KindMatches(CUpti_ActivityKind kind, DeviceKind decoded) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return decoded == DeviceKind::kKernel;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return decoded == DeviceKind::kMemcpy;
    case CUPTI_ACTIVITY_KIND_MEMSET: return decoded == DeviceKind::kMemset;
    case CUPTI_ACTIVITY_KIND_RUNTIME: return decoded == DeviceKind::kRuntimeApi;
    case CUPTI_ACTIVITY_KIND_DRIVER: return decoded == DeviceKind::kDriverApi;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return decoded == DeviceKind::kSync;
    case CUPTI_ACTIVITY_KIND_MEMORY2: return decoded == DeviceKind::kMemAlloc || decoded == DeviceKind::kMemFree;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return decoded == DeviceKind::kOverhead;
    default: return false;
  }
}

struct Input {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  size_t left() const { return size - at; }
  uint8_t Byte() { return at < size ? data[at++] : 0; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < fuzz::kHeaderBytes) return 0;
  Input in{data, size};
  uint32_t version = fuzz::kVersions[in.Byte() % fuzz::kVersionCount];
  int64_t offset = 0;
  std::memcpy(&offset, data + in.at, sizeof(offset));
  in.at += sizeof(offset);

  RecordLayouts layouts;
  // Out of range: the collector never decodes (interception-only); the
  // newest layouts are what DecodeActivity uses without a context's.
  bool known = prof::cupti::LayoutsFor(version, &layouts);
  ClockMap clock;
  // CUPTI's clock read as 1000, the agent's as 1000 + offset (wrapping), so
  // the map's offset is whatever the input says.
  uint64_t agent_now = 1000 + static_cast<uint64_t>(offset);
  clock.Calibrate([&] { return agent_now; },
                  [](uint64_t* t) {
                    *t = 1000;
                    return true;
                  },
                  1);
  NameTable names;
  DecodeContext context{&names, &clock, known ? &layouts : nullptr};

  while (in.left() > 0) {
    auto kind = fuzz::kKinds[in.Byte() % fuzz::kKindCount];
    size_t name_len = in.Byte();
    name_len = std::min(name_len, in.left());
    std::string name(reinterpret_cast<const char*>(data + in.at), name_len);
    name = name.c_str();  // up to a NUL, as CUPTI's C string
    in.at += name_len;
    size_t record_size = fuzz::DeliveredSize(kind, layouts);
    // Exactly the record: one byte more read is a heap-buffer-overflow.
    std::unique_ptr<uint8_t[]> record(new uint8_t[record_size]);
    std::memset(record.get(), 0, record_size);
    size_t take = std::min(record_size, in.left());
    std::memcpy(record.get(), data + in.at, take);
    in.at += take;
    std::memcpy(record.get(), &kind, sizeof(kind));
    bool kernel = kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (kernel) {
      // CUPTI owns the pointer: it is valid or NULL, never arbitrary bytes.
      const char* p = name_len != 0 ? name.c_str() : nullptr;
      std::memcpy(record.get() + fuzz::kKernelNameOffset, &p, sizeof(p));
    }
    DeviceRecord out;
    DecodeStatus status = DecodeActivity(*reinterpret_cast<const CUpti_Activity*>(record.get()), context, &out);
    switch (status) {
      case DecodeStatus::kRecord: {
        if (out.start_ns > out.end_ns) Fail("decoded record ends before it starts");
        if (out.start_ns == 0) Fail("decoded record has no start time");
        if (!KindMatches(kind, static_cast<DeviceKind>(out.kind))) Fail("decoded kind does not match the activity");
        if (kernel && names.Get(out.name_id) != name) Fail("kernel name differs from the record's");
        if (out.name_id >= names.size()) Fail("name id outside the name table");
        break;
      }
      case DecodeStatus::kUnknownKind:
        if (KindMatches(kind, DeviceKind::kKernel) || kind == CUPTI_ACTIVITY_KIND_MEMCPY) Fail("known kind unknown");
        break;
      case DecodeStatus::kFiltered:
      case DecodeStatus::kNoTimestamp: break;
      default: Fail("status out of range");
    }
  }
  return 0;
}
