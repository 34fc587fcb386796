#include "tools/prof/json/trace_stream.h"

#include "tools/prof/json/parser.h"

namespace prof::tool {

TraceStreamResult StreamTrace(ByteSource* source, TraceStreamHandler* handler) {
  TraceStreamResult result;
  JsonParser p(source);
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

}  // namespace prof::tool
