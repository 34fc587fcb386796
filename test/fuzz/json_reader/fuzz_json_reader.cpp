// Fuzzes the `prof` trace readers on one input: the streaming JSON reader
// under `prof validate` (rules and event descriptions), `prof summary`
// (trace -> windows, merged traces split back, in full and compact records)
// and `prof merge` (the input merged with itself, validated and written).
// Any crash, sanitizer report, leak or hang is a defect; results are not
// judged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/files/byte_sink.h"
#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/parse.h"
#include "tools/prof/merge/merge.h"
#include "tools/prof/trace/trace_to_window.h"
#include "tools/prof/trace/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string error;

  prof::tool::ValidateResult result;
  uint64_t events = 0;
  prof::tool::ValidateBytes(bytes, &result, &events, &error, /*max_per_rule=*/2);

  std::vector<prof::Window> windows;
  prof::tool::ReadWindowsFromBytes(bytes, &windows, &error);
  std::vector<prof::CompactWindow> compact;
  prof::tool::ReadWindowsFromBytes(bytes, &compact, &error);

  auto open = [bytes](std::string*) { return prof::tool::MemorySource(bytes); };
  std::vector<prof::tool::MergeSource> sources = {{"a.json", open}, {"b.json", open}};
  std::string merged;
  prof::StringSink sink(&merged);
  prof::tool::MergeReport report;
  if (prof::tool::StreamMerge(sources, sink, &report, &error)) {
    // What merge writes must read back as strict JSON.
    prof::tool::JsonDoc doc;
    if (!prof::tool::ParseJson(merged, &doc, &error)) __builtin_trap();
  }
  return 0;
}
