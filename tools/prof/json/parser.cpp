#include "tools/prof/json/parser.h"

namespace prof::tool {

bool JsonParser::Fail(const std::string& what) {
  if (error_.empty()) {
    error_ = !source_ || source_->error().empty()
                 ? "syntax error at byte " + std::to_string(consumed()) + ": " + what
                 : source_->error();
  }
  end_ = pos_;  // stop
  eof_ = true;
  return false;
}

bool JsonParser::ParseValue(JsonDoc* doc) {
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

bool JsonParser::Refill() {
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

void JsonParser::FlushCapture() {
  if (pos_ > capture_from_) doc_->raw.append(buf_ + capture_from_, pos_ - capture_from_);
  capture_from_ = pos_;
}

bool JsonParser::Literal(const char* word, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (Get() != word[i]) return Fail("invalid literal");
  }
  return true;
}

JsonDoc::Node* JsonParser::NewNode(JsonType type, uint32_t key_off, uint32_t key_len) {
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

void JsonParser::CloseNode(uint32_t index) {
  JsonDoc::Node& n = doc_->nodes[index];
  n.end = static_cast<uint32_t>(doc_->nodes.size());
  n.raw_len = RawPos() - n.raw_off;
}

bool JsonParser::ParseValueLoop() {
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

bool ParseJson(std::string_view text, JsonDoc* doc, std::string* error) {
  JsonParser p(text);
  p.SkipWs();
  if (!p.ParseValue(doc) || !p.AtEnd()) {
    if (!p.failed()) p.Fail("unexpected text after the value");
    *error = p.error();
    return false;
  }
  return true;
}

}  // namespace prof::tool
