// RenderReportPage: the page template (exporters/report/page.html) with its
// style, script and data put in place.
#include <string_view>

#include "exporters/common/json_writer.h"
#include "exporters/report/report.h"

namespace prof {

// exporters/report/*, embedded at build time (embed.cmake).
extern const char kReportHtml[];
extern const char kReportCss[];
extern const char kReportJs[];

namespace {

std::string HtmlEscaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string RenderReportPage(const std::string& title, const std::vector<std::string>& windows,
                             const std::string& job_json) {
  std::string data = "{\"title\":\"";
  AppendJsonEscaped(title, &data);
  data += "\",\"windows\":[";
  for (size_t i = 0; i < windows.size(); ++i) {
    if (i) data += ',';
    data += windows[i];
  }
  data += "],\"job\":";
  data += job_json.empty() ? "null" : job_json;
  data += '}';
  // In JSON a '<' appears only inside strings, where \u003c means the same:
  // no "</script>" (or "<!--") can end the data block early.
  std::string safe;
  safe.reserve(data.size() + data.size() / 64);
  for (char c : data) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  // The template's placeholders, each once and in this order.
  std::string_view page = kReportHtml;
  const std::pair<std::string_view, std::string_view> parts[] = {
      {"@TITLE@", ""}, {"@STYLE@", kReportCss}, {"@DATA@", safe}, {"@SCRIPT@", kReportJs}};
  std::string title_html = HtmlEscaped(title);
  std::string out;
  out.reserve(page.size() + safe.size() + std::string_view(kReportJs).size() + std::string_view(kReportCss).size());
  for (const auto& [placeholder, value] : parts) {
    size_t at = page.find(placeholder);
    if (at == std::string_view::npos) continue;
    out.append(page.substr(0, at));
    out.append(placeholder == "@TITLE@" ? std::string_view(title_html) : value);
    page.remove_prefix(at + placeholder.size());
  }
  out.append(page);
  return out;
}

}  // namespace prof
