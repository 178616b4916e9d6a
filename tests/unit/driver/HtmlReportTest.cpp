// The HTML report's data by hand-made schedules: spans of one op's
// instructions on a queue (gaps bridged up to the given size), a chip that
// runs another's queues later, the critical path across a transfer, and
// SRAM over time with and without thinning.
#include "driver/HtmlReport.h"

#include "backend/ChipDescription.h"

#include <gtest/gtest.h>

using namespace lpu;
using namespace lpu::driver;
using backend::UnitKind;

namespace {

const backend::ChipDescription &chip() {
  static const backend::ChipDescription c = llvm::cantFail(backend::loadChipDescription("groqchip1"));
  return c;
}

backend::Instr instr(backend::Opcode op) {
  backend::Instr i;
  i.op = op;
  return i;
}

scheduler::OpTiming timing(const char *name, int64_t first, int64_t last) {
  scheduler::OpTiming t;
  t.op = name;
  t.firstCycle = first;
  t.lastCycle = last;
  return t;
}

TEST(HtmlReportTest, SpansBridgeGapsUpToTheLimit) {
  scheduler::Schedule s;
  const scheduler::QueueId q{UnitKind::Vxm, 3, 0};
  for (int64_t c : {10, 11, 12, 20, 21})
    s.add(q, c, instr(backend::Opcode::Copy));
  s.ops.push_back(timing("add", 10, 21));
  s.ops.back().ranges.push_back({UnitKind::Vxm, 3, 0, 5});
  const int64_t issue = chip().timingOf(backend::Opcode::Copy, s.queues[q][0].instr.dtype).issue;
  std::vector<TimelineRow> rows;
  std::vector<TimelineSpan> spans;
  timelineOf(s, chip(), 0, rows, spans);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].unit, UnitKind::Vxm);
  EXPECT_EQ(rows[0].index, 3u);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].start, 10);
  EXPECT_EQ(spans[0].end, 12 + issue);
  EXPECT_EQ(spans[0].busy, 3 * issue);
  EXPECT_EQ(spans[1].start, 20);
  // A gap of 8 cycles bridged: one span, still 5 instructions' busy time.
  timelineOf(s, chip(), 8, rows, spans);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].end, 21 + issue);
  EXPECT_EQ(spans[0].busy, 5 * issue);
}

TEST(HtmlReportTest, ASharingChipShowsTheQueuesItRunsLater) {
  scheduler::Schedule s;
  s.add(scheduler::QueueId{UnitKind::Mxm, 1, 0}, 100, instr(backend::Opcode::Copy));
  s.ops.push_back(timing("matmul", 100, 100));
  s.ops.back().ranges.push_back({UnitKind::Mxm, 1, 0, 1});
  s.ops.push_back(s.ops.back());
  s.ops.back().chip = 1;
  s.sharedCode[1] = backend::SharedCode{0, 50, {}};
  std::vector<TimelineRow> rows;
  std::vector<TimelineSpan> spans;
  timelineOf(s, chip(), 0, rows, spans);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].chip, 1u);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].start, 100);
  EXPECT_EQ(spans[1].start, 150);
  EXPECT_EQ(spans[1].op, 1u);
}

TEST(HtmlReportTest, CriticalPathFollowsTheLatestInputAcrossTransfers) {
  scheduler::Schedule s;
  s.ops.push_back(timing("matmul", 0, 100)); // 0: early
  s.ops.push_back(timing("matmul", 0, 300)); // 1: late, sent
  s.ops.back().lastRowReady = 301;
  s.ops.push_back(timing("send", 302, 320)); // 2
  s.ops.back().inputs = {1};
  s.ops.back().sends = 7;
  s.ops.push_back(timing("recv", 500, 520)); // 3, on the other chip
  s.ops.back().receives = 7;
  s.ops.back().chip = 1;
  s.ops.push_back(timing("add", 530, 600)); // 4: reads 0 and 3
  s.ops.back().inputs = {0, 3};
  s.ops.back().chip = 1;
  EXPECT_EQ(criticalPath(s), (std::vector<uint32_t>{4, 3, 2, 1}));
}

TEST(HtmlReportTest, SramOverTimeStepsAndThinning) {
  scheduler::Schedule s;
  s.sram.push_back({0, 1000, 64, 0}); // a parameter
  s.sram.push_back({10, 19, 32, 0});  // a tensor read last at 19
  s.sram.push_back({15, 30, 16, 0});
  s.sram.push_back({0, 5, 999, 1}); // another chip's
  auto steps = sramOverTime(s, 0, 0);
  std::vector<std::pair<int64_t, uint64_t>> expected{
      {0, 64}, {10, 96}, {15, 112}, {20, 80}, {31, 64}, {1001, 0}};
  EXPECT_EQ(steps, expected);
  // Two points: each the most bytes of its half of the cycles.
  auto thin = sramOverTime(s, 0, 2);
  ASSERT_LE(thin.size(), 3u);
  EXPECT_EQ(thin.front().second, 112u);
  EXPECT_EQ(thin.back().second, 64u);
}

} // namespace
