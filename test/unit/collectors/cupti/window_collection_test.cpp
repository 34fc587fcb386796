// A window's collection as decisions: WindowCollection is fed hand-made
// events (flush done, counts with their times, stop answered, woke, last
// window or not) and its actions are checked. No CUPTI, fake or real, and
// no clock: every time is given.
#include "collectors/cupti/window_collection.h"

#include <catch2/catch.hpp>
#include <utility>
#include <vector>

namespace prof::cupti {
namespace {

using Do = WindowCollection::Do;
using Phase = WindowCollection::Phase;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kEnd = 1'000 * kMs;            // the window's end
constexpr uint64_t kDeadline = kEnd + 2'000 * kMs;  // when waiting stops
constexpr uint64_t kSettled = kEnd + WindowCollection::kApiRecordGraceNs;

// A count at now_ns with nothing awaited, no buffer held, a later window
// recording (so nothing is forced by default).
WindowCollection::Counts AllIn(uint64_t now_ns) {
  WindowCollection::Counts c;
  c.now_ns = now_ns;
  return c;
}

// Start, the first flush (not forced), and the first count.
WindowCollection::Action FirstRound(WindowCollection& w, const WindowCollection::Counts& counts) {
  WindowCollection::Action a = w.Start();
  REQUIRE(a.what == Do::kFlush);
  CHECK_FALSE(a.force_if_last);
  a = w.OnFlushed(/*forced=*/false, counts.now_ns);
  REQUIRE(a.what == Do::kDrainAndCount);
  return w.OnCounted(counts);
}

// From a count at which the window is complete: the last-window question,
// answered no, seals it.
void ExpectSealedAfterAsking(WindowCollection& w, WindowCollection::Action a) {
  REQUIRE(a.what == Do::kAskLast);
  a = w.OnLastKnown(/*finishing=*/false);
  CHECK(a.what == Do::kSeal);
  CHECK(w.phase() == Phase::kDone);
}

TEST_CASE("a settled window with every record in stops recording, flushes once more and is sealed with no loss",
          "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, /*api_kinds=*/true);
  CHECK(w.settled_ns() == kSettled);
  WindowCollection::Action a = FirstRound(w, AllIn(kSettled + kMs));
  REQUIRE(a.what == Do::kStopRecording);
  a = w.OnStopTried(/*stopped=*/true);
  // Stopping delivers what was still on its way: flush and count at once.
  REQUIRE(a.what == Do::kFlush);
  CHECK_FALSE(a.force_if_last);
  REQUIRE(w.OnFlushed(false, kSettled + 2 * kMs).what == Do::kDrainAndCount);
  ExpectSealedAfterAsking(w, w.OnCounted(AllIn(kSettled + 2 * kMs)));
  CHECK(w.stopped());
  CHECK(w.device_records_missing() == 0);
  CHECK(w.api_records_missing() == 0);
}

TEST_CASE("recording is not stopped while a call of the window is still in progress", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  c.in_progress = 1;  // a blocking copy whose device work is enqueued after the step's end
  WindowCollection::Action a = FirstRound(w, c);
  CHECK(a.what == Do::kSleep);
  CHECK_FALSE(w.stopped());
}

TEST_CASE("without API records the window settles at its end, with them 50 ms later", "[window_collection]") {
  WindowCollection with_api(kEnd, kDeadline, /*api_kinds=*/true);
  WindowCollection::Action a = FirstRound(with_api, AllIn(kEnd + 10 * kMs));
  // Calls with no callback may still be writing their records: wait.
  CHECK(a.what == Do::kSleep);

  WindowCollection without(kEnd, kDeadline, /*api_kinds=*/false);
  CHECK(without.settled_ns() == kEnd);
  a = FirstRound(without, AllIn(kEnd + 10 * kMs));
  REQUIRE(a.what == Do::kStopRecording);
  REQUIRE(without.OnStopTried(true).what == Do::kFlush);
  REQUIRE(without.OnFlushed(false, kEnd + 11 * kMs).what == Do::kDrainAndCount);
  ExpectSealedAfterAsking(without, without.OnCounted(AllIn(kEnd + 11 * kMs)));
}

TEST_CASE("records still on their way are polled, backing off from 1 ms to 16 ms", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kEnd + kMs);
  c.device_records = 2;
  c.in_progress = 1;
  WindowCollection::Action a = FirstRound(w, c);
  std::vector<uint64_t> sleeps;
  for (int round = 0; round < 7; ++round) {
    REQUIRE(a.what == Do::kSleep);
    sleeps.push_back(a.sleep_ns);
    a = w.OnWoke();
    REQUIRE(a.what == Do::kFlush);
    CHECK_FALSE(a.force_if_last);  // device records are awaited: a forced flush would untime them
    REQUIRE(w.OnFlushed(false, c.now_ns).what == Do::kDrainAndCount);
    a = w.OnCounted(c);
  }
  CHECK(sleeps == std::vector<uint64_t>{1 * kMs, 2 * kMs, 4 * kMs, 8 * kMs, 16 * kMs, 16 * kMs, 16 * kMs});
}

TEST_CASE("a stop that does not take is asked for again at the next round", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  c.device_records = 1;  // a kernel still running
  WindowCollection::Action a = FirstRound(w, c);
  REQUIRE(a.what == Do::kStopRecording);
  a = w.OnStopTried(/*stopped=*/false);  // a later window is recording: it stops in its own collection
  REQUIRE(a.what == Do::kSleep);
  REQUIRE(w.OnWoke().what == Do::kFlush);
  REQUIRE(w.OnFlushed(false, c.now_ns).what == Do::kDrainAndCount);
  CHECK(w.OnCounted(c).what == Do::kStopRecording);
}

TEST_CASE("at the deadline what never came by the last look is reported missing and nothing more is awaited", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kDeadline);
  c.device_records = 3;
  c.api_records = 2;
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  REQUIRE(w.OnStopTried(true).what == Do::kFlush);
  REQUIRE(w.OnFlushed(false, kDeadline + kMs).what == Do::kDrainAndCount);
  c.now_ns = kDeadline + kMs;
  c.device_records = 1;  // two came with the last flush
  c.device_kinds.copies = 1;
  ExpectSealedAfterAsking(w, w.OnCounted(c));
  CHECK(w.device_records_missing() == 1);
  // By kind, as the last look found them (not the first look's).
  CHECK(w.device_records_missing_kinds().copies == 1);
  CHECK(w.device_records_missing_kinds().total() == 1);
  CHECK(w.api_records_missing() == 2);
}

TEST_CASE("a buffer CUPTI still holds at the deadline is forced out and counted before the window is sealed",
          "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kDeadline + kMs);
  c.buffer_held = true;
  c.device_records = 1;
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  WindowCollection::Action a = w.OnStopTried(false);
  REQUIRE(a.what == Do::kForceFlush);
  REQUIRE(w.OnFlushed(true, c.now_ns).what == Do::kDrainAndCount);
  c.device_records = 0;  // it was in that buffer
  ExpectSealedAfterAsking(w, w.OnCounted(c));
  CHECK(w.device_records_missing() == 0);
}

// The held buffer of the test above, past the settle time: another scenario.
TEST_CASE("a buffer held past the settle time is forced out at once when no later window records",
          "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  c.buffer_held = true;
  c.no_later_window = true;
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  WindowCollection::Action a = w.OnStopTried(false);
  REQUIRE(a.what == Do::kFlush);  // no sleep: nothing else is awaited
  CHECK(a.force_if_last);
  // The forced flush ran after settled_ns: a buffer CUPTI still lists as
  // held since before it has been emptied by it.
  REQUIRE(w.OnFlushed(/*forced=*/true, kSettled + 2 * kMs).what == Do::kDrainAndCount);
  c.now_ns = kSettled + 2 * kMs;
  REQUIRE(w.OnCounted(c).what == Do::kStopRecording);  // the stop did not take: asked again
  ExpectSealedAfterAsking(w, w.OnStopTried(false));
}

TEST_CASE("while a later window records, a held buffer is waited for rather than forced out", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  c.buffer_held = true;
  c.no_later_window = false;
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  REQUIRE(w.OnStopTried(false).what == Do::kSleep);
  WindowCollection::Action a = w.OnWoke();
  REQUIRE(a.what == Do::kFlush);
  CHECK_FALSE(a.force_if_last);
  // The flush was not forced (the collector found a later window
  // recording): the buffer still counts as held, and the window waits on.
  REQUIRE(w.OnFlushed(false, kSettled + 3 * kMs).what == Do::kDrainAndCount);
  REQUIRE(w.OnCounted(c).what == Do::kStopRecording);
  CHECK(w.OnStopTried(false).what == Do::kSleep);
}

TEST_CASE("only API records missing: the flush after the wait asks to be forced", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  c.api_records = 1;  // in a buffer that also holds a kernel still running
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  REQUIRE(w.OnStopTried(false).what == Do::kSleep);
  WindowCollection::Action a = w.OnWoke();
  REQUIRE(a.what == Do::kFlush);
  CHECK(a.force_if_last);
}

TEST_CASE("API records CUPTI may have dropped get 50 ms once every call returned, not the whole deadline",
          "[window_collection]") {
  auto run = [](bool may_have_dropped) {
    WindowCollection w(kEnd, kDeadline, true);
    WindowCollection::Counts c = AllIn(kSettled + kMs);
    c.api_records = 1;
    c.may_have_dropped = may_have_dropped;
    REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
    WindowCollection::Action a = w.OnStopTried(true);
    // The round after the stop is the first to see every call returned.
    const uint64_t returned = kSettled + 2 * kMs;
    for (uint64_t now : {returned, returned + WindowCollection::kApiRecordGraceNs,
                         returned + WindowCollection::kApiRecordGraceNs + 1}) {
      if (a.what == Do::kSleep) a = w.OnWoke();
      REQUIRE(a.what == Do::kFlush);
      REQUIRE(w.OnFlushed(false, now).what == Do::kDrainAndCount);
      c.now_ns = now;
      a = w.OnCounted(c);
      if (a.what == Do::kAskLast) return std::make_pair(now - returned, w.api_records_missing());
    }
    return std::make_pair(uint64_t{0}, uint64_t{0});
  };
  auto [waited, missing] = run(/*may_have_dropped=*/true);
  CHECK(waited == WindowCollection::kApiRecordGraceNs + 1);
  CHECK(missing == 1);
  // With no drop possible the record does come: it is waited for.
  CHECK(run(/*may_have_dropped=*/false).first == 0);
}

TEST_CASE("once the exit path detached CUPTI, the window decodes once more and is sealed", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kEnd + kMs);
  c.device_records = 4;
  c.in_progress = 1;
  c.detached = true;
  WindowCollection::Action a = FirstRound(w, c);
  REQUIRE(a.what == Do::kDrainAndCount);  // the detach's forced flush may have come after this round's decoding
  c.device_records = 3;
  ExpectSealedAfterAsking(w, w.OnCounted(c));
  CHECK(w.device_records_missing() == 3);
}

TEST_CASE("an exiting process's window stops recording and counts as settled at once", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kEnd + kMs);  // before settled_ns
  c.exited = true;
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  ExpectSealedAfterAsking(w, w.OnStopTried(false));
}

TEST_CASE("the schedule's last window forces out what CUPTI still holds, counts, and is sealed",
          "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  WindowCollection::Counts c = AllIn(kSettled + kMs);
  REQUIRE(FirstRound(w, c).what == Do::kStopRecording);
  REQUIRE(w.OnStopTried(false).what == Do::kAskLast);
  REQUIRE(w.OnLastKnown(/*finishing=*/true).what == Do::kForceFlush);
  REQUIRE(w.OnFlushed(true, c.now_ns).what == Do::kDrainAndCount);
  c.api_records = 1;  // still not in after the forced flush
  WindowCollection::Action a = w.OnCounted(c);
  CHECK(a.what == Do::kSeal);  // asked once only
  CHECK(w.api_records_missing() == 1);
}

TEST_CASE("an event out of turn ends the collection instead of looping", "[window_collection]") {
  WindowCollection w(kEnd, kDeadline, true);
  CHECK(w.OnWoke().what == Do::kSeal);
  CHECK(w.phase() == Phase::kDone);
  CHECK(w.Start().what == Do::kSeal);
  WindowCollection counted(kEnd, kDeadline, true);
  CHECK(counted.OnCounted(AllIn(kEnd)).what == Do::kSeal);
  WindowCollection asked(kEnd, kDeadline, true);
  CHECK(asked.OnLastKnown(true).what == Do::kSeal);
}

}  // namespace
}  // namespace prof::cupti
