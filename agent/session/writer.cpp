#include "agent/session/writer.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>
#include <unordered_set>

#include "base/clock.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/thread_id.h"

namespace prof {
namespace {

// Names of the threads that appear in the window, as the kernel knows them
// (pthread_setname_np / prctl). A thread that already exited keeps no name.
std::vector<std::pair<uint32_t, std::string>> ThreadNames(const Window& w) {
  // Events come in long runs per thread: skip repeats before the set.
  std::set<uint32_t> tids;
  uint32_t last = 0;
  for (const HostEvent& e : w.host_events) {
    if (tids.empty() || e.tid != last) tids.insert(last = e.tid);
  }
  for (const NvtxRange& r : w.nvtx_ranges) tids.insert(r.tid);
  std::vector<std::pair<uint32_t, std::string>> names;
  for (uint32_t tid : tids) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string name;
    if (in && std::getline(in, name) && !name.empty()) names.emplace_back(tid, name);
  }
  return names;
}

}  // namespace

void AlignStepsWithCuptiCalls(Window* w) {
  if (w->steps.empty()) return;
  uint32_t main_tid = static_cast<uint32_t>(w->meta.pid);
  // Calls a wrapper recorded carry the wrapper's times, which the marker path
  // orders with the boundaries: only the others matter here.
  std::vector<uint32_t> wrapped;
  for (const HostEvent& e : w->host_events) {
    if (e.tid == main_tid && e.correlation_id != 0) wrapped.push_back(e.correlation_id);
  }
  std::sort(wrapped.begin(), wrapped.end());
  std::vector<StepSpan>& steps = w->steps;
  for (const DeviceRecord& r : w->device_records) {
    auto kind = static_cast<DeviceKind>(r.kind);
    if ((kind != DeviceKind::kRuntimeApi && kind != DeviceKind::kDriverApi) || r.thread_id != main_tid ||
        r.end_ns <= r.start_ns || std::binary_search(wrapped.begin(), wrapped.end(), r.correlation_id)) {
      continue;
    }
    auto nearer = [&](uint64_t& t) {
      if (r.start_ns < t && t < r.end_ns) t = t - r.start_ns <= r.end_ns - t ? r.start_ns : r.end_ns;
    };
    auto k = std::lower_bound(steps.begin(), steps.end(), r.start_ns,
                              [](const StepSpan& s, uint64_t t) { return s.end_ns < t; });
    for (; k != steps.end() && k->start_ns < r.end_ns; ++k) {
      nearer(k->start_ns);
      nearer(k->end_ns);
    }
  }
  for (size_t k = 1; k < steps.size(); ++k) {  // ordered and non-inverted
    steps[k].start_ns = std::max(steps[k].start_ns, steps[k - 1].end_ns);
    steps[k].end_ns = std::max(steps[k].end_ns, steps[k].start_ns);
  }
}

namespace {

// The longest a window waits for the host events of calls it saw return.
constexpr uint64_t kWrappedEventWaitNs = 500'000'000;

// A recording wrapper appends a call's host event after the call returns,
// and CollectWindow saw it return from CUPTI's exit callback, inside the
// call: a thread descheduled between the two (a busy machine) appends its
// event after the host events were collected, and the call was in no
// window, silently. So the window takes the host events again, polling,
// until every such call's event is in (or as many are missing as it
// counted drops), bounded; what never comes is counted as late.
void AwaitWrappedEvents(uint64_t start, uint64_t end, const WindowJob& job, const WriterDeps& deps, Window* w) {
  std::vector<uint32_t> ids;
  deps.collector->TakeWrappedCalls(&ids);
  if (ids.empty()) return;
  std::unordered_set<uint32_t> have;
  for (const HostEvent& e : w->host_events) {
    if (e.correlation_id != 0) have.insert(e.correlation_id);
  }
  auto missing = [&] {
    uint64_t n = 0;
    for (uint32_t id : ids) n += have.count(id) == 0 ? 1 : 0;
    return n;
  };
  LossCounts& losses = w->meta.losses;
  uint64_t left = missing();
  uint64_t until = std::min(job.deadline_ns, NowNs() + kWrappedEventWaitNs);
  auto poll = std::chrono::milliseconds(1);
  while (left > losses.host_events_dropped && NowNs() < until) {
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(16));
    size_t had = w->host_events.size();
    deps.buffers->Collect(start, end, &w->host_events, &losses.host_events_dropped, job.drop_window);
    for (size_t i = had; i < w->host_events.size(); ++i) {
      if (w->host_events[i].correlation_id != 0) have.insert(w->host_events[i].correlation_id);
    }
    left = missing();
  }
  if (left > losses.host_events_dropped) losses.host_events_late += left - losses.host_events_dropped;
}

}  // namespace

Window SealWindow(WindowJob job, const WriterDeps& deps) {
  Window w;
  w.meta = std::move(job.meta);
  w.steps = std::move(job.steps);
  w.live_at_end = std::move(job.live_at_end);
  // A window whose start was not recorded (LossCounts::unrecorded_start_ns:
  // the agent thread turned recording on late) holds nothing from that
  // stretch: CUPTI may still have been on from the previous window while
  // the wrappers were not, and device work without its call is no window's.
  uint64_t start = w.meta.start_ns + w.meta.losses.unrecorded_start_ns;
  uint64_t end = w.meta.end_ns;
  if (deps.collector != nullptr) deps.collector->CollectWindow(start, end, job.deadline_ns, &w);
  if (deps.buffers != nullptr) {
    deps.buffers->Collect(start, end, &w.host_events, &w.meta.losses.host_events_dropped, job.drop_window);
    if (deps.collector != nullptr) AwaitWrappedEvents(start, end, job, deps, &w);
    // In place: std::stable_sort would allocate a second copy of every event
    // (the budget is one copy). The tie-breaks keep the order deterministic
    // and put an enclosing call before a nested one that starts with it.
    auto before = [](const HostEvent& a, const HostEvent& b) {
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      if (a.tid != b.tid) return a.tid < b.tid;
      if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
      return a.correlation_id < b.correlation_id;
    };
    // One thread's events are collected already in order: checking is one
    // pass, sorting them anyway n log n.
    if (!std::is_sorted(w.host_events.begin(), w.host_events.end(), before)) {
      std::sort(w.host_events.begin(), w.host_events.end(), before);
    }
  }
  if (job.steps_at_calls) AlignStepsWithCuptiCalls(&w);
  if (deps.allocs != nullptr) w.alloc_samples = deps.allocs->TakeSamples(start, end, &w.meta.losses.alloc_samples_dropped);
  if (deps.nvtx != nullptr) w.nvtx_ranges = deps.nvtx->Take(start, end, &w.meta.losses.nvtx_ranges_dropped);
  if (deps.collectives != nullptr) {
    w.collectives = deps.collectives->Take(start, end, &w.meta.losses.collectives_dropped);
    w.communicators = deps.collectives->Comms();
    w.meta.nccl_version = deps.collectives->NcclVersion();
  }
  if (deps.tensor_memory != nullptr) deps.tensor_memory->Take(start, end, job.deadline_ns, &w);
  // Before the strings: a stack's file and function names are interned
  // before any event that refers to it is recorded.
  if (deps.python != nullptr) deps.python->Snapshot(&w.python);
  w.strings = Strings().Snapshot();
  // NVTX range names are transient ids: their text joins the window's strings,
  // then the table may forget the names this window no longer needs.
  std::vector<uint32_t*> names;
  names.reserve(w.nvtx_ranges.size());
  for (NvtxRange& r : w.nvtx_ranges) {
    names.push_back(&r.name_id);
    if (r.shapes_id != 0) names.push_back(&r.shapes_id);
  }
  Strings().TakeWindowNames(std::move(names), &w.strings);
  if (job.names_generation != 0) w.meta.losses.nvtx_names_dropped = Strings().WindowSealed(job.names_generation);
  w.thread_names = ThreadNames(w);
  if (deps.enrich) deps.enrich(&w);
  return w;
}

WriterThread::WriterThread(WriterDeps deps) : deps_(std::move(deps)) {}

WriterThread::~WriterThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void WriterThread::EnsureThread() {
  if (thread_started_) return;
  thread_started_ = true;
  // Block every signal in the writer so SIGINT/SIGTERM go to the host's
  // threads, as they would without us.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (...) {
    Log().warn("cannot start the writer thread; windows will not be written");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void WriterThread::SubmitWindow(WindowJob job) {
  // Now, on the session's thread: a drop of a call that starts after the
  // window's end is not this window's, however late the writer seals it.
  if (deps_.buffers != nullptr) job.drop_window = deps_.buffers->SetDropRange(job.meta.start_ns, job.meta.end_ns);
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnsureThread();
    Job j;
    j.is_window = true;
    j.window = std::move(job);
    queue_.push_back(std::move(j));
  }
  wake_.notify_one();
}

void WriterThread::SubmitDiscard(uint64_t before_ns) {
  // A window opens at before_ns: its drops count from now on, even those
  // made before the writer thread runs the discard (it used to forget them).
  if (deps_.buffers != nullptr) deps_.buffers->SetDropRange(before_ns, ~0ull);
  if (deps_.nvtx != nullptr) deps_.nvtx->WindowOpens(before_ns);
  if (deps_.collectives != nullptr) deps_.collectives->WindowOpens(before_ns);
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnsureThread();
    Job j;
    j.discard_before_ns = before_ns;
    queue_.push_back(std::move(j));
  }
  wake_.notify_one();
}

void WriterThread::ReleaseHeld(bool write, const std::string& step_description, const std::string& note) {
  Job j;
  j.is_release = true;
  j.release_write = write;
  j.release_description = step_description;
  j.release_note = note;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnsureThread();
    queue_.push_back(std::move(j));
  }
  wake_.notify_one();
}

void WriterThread::Run() {
  pthread_setname_np(pthread_self(), "libprof-writer");
  MarkLibprofThread();  // its CUDA calls (versions, device properties) are not the application's
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      if (job.is_window && job.window.discard) {
        Window w;
        if (deps_.collector != nullptr) {
          deps_.collector->CollectWindow(job.window.meta.start_ns, job.window.meta.end_ns, job.window.deadline_ns, &w);
        }
        if (job.window.names_generation != 0) Strings().WindowSealed(job.window.names_generation);
      } else if (job.is_release) {
        std::unique_ptr<Window> held = std::move(held_);
        if (held && job.release_write) {
          held->meta.step_description = job.release_description;
          WriteSealed(*held, held->meta.first_step, held->meta.last_step, job.release_note);
        }
      } else if (job.is_window && job.window.hold) {
        held_ = std::make_unique<Window>(SealWindow(std::move(job.window), deps_));
      } else if (job.is_window) {
        uint64_t first = job.window.meta.first_step;
        uint64_t last = job.window.meta.last_step;
        std::string note = std::move(job.window.written_note);
        Window w = SealWindow(std::move(job.window), deps_);
        WriteSealed(w, first, last, note);
      } else {
        if (deps_.buffers != nullptr) deps_.buffers->Discard(job.discard_before_ns);
        uint64_t ignored = 0;
        if (deps_.allocs != nullptr) deps_.allocs->TakeSamples(job.discard_before_ns, job.discard_before_ns, &ignored);
        uint64_t ignored_ranges = 0;
        if (deps_.nvtx != nullptr) deps_.nvtx->Take(job.discard_before_ns, job.discard_before_ns, &ignored_ranges);
      }
    } catch (const std::exception& e) {
      Log().warn("writer: {}", e.what());
    } catch (...) {
      Log().warn("writer: unknown error");
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

void WriterThread::WriteSealed(Window& w, uint64_t first, uint64_t last, const std::string& note) {
  std::string error;
  std::vector<std::string> files;
  bool ok = deps_.sink ? deps_.sink(w, &error, &files) : false;
  std::lock_guard<std::mutex> count_lock(mu_);
  if (ok) ++written_;
  else ++failed_;
  if (ok && !error.empty()) {
    Log().debug("window steps {}-{} {}", first, last, error);
  } else if (ok) {
    // Calls no wrapper saw are CUPTI's API records: counted with the
    // rest, once (a record of a wrapped call has its correlation id).
    std::unordered_set<uint32_t> wrapped;
    for (const HostEvent& e : w.host_events) {
      if (e.correlation_id != 0) wrapped.insert(e.correlation_id);
    }
    size_t api_records = 0, gpu_records = 0;
    for (const DeviceRecord& r : w.device_records) {
      auto kind = static_cast<DeviceKind>(r.kind);
      if (kind == DeviceKind::kRuntimeApi || kind == DeviceKind::kDriverApi) {
        if (r.correlation_id == 0 || !wrapped.count(r.correlation_id)) ++api_records;
      } else if (kind == DeviceKind::kKernel || kind == DeviceKind::kMemcpy || kind == DeviceKind::kMemset) ++gpu_records;
    }
    if (!note.empty()) Log().info("{}", note);
    // Whose window and where it went: the processes of one job log lines
    // that can be told apart, each naming its own files.
    std::string files_text;
    for (const std::string& f : files) files_text += (files_text.empty() ? "" : ", ") + f;
    Log().info("window steps {}-{}{} of pid {}{} written: {} CUDA calls, {} kernels/copies/memsets on the GPU; "
               "files: {}",
               first, last, w.meta.partial ? " (partial)" : "", w.meta.pid,
               w.meta.rank_known ? fmt::format(" (rank {})", w.meta.rank) : std::string(),
               w.host_events.size() + api_records, gpu_records, files_text.empty() ? "none" : files_text);
  } else {
    Log().warn("window steps {}-{} not written: {}", first, last, error);
  }
  // What another profiler in the process cost this window (the data-loss
  // finding of its summary says it too).
  if (ok && w.meta.losses.device_records_elsewhere != 0) {
    Log().info("window steps {}-{}: {} launches have no GPU record: CUPTI wrote them for another profiler in the "
               "process, which held CUPTI's activity API (this CUPTI lets one client use it)",
               first, last, w.meta.losses.device_records_elsewhere);
  }
}

bool WriterThread::Drain(uint64_t timeout_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_.joinable()) return queue_.empty();
  return idle_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [this] { return queue_.empty() && !busy_; });
}

void WriterThread::ResetAfterFork() {
  held_.reset();  // the parent's
  new (&mu_) std::mutex();
  new (&wake_) std::condition_variable();
  new (&idle_) std::condition_variable();
  // The parent's thread object is meaningless here; detach the handle
  // without touching the (non-existent) thread.
  new (&thread_) std::thread();
  queue_.clear();
  busy_ = false;
  stop_ = false;
  thread_started_ = false;
}

uint64_t WriterThread::windows_written() {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

uint64_t WriterThread::windows_failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

}  // namespace prof
