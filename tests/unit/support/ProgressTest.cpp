#include "support/Progress.h"

#include <gtest/gtest.h>

#include <thread>

using namespace lpu::support;

namespace {

/// A line on a string, with a clock the test moves.
struct Fixture {
  std::string out;
  llvm::raw_string_ostream os{out};
  double clock = 100;
  ProgressLine line;
  explicit Fixture(double interval = 0.25, unsigned width = 0)
      : line(os, [&] {
          ProgressLine::Options o;
          o.prefix = "tool";
          o.interval = interval;
          o.width = width;
          o.clock = [this] { return clock; };
          return o;
        }()) {}
  std::string drawn() { return os.str(); }
};

size_t occurrences(llvm::StringRef haystack, llvm::StringRef needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != llvm::StringRef::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace

TEST(ProgressTest, StatusesNestAndADeeperOneIsClearedByAShallowerOne) {
  Fixture f;
  f.line.status(0, "schedule");
  f.line.status(1, "encode S=128");
  f.line.status(2, "variant 2 of 5");
  EXPECT_EQ(f.line.text(), "tool 0:00 schedule: encode S=128: variant 2 of 5");
  f.line.status(1, "decode S=1");
  EXPECT_EQ(f.line.text(), "tool 0:00 schedule: decode S=1");
  f.line.status(0, "emit");
  EXPECT_EQ(f.line.text(), "tool 0:00 emit");
}

TEST(ProgressTest, ElapsedTimeAsAClock) {
  Fixture f;
  f.line.status(0, "run");
  f.clock += 7.9;
  EXPECT_EQ(f.line.text(), "tool 0:07 run");
  f.clock += 12 * 60;
  EXPECT_EQ(f.line.text(), "tool 12:07 run");
  f.clock += 3600;
  EXPECT_EQ(f.line.text(), "tool 1:12:07 run");
}

TEST(ProgressTest, ACountWithItsRateAndItsTotalWhenKnown) {
  Fixture f;
  f.line.status(0, "simulate");
  f.line.count("cycles", 0, 0);
  EXPECT_EQ(f.line.text(), "tool 0:00 simulate: 0 cycles");
  f.clock += 2;
  f.line.count("cycles", 4200000, 0);
  EXPECT_EQ(f.line.text(), "tool 0:02 simulate: 4,200,000 cycles, 2.1M cycles/s");
  f.line.count("ops", 3, 12); // another unit starts again
  f.clock += 1;
  EXPECT_EQ(f.line.text(), "tool 0:03 simulate: 3 of 12 ops (25%), 3 ops/s");
  f.line.status(0, "write outputs"); // a status clears the count
  EXPECT_EQ(f.line.text(), "tool 0:03 write outputs");
}

TEST(ProgressTest, DrawsInPlaceThrottledAndErasesAtTheEnd) {
  Fixture f(0.25);
  f.line.status(0, "parse");
  EXPECT_EQ(f.drawn(), "") << "the first draw waits an interval: a quick run draws nothing";
  f.clock += 0.3;
  f.line.status(0, "check");
  EXPECT_EQ(f.drawn(), "\r\x1b[Ktool 0:00 check");
  f.line.status(0, "lower"); // too soon
  f.line.status(0, "passes");
  EXPECT_EQ(f.drawn(), "\r\x1b[Ktool 0:00 check");
  f.clock += 0.3;
  f.line.tick(); // what the ticker does: the pending status is drawn
  EXPECT_EQ(f.drawn(), "\r\x1b[Ktool 0:00 check\r\x1b[Ktool 0:00 passes");
  f.clock += 0.3;
  f.line.tick(); // nothing changed, the clock still says 0:00
  EXPECT_EQ(occurrences(f.drawn(), "\r"), 2u);
  f.clock += 1;
  f.line.tick(); // the clock moved
  EXPECT_EQ(occurrences(f.drawn(), "tool 0:01 passes"), 1u);
  f.line.finish();
  EXPECT_TRUE(llvm::StringRef(f.drawn()).endswith("passes\r\x1b[K"));
  f.clock += 1;
  f.line.status(0, "emit"); // after finish: nothing
  EXPECT_TRUE(llvm::StringRef(f.drawn()).endswith("passes\r\x1b[K"));
}

TEST(ProgressTest, NothingDrawnNothingErased) {
  Fixture f(0.25);
  f.line.status(0, "parse");
  f.line.finish();
  EXPECT_EQ(f.drawn(), "");
}

TEST(ProgressTest, IntervalZeroDrawsEveryReport) {
  Fixture f(0);
  f.line.status(0, "schedule");
  f.line.status(1, "main");
  EXPECT_EQ(f.drawn(), "\r\x1b[Ktool 0:00 schedule\r\x1b[Ktool 0:00 schedule: main");
}

TEST(ProgressTest, TheLineIsCutToTheWidth) {
  Fixture f(0, 20);
  f.line.status(0, "schedule");
  f.line.status(1, "a very long entry name");
  EXPECT_EQ(f.line.text(), "tool 0:00 schedule:");
  EXPECT_EQ(f.line.text().size(), 19u);
}

TEST(ProgressTest, OtherOutputGoesAboveTheLine) {
  Fixture f(0);
  f.line.status(0, "check");
  f.line.printAbove([&] { f.os << "warning: x\n"; });
  EXPECT_EQ(f.drawn(), "\r\x1b[Ktool 0:00 check\r\x1b[Kwarning: x\n");
  f.line.tick(); // drawn again below it
  EXPECT_TRUE(llvm::StringRef(f.drawn()).endswith("warning: x\n\r\x1b[Ktool 0:00 check"));
  // A stream that does the same for every write.
  ProgressClearingStream through(f.os, &f.line);
  through << "dump\n";
  EXPECT_TRUE(llvm::StringRef(f.drawn()).endswith("check\r\x1b[Kdump\n"));
}

TEST(ProgressTest, ReportsFromManyThreads) {
  Fixture f(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i)
        f.line.status(1, "variant " + std::to_string(t));
    });
  for (std::thread &t : threads)
    t.join();
  f.line.finish();
  // Every draw whole: each starts with the erase and holds one variant.
  const std::string drawn = f.drawn(); // rest points into it
  llvm::StringRef rest = drawn;
  size_t draws = 0;
  while (!rest.empty()) {
    ASSERT_TRUE(rest.consume_front("\r\x1b[K"));
    size_t next = rest.find('\r');
    llvm::StringRef one = rest.take_front(next);
    if (!one.empty()) {
      EXPECT_TRUE(one.startswith("tool 0:00 variant ")) << one.str();
      ++draws;
    }
    rest = rest.drop_front(one.size());
  }
  EXPECT_GE(draws, 1u);
}

TEST(ProgressTest, AHandleWithoutASinkDoesNothing) {
  Progress none;
  EXPECT_FALSE(none);
  none.status("x");
  none.inner().count("cycles", 1);
  Fixture f(0);
  Progress root(&f.line);
  root.status("schedule");
  root.inner().status("main");
  root.inner().inner().status("variant 1");
  EXPECT_EQ(f.line.text(), "tool 0:00 schedule: main: variant 1");
}

TEST(ProgressTest, QuietWinsAndForceShows) {
  EXPECT_FALSE(ProgressLine::wanted(true, true));
  EXPECT_FALSE(ProgressLine::wanted(false, true));
  EXPECT_TRUE(ProgressLine::wanted(true, false));
}
