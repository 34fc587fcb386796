#include "tools/prof/job/facts_file.h"

#include <climits>
#include <memory>

#include "tools/prof/json/byte_source.h"
#include "tools/prof/json/json_value.h"
#include "tools/prof/json/parse.h"

namespace prof::tool {
namespace {

constexpr uint64_t kMaxFactsBytes = uint64_t{1} << 30;  // a facts file of a million steps is ~100 MB

// The array's members as integers into `out`, which has room for `n`;
// false when the array has another length or a member is not an integer.
bool Integers(const JsonValue& row, int64_t* out, size_t n) {
  if (!row.is_array() || row.size() != n) return false;
  size_t i = 0;
  for (JsonValue v = row.first(); v.valid(); v = row.next(v)) {
    if (!v.is_integer() || !v.ToInt64(&out[i++])) return false;
  }
  return true;
}

// A step's row: 10 numbers in version 1, 14 in version 2 (the GPU's
// longest idle stretch and the call after it added).
bool ReadSteps(const JsonValue& steps, int64_t version, size_t names, RankFacts* f) {
  if (!steps.is_array()) return false;
  size_t fields = version == 1 ? 10 : 14;
  f->steps.reserve(steps.size());
  for (JsonValue row = steps.first(); row.valid(); row = steps.next(row)) {
    int64_t v[14] = {};
    if (!Integers(row, v, fields) || v[0] < 0) return false;
    for (int k : {7, 8, 12, 13}) {
      if (v[k] < 0 || static_cast<uint64_t>(v[k]) >= names) return false;
    }
    if (v[9] < 0 || v[9] > UINT32_MAX || v[10] < 0) return false;
    RankStepFacts s;
    s.step = {static_cast<uint64_t>(v[0]), v[1], v[2]};
    s.compute_ns = v[3], s.comm_ns = v[4], s.gap_ns = v[5], s.gap_call_ns = v[6];
    s.gap_call = static_cast<uint32_t>(v[7]), s.gap_site = static_cast<uint32_t>(v[8]);
    s.syncs = static_cast<uint32_t>(v[9]);
    s.idle_ns = v[10], s.idle_call_ns = v[11];
    s.idle_call = static_cast<uint32_t>(v[12]), s.idle_site = static_cast<uint32_t>(v[13]);
    f->steps.push_back(s);
  }
  return true;
}

bool ReadCollectives(const JsonValue& collectives, RankFacts* f) {
  if (!collectives.is_array()) return false;
  f->collectives.reserve(collectives.size());
  f->keys.reserve(collectives.size());
  for (JsonValue row = collectives.first(); row.valid(); row = collectives.next(row)) {
    if (!row.is_array() || row.size() != 3) return false;
    JsonValue key = row.first(), start = row.next(key), end = row.next(start);
    JobCollective c;
    if (!key.is_string() || !start.ToInt64(&c.start_ns) || !end.ToInt64(&c.end_ns)) return false;
    c.key = static_cast<uint32_t>(f->keys.size());
    f->keys.emplace_back(key.str());
    f->collectives.push_back(c);
  }
  return true;
}

bool ReadFacts(const JsonValue& root, RankFacts* f) {
  int64_t version = 0, rank = 0;
  if (!root.is_object() || !root.Get("libprof_job_facts").ToInt64(&version) || (version != 1 && version != 2)) {
    return false;
  }
  if (!root.Get("rank").ToInt64(&rank) || rank < INT32_MIN || rank > INT32_MAX) return false;
  f->rank = static_cast<int>(rank);
  JsonValue ranked = root.Get("ranked"), label = root.Get("label"), overlap = root.Get("comm_overlap_percent");
  f->ranked = !ranked.is_bool() || ranked.boolean();
  if (label.is_string()) f->label.assign(label.str());
  f->comm_overlap_percent = overlap.is_number() ? overlap.number() : -1;
  JsonValue names = root.Get("names");
  if (!names.is_array() || names.size() == 0) return false;
  for (JsonValue n = names.first(); n.valid(); n = names.next(n)) {
    if (!n.is_string()) return false;
    f->names.emplace_back(n.str());
  }
  return ReadSteps(root.Get("steps"), version, f->names.size(), f) && ReadCollectives(root.Get("collectives"), f);
}

}  // namespace

bool IsFactsFileName(const std::string& path) {
  const std::string suffix = ".job.json";
  return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool ReadFactsFile(const std::string& path, RankFacts* facts, std::string* error) {
  std::unique_ptr<ByteSource> source = OpenFileSource(path, kMaxFactsBytes, error);
  if (!source) return false;
  std::string text;
  char buffer[1 << 16];
  for (long n; (n = source->Read(buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      *error = source->error();
      return false;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  JsonDoc doc;
  std::string parse_error;
  if (!ParseJson(text, &doc, &parse_error)) {
    *error = path + ": not JSON: " + parse_error;
    return false;
  }
  text.clear();
  *facts = RankFacts{};
  if (!ReadFacts(JsonValue(&doc, 0), facts)) {
    *error = path + ": not a libprof facts file (libprof_job_facts 1)";
    return false;
  }
  facts->path = path;
  return true;
}

}  // namespace prof::tool
