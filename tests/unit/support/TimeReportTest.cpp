#include "support/TimeReport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <regex>
#include <thread>

using namespace lpu::support;

TEST(TimeReportTest, RowsNestInTheOrderAdded) {
  TimeRecorder r;
  Timing top(&r);
  Timing parse = top.add("parse");
  Timing schedule = top.add("schedule");
  Timing bucket = schedule.add("main S=8");
  Timing v1 = bucket.add("variant 1");
  Timing v2 = bucket.add("variant 2");
  r.record(parse.row(), 1, 0.5);
  r.record(schedule.row(), 3, 5);
  r.record(bucket.row(), 3, 5);
  r.record(v2.row(), 2, 2);
  r.record(v1.row(), 2.5, 2.5);
  r.record(v1.row(), 0.5, 0.5); // sums
  std::string out;
  llvm::raw_string_ostream os(out);
  r.print(os, "tool: time per phase");
  EXPECT_EQ(os.str(),
            "===------------------------------------------------------------------------===\n"
            "                             tool: time per phase\n"
            "===------------------------------------------------------------------------===\n"
            "    wall (s)     cpu (s)   wall %  name\n"
            "      1.0000      0.5000    25.0%  parse\n"
            "      3.0000      5.0000    75.0%  schedule\n"
            "      3.0000      5.0000    75.0%    main S=8\n"
            "      3.0000      3.0000    75.0%      variant 1\n"
            "      2.0000      2.0000    50.0%      variant 2\n"
            "      4.0000      5.5000   100.0%  total\n");
}

TEST(TimeReportTest, WithoutARecorderNothingIsRecorded) {
  Timing none;
  EXPECT_FALSE(none);
  EXPECT_FALSE(none.add("x"));
  TimedScope scope(none, "y");
  scope.stop();
}

TEST(TimeReportTest, AScopeRecordsOnceWallAndCpu) {
  TimeRecorder r;
  {
    TimedScope scope(Timing(&r), "spin");
    volatile double x = 0;
    for (int i = 0; i < 2000000; ++i)
      x = x + i;
    scope.stop();
    scope.stop(); // once
  }
  ASSERT_EQ(r.rows().size(), 1u);
  EXPECT_GT(r.rows()[0].wallSeconds, 0);
  EXPECT_GT(r.rows()[0].cpuSeconds, 0);
}

TEST(TimeReportTest, AThreadsCpuTimeIsItsOwn) {
  // A thread that sleeps while another spins: its own CPU time stays near
  // nothing, the process's does not.
  TimeRecorder r;
  Timing top(&r);
  Timing idle = top.add("idle"), process = top.add("process");
  std::atomic<bool> done{false};
  std::thread spinner([&] {
    volatile double x = 0;
    while (!done)
      x = x + 1;
  });
  {
    TimedScope own(idle, CpuClock::Thread);
    TimedScope all(process, CpuClock::Process);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done = true;
  spinner.join();
  auto rows = r.rows();
  EXPECT_LT(rows[0].cpuSeconds, rows[1].cpuSeconds);
}

TEST(TimeReportTest, ManyThreadsRecordIntoTheirRows) {
  TimeRecorder r;
  Timing top(&r);
  std::vector<Timing> rows;
  for (int i = 0; i < 8; ++i)
    rows.push_back(top.add("variant " + std::to_string(i)));
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 100; ++k)
        r.record(rows[i].row(), 1, 1);
    });
  for (std::thread &t : threads)
    t.join();
  for (const TimeRecorder::Row &row : r.rows())
    EXPECT_EQ(row.wallSeconds, 100);
}
