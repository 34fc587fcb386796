# Writes OUT, a C++ file defining the report page's assets (page.html,
# page.css, page.js in this folder) as raw string literals, so libprof.so and
# prof carry the page without reading any file at run time.
set(body "// Generated from exporters/report/ by embed.cmake: do not edit.\nnamespace prof {\n")
foreach(pair "kReportHtml;page.html" "kReportCss;page.css" "kReportJs;page.js")
  list(GET pair 0 symbol)
  list(GET pair 1 file)
  file(READ "${DIR}/${file}" text)
  string(FIND "${text}" ")prof_asset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw-string delimiter )prof_asset\"")
  endif()
  string(APPEND body "extern const char ${symbol}[];\nconst char ${symbol}[] = R\"prof_asset(${text})prof_asset\";\n")
endforeach()
string(APPEND body "}  // namespace prof\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
