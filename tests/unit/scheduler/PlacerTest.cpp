#include "scheduler/Placer.h"

#include <gtest/gtest.h>

#include <map>

using namespace lpu;
using namespace lpu::scheduler;
using backend::Instr;
using backend::Opcode;

namespace {

backend::ChipDescription chip() {
  auto c = backend::loadChipDescription("groqchip1");
  EXPECT_TRUE(bool(c));
  return *c;
}

// read x (slices 0,1) -> add f16 with read y (slices 44,45) -> write (2,3)
WorkTree addTree(uint32_t addr) {
  WorkTree t;
  t.write({2, 3}, addr, -1);
  Instr add;
  add.op = Opcode::Add;
  add.dtype = backend::DType::F16;
  int a = t.read({0, 1}, addr), b = t.read({44, 45}, addr);
  t.nodes[0].inputs = {t.add(add, {a, b})};
  return t;
}

TEST(Placer, ValuesArriveInTheCycleTheirConsumerIssues) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  auto placed = p.place(addTree(0), 0);
  ASSERT_TRUE(placed);
  int64_t addCycle = -1;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &t : list)
      if (t.instr.op == Opcode::Add)
        addCycle = t.cycle;
  ASSERT_GE(addCycle, 0);
  unsigned readLatency = c.timingOf(Opcode::Read, backend::DType::Bool).latency;
  unsigned addLatency = c.timingOf(Opcode::Add, backend::DType::F16).latency;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &t : list) {
      int64_t dist = std::abs(int64_t(c.slicePosition(t.instr.unit)) - int64_t(c.vxmPosition()));
      if (t.instr.op == Opcode::Read) {
        EXPECT_EQ(t.cycle + readLatency + dist, addCycle) << "slice " << t.instr.unit;
      }
      if (t.instr.op == Opcode::Write) {
        EXPECT_EQ(addCycle + addLatency + dist, t.cycle) << "slice " << t.instr.unit;
      }
    }
  // West slices stream east to the VXM, east slices west; the result goes
  // west to slices 2 and 3.
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &t : list) {
      if (t.instr.op == Opcode::Add) {
        EXPECT_EQ(t.instr.src0.dir, backend::StreamRef::East);
        EXPECT_EQ(t.instr.src1.dir, backend::StreamRef::West);
        EXPECT_EQ(t.instr.dst.dir, backend::StreamRef::West);
      }
    }
}

TEST(Placer, APipelinedLoopIssuesOneVectorPerCycle) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  int64_t prev = 0, first = -1, last = -1;
  for (uint32_t v = 0; v < 50; ++v) {
    auto placed = p.place(addTree(v), prev);
    ASSERT_TRUE(placed);
    prev = placed->firstCycle;
    if (first < 0)
      first = placed->firstCycle;
    last = placed->firstCycle;
  }
  // One read port per slice: one vector per cycle, no more, no gaps.
  EXPECT_EQ(last - first, 49);
}

TEST(Placer, ASecondVectorOfASliceInOneCycleComesThroughACopy) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  // Two different vectors of one slice needed in the same cycle: one of
  // them goes through a VXM copy, so its read issues a cycle earlier.
  WorkTree t;
  t.write({2, 3}, 0, -1);
  Instr add;
  add.op = Opcode::Add;
  add.dtype = backend::DType::F16;
  int a = t.read({0, 1}, 0), b = t.read({0, 1}, 1);
  t.nodes[0].inputs = {t.add(add, {a, b})};
  ASSERT_TRUE(p.place(std::move(t), 0));
  std::map<uint32_t, int64_t> readOf; // address -> cycle of its slice 0 read
  int copies = 0;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &ti : list) {
      if (ti.instr.op == Opcode::Read && ti.instr.unit == 0)
        readOf[ti.instr.addr] = ti.cycle;
      copies += ti.instr.op == Opcode::Copy;
    }
  ASSERT_EQ(readOf.size(), 2u);
  EXPECT_EQ(std::abs(readOf[0] - readOf[1]), 1);
  EXPECT_EQ(copies, 1);
}

TEST(Placer, AnImpossibleTreeFailsInsteadOfSearchingForever) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  // Two gathers of one slice in the same cycle: no copy moves a gather.
  WorkTree t;
  t.write({2}, 0, -1);
  Instr gather;
  gather.op = Opcode::Gather;
  gather.dtype = backend::DType::I8;
  gather.unit = 20;
  Instr add;
  add.op = Opcode::Add;
  add.dtype = backend::DType::I8;
  int m1 = t.read({10, 11}, 0), m2 = t.read({10, 11}, 0);
  int g1 = t.add(gather, {m1, m1});
  gather.addr = 7;
  int g2 = t.add(gather, {m2, m2});
  t.nodes[0].inputs = {t.add(add, {g1, g2})};
  EXPECT_FALSE(p.place(std::move(t), 0));
  EXPECT_EQ(p.lastFailure(), Placer::Failure::PortTwice);
}

TEST(Placer, AnOperandNarrowerThanItsConsumerReadsIsRefused) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  // An f32 add of an f16 vector: the simulator would find nothing on two
  // of the four streams it reads.
  WorkTree t;
  t.write({2, 3, 4, 5}, 0, -1);
  Instr add;
  add.op = Opcode::Add;
  add.dtype = backend::DType::F32;
  int a = t.read({0, 1}, 0), b = t.read({44, 45, 46, 47}, 0);
  t.nodes[0].inputs = {t.add(add, {a, b})};
  EXPECT_FALSE(p.place(std::move(t), 0));
  EXPECT_EQ(p.lastFailure(), Placer::Failure::OperandWidth);
}

TEST(Placer, ATreeWaitsHoweverLongItsQueueStaysBusy) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  // A weight load on MXM queue 1, taken in each of 100,000 cycles.
  Instr lw;
  lw.op = Opcode::LoadWeights;
  lw.dtype = backend::DType::F16;
  constexpr int64_t kBusy = 100000;
  for (int64_t cycle = 0; cycle < kBusy; ++cycle)
    ASSERT_EQ(p.placeAlone(lw, 1, cycle), cycle);
  WorkTree t;
  Instr load;
  load.op = Opcode::LoadWeights;
  load.dtype = backend::DType::F16;
  t.add(load, {}, 1);
  t.nodes[0].inputs = {t.read({0, 1}, 0)};
  auto placed = p.place(std::move(t), 0);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->rootCycle, kBusy);
}

TEST(Placer, ATreeThatFitsNowhereFailsPastTheHorizon) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  // Two accumulator reads on one MXM queue in one cycle: no cycle, however
  // late, has the queue twice.
  Instr busy;
  busy.op = Opcode::LoadWeights;
  busy.dtype = backend::DType::F16;
  p.placeAlone(busy, 1, 500);
  WorkTree t;
  t.write({2, 3, 4, 5}, 0, -1);
  Instr acc;
  acc.op = Opcode::AccRead;
  acc.dtype = backend::DType::F32;
  acc.unit = 0;
  Instr add;
  add.op = Opcode::Add;
  add.dtype = backend::DType::F32;
  int a = t.add(acc, {}, 1);
  acc.addr = 1;
  int b = t.add(acc, {}, 1);
  t.nodes[0].inputs = {t.add(add, {a, b})};
  EXPECT_FALSE(p.place(std::move(t), 0));
  EXPECT_EQ(p.lastFailure(), Placer::Failure::NoCycle);
}

} // namespace

namespace {

// read x (slices `from`) -> rotate on the SXM of `east` -> write (slices `to`)
WorkTree rotateTree(std::vector<uint16_t> from, std::vector<uint16_t> to, bool east) {
  WorkTree t;
  t.write(to, 0, -1);
  Instr rot;
  rot.op = Opcode::Rotate;
  rot.dtype = backend::DType::F16;
  rot.count = 5;
  rot.unit = east ? 1 : 0;
  t.nodes[0].inputs = {t.add(rot, {t.read(from, 0)})};
  return t;
}

} // namespace

TEST(Placer, SxmWorkRunsOnTheChosenHemisphereInExactTime) {
  auto c = chip();
  for (bool east : {false, true}) {
    Schedule s;
    Placer p(c, s);
    std::vector<uint16_t> from = east ? std::vector<uint16_t>{60, 61} : std::vector<uint16_t>{4, 5};
    std::vector<uint16_t> to = east ? std::vector<uint16_t>{70, 71} : std::vector<uint16_t>{10, 11};
    ASSERT_TRUE(p.place(rotateTree(from, to, east), 0));
    unsigned sxmPos = c.sxmPosition(east);
    int64_t rotCycle = -1;
    for (const auto &[q, list] : s.queues)
      for (const TimedInstr &t : list)
        if (t.instr.op == Opcode::Rotate) {
          rotCycle = t.cycle;
          // The queue decides the SXM: it is of the asked hemisphere, and
          // the recorded instruction keeps unit 0 (canonical form).
          EXPECT_EQ(q.unit, backend::UnitKind::Sxm);
          EXPECT_EQ(*c.queueIsEast(backend::UnitKind::Sxm, q.index), east);
          EXPECT_EQ(t.instr.unit, 0u);
          EXPECT_EQ(t.instr.count, 5u);
        }
    ASSERT_GE(rotCycle, 0);
    unsigned readLatency = c.timingOf(Opcode::Read, backend::DType::Bool).latency;
    unsigned rotLatency = c.timingOf(Opcode::Rotate, backend::DType::F16).latency;
    for (const auto &[q, list] : s.queues)
      for (const TimedInstr &t : list) {
        int64_t dist = std::abs(int64_t(c.slicePosition(t.instr.unit)) - int64_t(sxmPos));
        if (t.instr.op == Opcode::Read) {
          EXPECT_EQ(t.cycle + readLatency + dist, rotCycle) << "slice " << t.instr.unit;
        }
        if (t.instr.op == Opcode::Write) {
          EXPECT_EQ(rotCycle + rotLatency + dist, t.cycle) << "slice " << t.instr.unit;
        }
      }
  }
}

// A gather takes its slice's read port: a read of the same slice in the
// same cycle must move.
TEST(Placer, GatherTakesTheReadPort) {
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  auto tree = [](Opcode op) {
    WorkTree t;
    t.write({20}, 0, -1);
    Instr g;
    g.op = op;
    g.dtype = backend::DType::I8;
    g.unit = 10;
    int map = t.read({30, 31}, 0);
    t.nodes[0].inputs = {t.add(g, {map, map})};
    return t;
  };
  auto first = p.place(tree(Opcode::Gather), 0);
  ASSERT_TRUE(first);
  WorkTree r;
  r.write({21}, 1, -1);
  Instr copy;
  copy.op = Opcode::Copy;
  copy.dtype = backend::DType::I8;
  r.nodes[0].inputs = {r.add(copy, {r.read({10}, 5)})};
  // Find the gather's cycle and ask for a read of slice 10 right then.
  int64_t gatherAt = -1;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &ti : list)
      if (ti.instr.op == Opcode::Gather)
        gatherAt = ti.cycle;
  ASSERT_GE(gatherAt, 0);
  ASSERT_TRUE(p.place(std::move(r), gatherAt));
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &ti : list)
      if (ti.instr.op == Opcode::Read && ti.instr.unit == 10) {
        EXPECT_NE(ti.cycle, gatherAt);
      }
}

namespace {

// The cycles of the add and of the reads of slice 0 in `s`.
std::pair<int64_t, std::vector<int64_t>> addAndReads(const Schedule &s) {
  int64_t add = -1;
  std::vector<int64_t> reads;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &t : list) {
      if (t.instr.op == Opcode::Add)
        add = t.cycle;
      if (t.instr.op == Opcode::Read && t.instr.unit == 0)
        reads.push_back(t.cycle);
    }
  return {add, reads};
}

} // namespace

// The placer rejects a cycle on a busy queue or port before it searches
// streams: the tree still lands in the first cycle where everything is
// free, timed exactly as on an empty chip, only later.
TEST(Placer, BusyQueuesAndPortsDelayTheWholeTreeExactly) {
  auto c = chip();
  Schedule free;
  Placer alone(c, free);
  ASSERT_TRUE(alone.place(addTree(0), 0));
  auto [add0, reads0] = addAndReads(free);
  ASSERT_GE(add0, 0);
  ASSERT_EQ(reads0.size(), 1u);
  const int64_t delay = 7;

  // Every VXM queue busy up to the add's cycle + delay - 1.
  Schedule s1;
  Placer p1(c, s1);
  for (unsigned q = 0; q < c.queues[unsigned(backend::UnitKind::Vxm)]; ++q)
    p1.resources().setQueue(backend::UnitKind::Vxm, q, 0, unsigned(add0 + delay), true);
  ASSERT_TRUE(p1.place(addTree(0), 0));
  auto [add1, reads1] = addAndReads(s1);
  EXPECT_EQ(add1, add0 + delay);
  ASSERT_EQ(reads1.size(), 1u);
  EXPECT_EQ(reads1[0], reads0[0] + delay);

  // Slice 0's read port busy from the read's cycle on, for `delay` cycles.
  Schedule s2;
  Placer p2(c, s2);
  for (int64_t k = 0; k < delay; ++k)
    p2.resources().setPort(0, false, reads0[0] + k, true);
  ASSERT_TRUE(p2.place(addTree(0), 0));
  auto [add2, reads2] = addAndReads(s2);
  EXPECT_EQ(add2, add0 + delay);
  ASSERT_EQ(reads2.size(), 1u);
  EXPECT_EQ(reads2[0], reads0[0] + delay);
}

TEST(Placer, ANodeWaitsForItsOwnEarliestCycleOnly) {
  // x (slices 0,1, far from the VXM) is ready from cycle 0, y (slices
  // 44,45, next to it) only from cycle 100: y's read issues at 100 and x's
  // earlier, as the distance asks, instead of both after 100.
  auto c = chip();
  Schedule s;
  Placer p(c, s);
  WorkTree t = addTree(0);
  t.nodes[2].notBefore = 100; // read y
  auto placed = p.place(std::move(t), 0);
  ASSERT_TRUE(placed);
  // The first read of each (one per byte plane).
  int64_t readX = INT64_MAX, readY = INT64_MAX;
  for (const auto &[q, list] : s.queues)
    for (const TimedInstr &ti : list)
      if (ti.instr.op == Opcode::Read) {
        int64_t &r = ti.instr.unit < 2 ? readX : readY;
        r = std::min(r, ti.cycle);
      }
  EXPECT_EQ(readY, 100);
  EXPECT_LT(readX, 100);
  EXPECT_EQ(placed->firstCycle, readX);
}
