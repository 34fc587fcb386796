#include "tools/prof/job/rank_events.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tools/prof/trace/event_fields.h"

namespace prof::tool {
namespace {

bool ToNs(const JsonValue& v, int64_t* ns) {
  if (!v.is_number()) return false;
  double d = v.number() * 1000.0;
  if (!(d > -9.0e18 && d < 9.0e18)) return false;
  *ns = std::llround(d);
  return true;
}

// A member's value as text: a string's content, a number as written.
std::string Text(const JsonValue& v) {
  if (v.is_string() || v.is_number()) return std::string(v.str());
  return std::string();
}

// args.correlation, 0 when there is none.
uint64_t Correlation(const JsonValue& e) {
  JsonValue args = e.Get("args");
  int64_t id = 0;
  if (!args.is_object() || !args.Get("correlation").ToInt64(&id) || id < 0) return 0;
  return static_cast<uint64_t>(id);
}

}  // namespace

std::string ProcessLabel(const std::string& process, int64_t pid, const std::string& path) {
  if (!process.empty()) return process + (pid >= 0 ? " pid " + std::to_string(pid) : "");
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}


void ReadJobEvent(const JsonValue& e, RankEvents* r) {
  // Events the merge leaves out (a pid, tid, ts or dur of the wrong type) are not read either.
  if (!e.is_object() || e.StringOr("ph", "") != "X" || WrongTypedField(e) != nullptr) return;
  int64_t start = 0, dur = 0;
  if (!ToNs(e.Get("ts"), &start) || !ToNs(e.Get("dur"), &dur) || dur < 0) return;
  std::string_view cat = e.StringOr("cat", "");
  std::string_view name = e.StringOr("name", "");
  int64_t tid = 0;
  e.Get("tid").ToInt64(&tid);
  if (cat == "kernel") {
    JsonValue args = e.Get("args");
    // A kernel that overlapped the one before it on its stream's track (the
    // two conversions of one device instant to host time may differ by a few
    // ns) is drawn starting where that one ends, or, by older writers,
    // clipped inside it; how much of its start was clipped and its true
    // duration are kept in the args. The collective's end is what aligns
    // the clocks.
    int64_t unclipped = 0;
    if (args.is_object() && ToNs(args.Get("clipped start"), &unclipped) && unclipped > 0) start -= unclipped;
    if (args.is_object() && ToNs(args.Get("unclipped dur"), &unclipped) && unclipped > dur) dur = unclipped;
    JsonValue coll = args.is_object() ? args.Get("Collective name") : JsonValue();
    std::string collective = coll.is_string() ? std::string(coll.str()) : std::string();
    std::string group = coll.is_string() ? Text(args.Get("Process Group Name")) : std::string();
    std::string seq = coll.is_string() ? Text(args.Get("Seq")) : std::string();
    r->kernels.push_back(MakeJobKernel(start, start + dur, name, collective, group, seq));
    r->kernels.back().correlation = Correlation(e);
  } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
    r->transfers.push_back({start, start + dur, Correlation(e)});
  } else if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) {
    JobStep s;
    std::string digits(name.substr(13));
    char* end = nullptr;
    s.number = std::strtoull(digits.c_str(), &end, 10);
    if (digits.empty() || *end != '\0') return;
    s.start_ns = start;
    s.end_ns = start + dur;
    r->steps.push_back(s);
  } else if (IsJobCall(cat, name)) {
    r->calls.push_back({start, start + dur, tid, r->Intern(name), Correlation(e)});
  } else if (cat == "python_function") {
    r->python.push_back({start, start + dur, tid, r->Intern(name)});
  }
}

void ShiftRankEvents(RankEvents* r, int64_t ns) {
  for (JobStep& s : r->steps) s.start_ns += ns, s.end_ns += ns;
  for (JobKernel& k : r->kernels) k.start_ns += ns, k.end_ns += ns;
  for (JobTransfer& x : r->transfers) x.start_ns += ns, x.end_ns += ns;
  for (JobSlice& c : r->calls) c.start_ns += ns, c.end_ns += ns;
  for (JobSlice& p : r->python) p.start_ns += ns, p.end_ns += ns;
  std::sort(r->steps.begin(), r->steps.end(), [](const JobStep& a, const JobStep& b) { return a.start_ns < b.start_ns; });
}

}  // namespace prof::tool
