#include "collectors/nvtx/torch_op_name.h"

namespace prof::nvtx {
namespace {

constexpr std::string_view kOpId = ", op_id = ";
constexpr std::string_view kSeq = ", seq = ";
constexpr std::string_view kSizes = ", sizes = ";
constexpr std::string_view kInputIds = ", input_op_ids = ";

// Reads the decimal digits at the start of *s (at most 18), consuming them.
bool TakeNumber(std::string_view* s, uint64_t* value) {
  size_t n = 0;
  uint64_t v = 0;
  while (n < s->size() && n < 18 && (*s)[n] >= '0' && (*s)[n] <= '9') v = v * 10 + static_cast<uint64_t>((*s)[n++] - '0');
  if (n == 0) return false;
  s->remove_prefix(n);
  *value = v;
  return true;
}

}  // namespace

bool ParseTorchOpName(std::string_view text, TorchOpName* out) {
  size_t at = text.find(kOpId);
  if (at == std::string_view::npos || at == 0) return false;
  TorchOpName op;
  std::string_view rest = text.substr(at + kOpId.size());
  if (!TakeNumber(&rest, &op.op_id)) return false;
  if (!rest.empty()) {
    if (rest.substr(0, kSizes.size()) == kSizes) {
      rest.remove_prefix(kSizes.size());
      size_t ids = rest.find(kInputIds);
      op.shapes = rest.substr(0, ids);
      rest = ids == std::string_view::npos ? std::string_view() : rest.substr(ids);
    }
    if (!rest.empty() && rest.substr(0, kInputIds.size()) != kInputIds) return false;
  }
  op.name = text.substr(0, at);
  size_t seq_at = op.name.rfind(kSeq);
  if (seq_at != std::string_view::npos && seq_at > 0) {
    std::string_view digits = op.name.substr(seq_at + kSeq.size());
    uint64_t seq = 0;
    if (TakeNumber(&digits, &seq) && digits.empty()) {
      op.seq = static_cast<int64_t>(seq);
      op.name = op.name.substr(0, seq_at);
    }
  }
  *out = op;
  return true;
}

}  // namespace prof::nvtx
