#include "tools/prof/json_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

namespace prof::tool {
namespace {

// --- byte sources -----------------------------------------------------------

class GzFileSource : public ByteSource {
 public:
  GzFileSource(gzFile file, std::string path, uint64_t max_unpacked)
      : file_(file), path_(std::move(path)), max_(max_unpacked) {}
  ~GzFileSource() override { gzclose(file_); }

  long Read(char* buffer, size_t size) override {
    if (!error_.empty()) return -1;
    int n = gzread(file_, buffer, static_cast<unsigned>(std::min<size_t>(size, 1u << 30)));
    int code = Z_OK;
    const char* message = n <= 0 ? gzerror(file_, &code) : nullptr;
    if (n < 0 || code != Z_OK) {
      // A damaged or cut-short gzip stream is named as such, not left to
      // the JSON reader (which would see no bytes, or half of them).
      // zlib's message starts with the path: keep what follows it.
      std::string what = message != nullptr ? message : "";
      if (what.rfind(path_ + ": ", 0) == 0) what.erase(0, path_.size() + 2);
      if (code == Z_ERRNO) {
        error_ = path_ + ": " + std::strerror(errno);
      } else if (code == Z_BUF_ERROR) {
        error_ = path_ + ": truncated gzip file (the compressed data ends early)";
      } else {
        error_ = path_ + ": corrupt gzip file (" + what + ")";
      }
      return -1;
    }
    if (!checked_kind_ && n > 0) {
      checked_kind_ = true;
      // gzread passes plain bytes through: a .gz name on bytes that are not
      // gzip's is a damaged (or misnamed) file, said as such.
      if (gzdirect(file_) && EndsWithGz(path_)) {
        error_ = path_ + ": not a gzip file although named .gz (its first bytes are not gzip's 1f 8b)";
        return -1;
      }
    }
    total_ += static_cast<uint64_t>(n);
    if (total_ > max_) {
      error_ = path_ + ": more than " + std::to_string(max_ >> 20) +
               " MB once unpacked (raise --max-unpacked-mb to read it)";
      return -1;
    }
    return n;
  }
  const std::string& error() const override { return error_; }

 private:
  static bool EndsWithGz(const std::string& path) {
    return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  }

  gzFile file_;
  std::string path_;
  uint64_t max_;
  uint64_t total_ = 0;
  bool checked_kind_ = false;
  std::string error_;
};

class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string_view bytes) : bytes_(bytes) {}
  long Read(char* buffer, size_t size) override {
    size_t n = std::min(size, bytes_.size() - pos_);
    std::memcpy(buffer, bytes_.data() + pos_, n);
    pos_ += n;
    return static_cast<long>(n);
  }
  const std::string& error() const override { return error_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
  std::string error_;
};

// --- the parser -------------------------------------------------------------

bool IsWs(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class Parser {
 public:
  explicit Parser(ByteSource* source) : source_(source), storage_(new char[kBufferBytes]), buf_(storage_.get()) {}
  // Parses text in memory: no buffer, no copy.
  explicit Parser(std::string_view text) : buf_(text.data()), end_(text.size()), eof_(true) {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t consumed() const { return consumed_ + pos_; }

  // Next byte without consuming it; -1 at the end (or after an error).
  int Peek() {
    if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
    return Refill() ? static_cast<unsigned char>(buf_[pos_]) : -1;
  }
  int Get() {
    int c = Peek();
    if (c >= 0) ++pos_;
    return c;
  }
  void SkipWs() {
    for (;;) {
      while (pos_ < end_ && IsWs(buf_[pos_])) ++pos_;
      if (pos_ < end_ || !Refill()) return;
    }
  }
  bool Expect(char c, const char* what) {
    SkipWs();
    if (Get() != c) return Fail(std::string("expected ") + what);
    return true;
  }
  bool AtEnd() {
    SkipWs();
    return Peek() < 0 && !failed();
  }

  bool Fail(const std::string& what) {
    if (error_.empty()) {
      error_ = !source_ || source_->error().empty() ? "syntax error at byte " + std::to_string(consumed()) + ": " + what
                                        : source_->error();
    }
    end_ = pos_;  // stop
    eof_ = true;
    return false;
  }

  // Parses one whole value (any depth; an explicit stack, no recursion) into
  // `doc`, or only checks it when `doc` is null.
  bool ParseValue(JsonDoc* doc) {
    doc_ = doc;
    if (doc_) {
      doc_->Clear();
      capture_from_ = pos_;
    }
    stack_.clear();
    bool ok = ParseValueLoop();
    if (doc_ && ok) FlushCapture();
    doc_ = nullptr;
    return ok;
  }

  // A string into `out` (decoded), or only checked when `out` is null.
  bool ParseString(std::string* out) {
    if (Get() != '"') return Fail("expected a string");
    for (;;) {
      // Fast path: a run of plain ASCII inside the buffer.
      size_t start = pos_;
      while (pos_ < end_) {
        unsigned char c = static_cast<unsigned char>(buf_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      if (out) {
        out->append(buf_ + start, pos_ - start);
        if (out->size() > kMaxValueBytes) return Fail("a string longer than " + std::to_string(kMaxValueBytes >> 20) + " MB");
      }
      int c = Get();
      if (c < 0) return Fail("unterminated string");
      if (c == '"') return true;
      if (c < 0x20) return Fail("control character in a string");
      if (c == '\\') {
        if (!ParseEscape(out)) return false;
      } else if (c >= 0x80) {
        if (!ParseUtf8(c, out)) return false;
      } else if (out) {
        out->push_back(static_cast<char>(c));  // the fast path stopped at the buffer's end
      }
    }
  }

 private:
  struct Frame {
    uint32_t node;  // its node in doc_ (when building)
    bool object;
    bool empty;     // no member yet
  };

  bool Refill() {
    if (eof_) return false;
    if (doc_) {
      FlushCapture();
      if (doc_->raw.size() > kMaxValueBytes) {
        return Fail("a single value larger than " + std::to_string(kMaxValueBytes >> 20) + " MB");
      }
    }
    consumed_ += end_;
    pos_ = end_ = 0;
    capture_from_ = 0;
    long n = source_->Read(storage_.get(), kBufferBytes);
    if (n < 0) {
      eof_ = true;
      Fail("read error");
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    end_ = static_cast<size_t>(n);
    return true;
  }

  void FlushCapture() {
    if (pos_ > capture_from_) doc_->raw.append(buf_ + capture_from_, pos_ - capture_from_);
    capture_from_ = pos_;
  }
  uint32_t RawPos() const { return static_cast<uint32_t>(doc_->raw.size() + (pos_ - capture_from_)); }

  bool ParseEscape(std::string* out) {
    int c = Get();
    char plain;
    switch (c) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (!Hex4(&cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (Get() != '\\' || Get() != 'u' || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) {
            return Fail("high surrogate not followed by a low surrogate");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (out) AppendUtf8(out, cp);
        return true;
      }
      default:
        return Fail("invalid escape in a string");
    }
    if (out) out->push_back(plain);
    return true;
  }

  bool Hex4(uint32_t* cp) {
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      int c = Get();
      int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (v < 0) return Fail("invalid \\u escape");
      *cp = *cp << 4 | static_cast<uint32_t>(v);
    }
    return true;
  }

  static void AppendUtf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | cp >> 6));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | cp >> 12));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | cp >> 18));
      out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // RFC 3629: the well-formed sequences, as Unicode's table 3-7 lists them.
  bool ParseUtf8(int lead, std::string* out) {
    int more;
    int lo = 0x80, hi = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      more = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      more = 2;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      more = 3;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;
    } else {
      return Fail("invalid UTF-8 in a string");
    }
    char bytes[4] = {static_cast<char>(lead)};
    for (int i = 1; i <= more; ++i) {
      int c = Get();
      if (c < lo || c > hi) return Fail("invalid UTF-8 in a string");
      lo = 0x80, hi = 0xBF;
      bytes[i] = static_cast<char>(c);
    }
    if (out) out->append(bytes, static_cast<size_t>(more + 1));
    return true;
  }

  // The number grammar over [s, e): the token's length, or 0 when it is
  // malformed; `open` when it may continue past e.
  static size_t ScanNumber(const char* s, const char* e, bool* integer, bool* open) {
    const char* p = s;
    *open = false;
    *integer = true;
    auto digit = [&]() { return p < e && *p >= '0' && *p <= '9'; };
    auto at_end = [&]() { return p == e ? (*open = true) : false; };
    if (p < e && *p == '-') ++p;
    if (at_end()) return 0;
    if (*p == '0') {
      ++p;
    } else if (digit()) {
      while (digit()) ++p;
    } else {
      return 0;
    }
    if (at_end()) return 0;
    if (*p == '.') {
      *integer = false;
      ++p;
      if (!digit()) return at_end(), 0;
      while (digit()) ++p;
      if (at_end()) return 0;
    }
    if (*p == 'e' || *p == 'E') {
      *integer = false;
      ++p;
      if (p < e && (*p == '+' || *p == '-')) ++p;
      if (!digit()) return at_end(), 0;
      while (digit()) ++p;
      if (at_end()) return 0;
    }
    return static_cast<size_t>(p - s);
  }

  bool ParseNumber(JsonDoc::Node* node) {
    bool integer, open;
    size_t n = ScanNumber(buf_ + pos_, buf_ + end_, &integer, &open);
    if (!open) {
      if (n == 0) return Fail("invalid number");
      std::string_view token(buf_ + pos_, n);
      pos_ += n;
      return StoreNumber(token, integer, node);
    }
    // The token runs past the buffer (or the input ends inside it).
    token_.clear();
    auto digits = [this]() {
      size_t count = 0;
      for (int c = Peek(); c >= '0' && c <= '9'; c = Peek()) token_.push_back(static_cast<char>(Get())), ++count;
      return count;
    };
    if (Peek() == '-') token_.push_back(static_cast<char>(Get()));
    int first = Peek();
    if (first == '0') {
      token_.push_back(static_cast<char>(Get()));
    } else if (first >= '1' && first <= '9') {
      digits();
    } else {
      return Fail("invalid number");
    }
    integer = true;
    if (Peek() == '.') {
      integer = false;
      token_.push_back(static_cast<char>(Get()));
      if (digits() == 0) return Fail("invalid number");
    }
    if (Peek() == 'e' || Peek() == 'E') {
      integer = false;
      token_.push_back(static_cast<char>(Get()));
      if (Peek() == '+' || Peek() == '-') token_.push_back(static_cast<char>(Get()));
      if (digits() == 0) return Fail("invalid number");
    }
    std::string token = token_;
    return StoreNumber(token, integer, node);
  }

  // "-123.456": at most 15 digits and no exponent. Digits and the power of
  // ten are both exact in a double, so one division rounds correctly: the
  // same value a full conversion gives.
  static bool FastDecimal(std::string_view token, double* value) {
    static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    bool negative = token[0] == '-';
    int64_t mantissa = 0;
    int digits = 0, decimals = -1;
    for (size_t i = negative; i < token.size(); ++i) {
      char c = token[i];
      if (c == '.') {
        decimals = 0;
        continue;
      }
      if (c < '0' || c > '9' || ++digits > 15) return false;
      mantissa = mantissa * 10 + (c - '0');
      if (decimals >= 0) ++decimals;
    }
    double v = static_cast<double>(mantissa);
    if (decimals > 0) v /= kPow10[decimals];
    *value = negative ? -v : v;
    return true;
  }

  bool StoreNumber(std::string_view token, bool integer, JsonDoc::Node* node) {
    double value = 0;
    size_t digits = token.size() - (token[0] == '-');
    if (integer && digits <= 15) {
      // Exact in a double: no conversion routine needed.
      int64_t v = 0;
      for (char c : token.substr(token[0] == '-')) v = v * 10 + (c - '0');
      value = static_cast<double>(token[0] == '-' ? -v : v);
    } else if (!FastDecimal(token, &value)) {
      auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
      (void)ptr;
      if (ec == std::errc::result_out_of_range) {
        // Underflow rounds to zero (as strtod); overflow is refused, as
        // nlohmann's parser refuses it.
        std::string copy(token);
        value = std::strtod(copy.c_str(), nullptr);
        if (!std::isfinite(value)) return Fail("number overflow: " + copy);
      } else if (ec != std::errc() || !std::isfinite(value)) {
        return Fail("number overflow: " + std::string(token));
      }
    }
    if (node) {
      node->integer = integer;
      node->number = value;
      node->str_off = static_cast<uint32_t>(doc_->text.size());
      node->str_len = static_cast<uint32_t>(token.size());
      doc_->text += token;
    }
    return true;
  }

  bool Literal(const char* word, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (Get() != word[i]) return Fail("invalid literal");
    }
    return true;
  }

  // Starts a node for the value at the current position (after whitespace).
  JsonDoc::Node* NewNode(JsonType type, uint32_t key_off, uint32_t key_len) {
    if (!doc_) return nullptr;
    if (doc_->nodes.size() >= UINT32_MAX - 1) return nullptr;
    JsonDoc::Node n{};
    n.type = type;
    n.key_off = key_off;
    n.key_len = key_len;
    n.raw_off = RawPos();
    doc_->nodes.push_back(n);
    return &doc_->nodes.back();
  }
  void CloseNode(uint32_t index) {
    JsonDoc::Node& n = doc_->nodes[index];
    n.end = static_cast<uint32_t>(doc_->nodes.size());
    n.raw_len = RawPos() - n.raw_off;
  }

  bool ParseValueLoop() {
    uint32_t key_off = 0, key_len = 0;
    for (;;) {
      // A value starts here.
      SkipWs();
      if (doc_ && RawPos() > kMaxValueBytes) {
        return Fail("a single value larger than " + std::to_string(kMaxValueBytes >> 20) + " MB");
      }
      int c = Peek();
      uint32_t index = doc_ ? static_cast<uint32_t>(doc_->nodes.size()) : 0;
      if (c == '{' || c == '[') {
        bool object = c == '{';
        NewNode(object ? JsonType::kObject : JsonType::kArray, key_off, key_len);
        Get();
        stack_.push_back({index, object, true});
      } else {
        JsonDoc::Node* node = nullptr;
        bool ok;
        if (c == '"') {
          node = NewNode(JsonType::kString, key_off, key_len);
          uint32_t off = doc_ ? static_cast<uint32_t>(doc_->text.size()) : 0;
          ok = ParseString(doc_ ? &doc_->text : nullptr);
          if (ok && doc_) {
            node = &doc_->nodes[index];
            node->str_off = off;
            node->str_len = static_cast<uint32_t>(doc_->text.size() - off);
          }
        } else if (c == '-' || (c >= '0' && c <= '9')) {
          node = NewNode(JsonType::kNumber, key_off, key_len);
          ok = ParseNumber(node);
        } else if (c == 't' || c == 'f') {
          node = NewNode(JsonType::kBool, key_off, key_len);
          if (node) node->boolean = c == 't';
          ok = c == 't' ? Literal("true", 4) : Literal("false", 5);
        } else if (c == 'n') {
          NewNode(JsonType::kNull, key_off, key_len);
          ok = Literal("null", 4);
        } else {
          return Fail(c < 0 ? "unexpected end of input" : "syntax error while parsing a value");
        }
        if (!ok) return false;
        if (doc_) CloseNode(index);
        if (stack_.empty()) return true;
        stack_.back().empty = false;
      }
      // After a value, or just after an opening bracket: close containers
      // or move to the next element.
      for (;;) {
        if (stack_.empty()) return true;
        Frame& f = stack_.back();
        SkipWs();
        int d = Get();
        if (d < 0) return Fail("unexpected end of input");
        if (d == (f.object ? '}' : ']')) {
          if (doc_) CloseNode(f.node);
          stack_.pop_back();
          if (!stack_.empty()) stack_.back().empty = false;
          continue;
        }
        if (!f.empty) {
          if (d != ',') return Fail(f.object ? "expected ',' or '}'" : "expected ',' or ']'");
          SkipWs();
        } else {
          --pos_;  // not a closing bracket: the first element starts here
        }
        if (f.object) {
          key_off = doc_ ? static_cast<uint32_t>(doc_->text.size()) : 0;
          SkipWs();
          if (Peek() != '"') return Fail("expected a member name");
          if (!ParseString(doc_ ? &doc_->text : nullptr)) return false;
          key_len = doc_ ? static_cast<uint32_t>(doc_->text.size() - key_off) : 0;
          if (!Expect(':', "':'")) return false;
        } else {
          key_off = key_len = 0;
        }
        break;
      }
    }
  }

  static constexpr size_t kBufferBytes = 1 << 20;
  ByteSource* source_ = nullptr;
  std::unique_ptr<char[]> storage_;
  const char* buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t consumed_ = 0;
  bool eof_ = false;
  std::string error_;
  JsonDoc* doc_ = nullptr;
  size_t capture_from_ = 0;
  std::vector<Frame> stack_;
  std::string token_;
};

// --- dumping as nlohmann does ------------------------------------------------

bool DumpInto(const JsonValue& v, std::string* out, int depth) {
  if (depth > 256) return false;
  switch (v.type()) {
    case JsonType::kNull: *out += "null"; return true;
    case JsonType::kBool: *out += v.boolean() ? "true" : "false"; return true;
    case JsonType::kString: AppendJsonString(out, v.str()); return true;
    case JsonType::kNumber: {
      int64_t i;
      uint64_t u;
      if (v.is_integer() && v.ToInt64(&i)) {
        *out += std::to_string(i);
      } else if (v.is_integer() && v.ToUint64(&u)) {
        *out += std::to_string(u);
      } else {
        AppendJsonDouble(out, v.number());
      }
      return true;
    }
    case JsonType::kArray: {
      *out += '[';
      bool first = true;
      for (JsonValue c = v.first(); c.valid(); c = v.next(c)) {
        if (!first) *out += ',';
        first = false;
        if (!DumpInto(c, out, depth + 1)) return false;
      }
      *out += ']';
      return true;
    }
    case JsonType::kObject: {
      // Sorted names, the last of duplicates: nlohmann's std::map.
      std::map<std::string_view, JsonValue> members;
      for (JsonValue c = v.first(); c.valid(); c = v.next(c)) members[c.key()] = c;
      *out += '{';
      bool first = true;
      for (const auto& [key, c] : members) {
        if (!first) *out += ',';
        first = false;
        AppendJsonString(out, key);
        *out += ':';
        if (!DumpInto(c, out, depth + 1)) return false;
      }
      *out += '}';
      return true;
    }
  }
  return false;
}

}  // namespace

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, uint64_t max_unpacked_bytes, std::string* error) {
  // gzread passes plain files through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    *error = path + ": " + std::strerror(errno ? errno : ENOMEM);
    return nullptr;
  }
  gzbuffer(file, 1 << 20);
  return std::make_unique<GzFileSource>(file, path, max_unpacked_bytes);
}

std::unique_ptr<ByteSource> MemorySource(std::string_view bytes) { return std::make_unique<StringSource>(bytes); }

std::string_view JsonValue::str() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->text).substr(n.str_off, n.str_len);
}
std::string_view JsonValue::raw() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->raw).substr(n.raw_off, n.raw_len);
}
std::string_view JsonValue::key() const {
  const JsonDoc::Node& n = node();
  return std::string_view(doc_->text).substr(n.key_off, n.key_len);
}

JsonValue JsonValue::first() const {
  if (!valid() || (type() != JsonType::kArray && type() != JsonType::kObject)) return {};
  return i_ + 1 < node().end ? JsonValue(doc_, i_ + 1) : JsonValue();
}
JsonValue JsonValue::next(JsonValue child) const {
  uint32_t n = doc_->nodes[child.i_].end;
  return n < node().end ? JsonValue(doc_, n) : JsonValue();
}
size_t JsonValue::size() const {
  size_t n = 0;
  for (JsonValue c = first(); c.valid(); c = next(c)) ++n;
  return n;
}
JsonValue JsonValue::Get(std::string_view key) const {
  if (!is_object()) return {};
  JsonValue found;
  for (JsonValue c = first(); c.valid(); c = next(c)) {
    if (c.key() == key) found = c;
  }
  return found;
}
std::string_view JsonValue::StringOr(std::string_view key, std::string_view fallback) const {
  JsonValue v = Get(key);
  return v.is_string() ? v.str() : fallback;
}

bool JsonValue::ToInt64(int64_t* out) const {
  if (!is_number()) return false;
  if (node().integer) {
    std::string_view t = str();
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return ec == std::errc() && ptr == t.data() + t.size();
  }
  double d = number();
  // Exactly representable range: [-2^63, 2^63).
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::trunc(d)) return false;
  *out = static_cast<int64_t>(d);
  return true;
}
bool JsonValue::ToUint64(uint64_t* out) const {
  if (!is_number()) return false;
  if (node().integer) {
    std::string_view t = str();
    if (t == "-0") return *out = 0, true;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return ec == std::errc() && ptr == t.data() + t.size();
  }
  double d = number();
  if (!(d >= 0 && d < 18446744073709551616.0) || d != std::trunc(d)) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

std::string JsonValue::Dump() const {
  std::string out;
  if (DumpInto(*this, &out, 0)) return out;
  // Too deep to mirror: the source text without insignificant whitespace.
  out.clear();
  bool in_string = false, escaped = false;
  for (char c : raw()) {
    if (in_string) {
      out += c;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (!IsWs(c)) {
      out += c;
      in_string = c == '"';
    }
  }
  return out;
}

bool ParseJson(std::string_view text, JsonDoc* doc, std::string* error) {
  Parser p(text);
  p.SkipWs();
  if (!p.ParseValue(doc) || !p.AtEnd()) {
    if (!p.failed()) p.Fail("unexpected text after the value");
    *error = p.error();
    return false;
  }
  return true;
}

TraceStreamResult StreamTrace(ByteSource* source, TraceStreamHandler* handler) {
  TraceStreamResult result;
  Parser p(source);
  JsonDoc doc;
  p.SkipWs();
  auto finish = [&](bool ok) {
    if (ok && !p.AtEnd()) {
      if (!p.failed()) p.Fail("unexpected text after the top-level value");
      ok = false;
    }
    result.ok = ok && !p.failed();
    if (!result.ok) result.error = p.error().empty() ? "unexpected end of input" : p.error();
    result.bytes = p.consumed();
    return result;
  };
  if (p.Peek() != '{') return finish(p.ParseValue(nullptr));
  result.root_is_object = true;
  p.Get();
  std::string key;
  p.SkipWs();
  if (p.Peek() == '}') {
    p.Get();
    return finish(true);
  }
  for (;;) {
    key.clear();
    p.SkipWs();
    if (p.Peek() != '"') {
      p.Fail("expected a member name");
      return finish(false);
    }
    if (!p.ParseString(&key) || !p.Expect(':', "':'")) return finish(false);
    p.SkipWs();
    if (key == "traceEvents" && p.Peek() == '[') {
      p.Get();
      handler->EventsBegin(/*is_array=*/true);
      uint64_t count = 0;
      p.SkipWs();
      if (p.Peek() == ']') {
        p.Get();
      } else {
        for (;;) {
          p.SkipWs();
          if (!handler->WantsEvents()) {
            if (!p.ParseValue(nullptr)) return finish(false);
            ++count;
          } else {
            if (!p.ParseValue(&doc)) return finish(false);
            handler->Event(count++, JsonValue(&doc, 0));
          }
          p.SkipWs();
          int c = p.Get();
          if (c == ']') break;
          if (c != ',') {
            p.Fail("expected ',' or ']'");
            return finish(false);
          }
        }
      }
      handler->EventsEnd(count);
    } else if (key == "traceEvents") {
      handler->EventsBegin(/*is_array=*/false);
      if (!p.ParseValue(nullptr)) return finish(false);
      handler->EventsEnd(0);
    } else {
      if (!p.ParseValue(&doc)) return finish(false);
      handler->Member(key, JsonValue(&doc, 0));
    }
    p.SkipWs();
    int c = p.Get();
    if (c == '}') return finish(true);
    if (c != ',') {
      p.Fail("expected ',' or '}'");
      return finish(false);
    }
  }
}

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    const char* escape = nullptr;
    char hex[8];
    switch (c) {
      case '"': escape = "\\\""; break;
      case '\\': escape = "\\\\"; break;
      case '\b': escape = "\\b"; break;
      case '\f': escape = "\\f"; break;
      case '\n': escape = "\\n"; break;
      case '\r': escape = "\\r"; break;
      case '\t': escape = "\\t"; break;
      default:
        if (c < 0x20) {
          std::snprintf(hex, sizeof(hex), "\\u%04x", c);
          escape = hex;
        }
    }
    if (escape) {
      out->append(s.data() + run, i - run);
      *out += escape;
      run = i + 1;
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void AppendJsonDouble(std::string* out, double v) {
  if (!std::isfinite(v)) {
    *out += "null";
    return;
  }
  char buffer[64];
  char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof(buffer), v);
  out->append(buffer, static_cast<size_t>(end - buffer));
}

}  // namespace prof::tool
