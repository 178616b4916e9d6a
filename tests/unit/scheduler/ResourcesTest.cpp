#include "scheduler/Resources.h"

#include <gtest/gtest.h>

using namespace lpu;
using namespace lpu::scheduler;
using backend::StreamRef;
using backend::UnitKind;

namespace {

backend::ChipDescription chip() {
  auto c = backend::loadChipDescription("groqchip1");
  EXPECT_TRUE(bool(c));
  return *c;
}

TEST(CycleSet, SetTestAny) {
  CycleSet s;
  EXPECT_FALSE(s.test(5));
  s.set(5, true);
  s.set(1000, true);
  EXPECT_TRUE(s.test(5));
  EXPECT_TRUE(s.test(1000));
  EXPECT_FALSE(s.test(6));
  EXPECT_TRUE(s.any(2, 4));  // 2..5
  EXPECT_FALSE(s.any(6, 4)); // 6..9
  s.set(5, false);
  EXPECT_FALSE(s.test(5));
  EXPECT_FALSE(s.test(-1));
}

TEST(Resources, QueueBusyForItsIssueInterval) {
  auto c = chip();
  Resources r(c);
  EXPECT_TRUE(r.queueFree(UnitKind::Mxm, 0, 10, 4));
  r.setQueue(UnitKind::Mxm, 0, 10, 4, true); // an f16 mm: busy 10..13
  EXPECT_FALSE(r.queueFree(UnitKind::Mxm, 0, 13, 1));
  EXPECT_FALSE(r.queueFree(UnitKind::Mxm, 0, 7, 4)); // 7..10 overlaps
  EXPECT_TRUE(r.queueFree(UnitKind::Mxm, 0, 14, 4));
  EXPECT_TRUE(r.queueFree(UnitKind::Mxm, 1, 10, 4)); // another queue
  EXPECT_FALSE(r.queueFree(UnitKind::Mxm, 0, -1, 1)); // before the start
}

TEST(Resources, OneReadAndOneWritePerSlicePerCycle) {
  auto c = chip();
  Resources r(c);
  r.setPort(3, false, 7, true);
  EXPECT_FALSE(r.portFree(3, false, 7));
  EXPECT_TRUE(r.portFree(3, true, 7)); // the write port is separate
  EXPECT_TRUE(r.portFree(4, false, 7));
  EXPECT_TRUE(r.portFree(3, false, 8));
  r.setPort(3, false, 7, false);
  EXPECT_TRUE(r.portFree(3, false, 7));
}

TEST(Resources, PortsCountedWhereASliceHasTwo) {
  auto c = chip();
  c.memReadPorts = 2;
  Resources r(c);
  r.setPort(3, false, 7, true);
  EXPECT_TRUE(r.portFree(3, false, 7)); // one of two taken
  r.setPort(3, false, 7, true);
  EXPECT_FALSE(r.portFree(3, false, 7));
  EXPECT_TRUE(r.portFree(3, true, 7)); // still one write port: a bit
  r.setPort(3, true, 7, true);
  EXPECT_FALSE(r.portFree(3, true, 7));
  r.setPort(3, false, 7, false);
  EXPECT_TRUE(r.portFree(3, false, 7));
  EXPECT_TRUE(r.portFree(3, false, 100000)); // far past anything set
}

TEST(Resources, OneEmissionPerStreamPerCycle) {
  auto c = chip();
  Resources r(c);
  StreamSegment a{StreamRef::East, 10, 2, 20};
  r.reserveStream(0, a);
  // Another value put on e0 in cycle 10, anywhere: a second writer.
  StreamSegment b{StreamRef::East, 10, 60, 12};
  EXPECT_FALSE(r.streamFree(0, b));
  EXPECT_TRUE(r.streamFree(1, b));
  StreamSegment west{StreamRef::West, 10, 60, 12};
  EXPECT_TRUE(r.streamFree(0, west));
  r.releaseStream(0, a);
  EXPECT_TRUE(r.streamFree(0, b));
}

TEST(Resources, ShadowingOnTheSameDiagonal) {
  auto c = chip();
  Resources r(c);
  // Put on e0 at position 2 in cycle 10, read downstream until cycle 20
  // (position 12): it lies on the diagonal pos - cycle = -8.
  StreamSegment a{StreamRef::East, 10, 2, 20};
  r.reserveStream(0, a);
  // A value put at position 7 in cycle 15 sits on that diagonal while a is
  // still being read: a reader of a at position 12 would see it instead.
  EXPECT_FALSE(r.streamFree(0, StreamSegment{StreamRef::East, 15, 7, 18}));
  // Another diagonal at the same time is fine...
  EXPECT_TRUE(r.streamFree(0, StreamSegment{StreamRef::East, 15, 30, 18}));
  // ...and so is the same diagonal after a's last read.
  EXPECT_TRUE(r.streamFree(0, StreamSegment{StreamRef::East, 21, 13, 25}));
  // An earlier value on the diagonal still read when a is put on: a
  // shadows it.
  EXPECT_FALSE(r.streamFree(0, StreamSegment{StreamRef::East, 8, 0, 11}));
  EXPECT_TRUE(r.streamFree(0, StreamSegment{StreamRef::East, 8, 0, 9}));
  // Westward diagonals run the other way: pos + cycle.
  StreamSegment w{StreamRef::West, 10, 80, 20}; // 90
  r.reserveStream(3, w);
  EXPECT_FALSE(r.streamFree(3, StreamSegment{StreamRef::West, 14, 76, 16}));
  EXPECT_TRUE(r.streamFree(3, StreamSegment{StreamRef::West, 14, 86, 16}));
}

TEST(Resources, ReleasingOneValueOfADiagonalKeepsTheOthers) {
  auto c = chip();
  Resources r(c);
  // Two values on diagonal -8 of e0, one after the other.
  StreamSegment a{StreamRef::East, 10, 2, 12}, b{StreamRef::East, 14, 6, 20};
  r.reserveStream(0, a);
  r.reserveStream(0, b);
  StreamSegment overA{StreamRef::East, 11, 3, 11}, overB{StreamRef::East, 16, 8, 17};
  EXPECT_FALSE(r.streamFree(0, overA));
  EXPECT_FALSE(r.streamFree(0, overB));
  r.releaseStream(0, a);
  EXPECT_TRUE(r.streamFree(0, overA));
  EXPECT_FALSE(r.streamFree(0, overB)); // b is still on the stream
  // Releasing a value that was never reserved changes nothing.
  r.releaseStream(0, StreamSegment{StreamRef::East, 30, 22, 31});
  EXPECT_FALSE(r.streamFree(0, overB));
  r.releaseStream(0, b);
  EXPECT_TRUE(r.streamFree(0, overB));
  EXPECT_TRUE(r.streamFree(0, b));
}

TEST(Resources, ADiagonalsLaterValuesReleasedInAnyOrder) {
  auto c = chip();
  Resources r(c);
  // Three values on diagonal -8 of e0: the first is kept apart from the
  // others, and any of them may go first.
  StreamSegment a{StreamRef::East, 10, 2, 12}, b{StreamRef::East, 14, 6, 20}, d{StreamRef::East, 30, 22, 34};
  StreamSegment overA{StreamRef::East, 11, 3, 11}, overB{StreamRef::East, 16, 8, 17},
      overD{StreamRef::East, 32, 24, 33};
  for (const StreamSegment &s : {a, b, d})
    r.reserveStream(0, s);
  for (const StreamSegment &s : {overA, overB, overD})
    EXPECT_FALSE(r.streamFree(0, s));
  r.releaseStream(0, b); // a later one
  EXPECT_FALSE(r.streamFree(0, overA));
  EXPECT_TRUE(r.streamFree(0, overB));
  EXPECT_FALSE(r.streamFree(0, overD));
  r.releaseStream(0, a); // the first: d takes its place
  EXPECT_TRUE(r.streamFree(0, overA));
  EXPECT_FALSE(r.streamFree(0, overD));
  r.reserveStream(0, b); // back, behind d
  EXPECT_FALSE(r.streamFree(0, overB));
  r.releaseStream(0, d);
  EXPECT_TRUE(r.streamFree(0, overD));
  EXPECT_FALSE(r.streamFree(0, overB));
  r.releaseStream(0, b);
  for (const StreamSegment &s : {overA, overB, overD})
    EXPECT_TRUE(r.streamFree(0, s));
}

} // namespace
