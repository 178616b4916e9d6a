#include "scheduler/Allocator.h"
#include "scheduler/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace lpu;
using namespace lpu::scheduler;

namespace {

backend::ChipDescription chip() {
  auto c = backend::loadChipDescription("groqchip1");
  EXPECT_TRUE(bool(c));
  return *c;
}

bool overlap(const SramBlock &a, const SramBlock &b) {
  std::set<uint16_t> sa(a.slices.begin(), a.slices.end());
  bool shared = false;
  for (uint16_t s : b.slices)
    shared |= sa.count(s) > 0;
  return shared && a.addr < b.addr + b.vectors && b.addr < a.addr + a.vectors;
}

TEST(SramAllocator, BytePlanesInOneHemisphereAndSpreadOut) {
  auto c = chip();
  SramAllocator a(c);
  std::vector<SramBlock> blocks;
  for (int i = 0; i < 6; ++i) {
    auto b = a.allocate(2, 100, {"t", {}});
    ASSERT_TRUE(bool(b));
    ASSERT_EQ(b->slices.size(), 2u);
    EXPECT_EQ(c.isEastSlice(b->slices[0]), c.isEastSlice(b->slices[1]));
    blocks.push_back(*b);
  }
  // Tensors made one after another do not share a slice (so reading two
  // operands together needs no port twice).
  for (size_t i = 0; i + 1 < blocks.size(); ++i)
    for (uint16_t s : blocks[i].slices)
      for (uint16_t t : blocks[i + 1].slices)
        EXPECT_NE(s, t);
  for (size_t i = 0; i < blocks.size(); ++i)
    for (size_t j = i + 1; j < blocks.size(); ++j)
      EXPECT_FALSE(overlap(blocks[i], blocks[j]));
  EXPECT_EQ(a.peakBytes(), 6u * 2 * 100 * c.lanes);
}

TEST(SramAllocator, ReusesDeadSpaceAfterItsLastRead) {
  auto c = chip();
  SramAllocator a(c);
  // Fill every slice group's first 8000 vectors.
  std::vector<SramBlock> blocks;
  for (unsigned i = 0; i < c.memSlices / 4; ++i) {
    auto b = a.allocate(4, 8000, {"t", {}});
    ASSERT_TRUE(bool(b));
    EXPECT_EQ(b->writableFrom, 0);
    blocks.push_back(*b);
  }
  uint64_t peak = a.peakBytes();
  a.release(blocks[5].id, 1234);
  auto again = a.allocate(4, 8000, {"t", {}});
  ASSERT_TRUE(bool(again));
  EXPECT_EQ(again->slices, blocks[5].slices);
  EXPECT_EQ(again->addr, blocks[5].addr);
  // Writes into the reused block wait for the old tensor's last read.
  EXPECT_EQ(again->writableFrom, 1235);
  EXPECT_EQ(a.peakBytes(), peak);
}

TEST(SramAllocator, SingleBlocksTakeSpaceWritableInTime) {
  auto c = chip();
  SramAllocator a(c);
  const unsigned groups = c.memSlices / 2 / 2; // 2-slice groups per hemisphere
  // In every slice group, from address 0: a block read until cycle 5000,
  // then one read until cycle 100.
  std::vector<SramBlock> late, early;
  for (auto *list : {&late, &early})
    for (unsigned g = 0; g < 2 * groups; ++g) {
      auto b = a.allocate(2, 200, {"t", {}});
      ASSERT_TRUE(bool(b));
      list->push_back(*b);
    }
  for (unsigned g = 0; g < 2 * groups; ++g) {
    EXPECT_EQ(late[g].addr, 0u);
    EXPECT_EQ(early[g].addr, 200u);
    a.release(late[g].id, 5000);
    a.release(early[g].id, 100);
  }
  // Wanted from cycle 6000 (or with no wish): the lowest space, as before.
  a.wantedBy = 6000;
  auto low = a.allocate(2, 200, {"t", {}});
  ASSERT_TRUE(bool(low));
  EXPECT_EQ(low->addr, 0u);
  EXPECT_EQ(low->writableFrom, 5001);
  // Wanted from cycle 200: past the space read until 5000, the next group's
  // space read until 100 (the cursor moved on).
  a.wantedBy = 200;
  auto soon = a.allocate(2, 200, {"t", {}});
  ASSERT_TRUE(bool(soon));
  EXPECT_EQ(soon->addr, 200u);
  EXPECT_EQ(soon->writableFrom, 101);
  EXPECT_NE(soon->slices, low->slices);
  // Wanted from cycle 0: never-written space, above both.
  a.wantedBy = 0;
  auto fresh = a.allocate(2, 200, {"t", {}});
  ASSERT_TRUE(bool(fresh));
  EXPECT_EQ(fresh->addr, 400u);
  EXPECT_EQ(fresh->writableFrom, 0);
  // Nothing writable in time anywhere (every slice full to the top past
  // the dead space): the first place with room, however late.
  SramAllocator full(c);
  std::vector<SramBlock> dead;
  for (unsigned g = 0; g < 2 * groups; ++g) {
    auto d = full.allocate(2, 100, {"t", {}});
    ASSERT_TRUE(bool(d));
    dead.push_back(*d);
  }
  for (unsigned g = 0; g < 2 * groups; ++g)
    ASSERT_TRUE(bool(full.allocate(2, c.memVectors - 100, {"t", {}})));
  for (const SramBlock &d : dead)
    full.release(d.id, 3000);
  full.wantedBy = 10;
  auto last = full.allocate(2, 100, {"t", {}});
  ASSERT_TRUE(bool(last));
  EXPECT_EQ(last->addr, 0u);
  EXPECT_EQ(last->writableFrom, 3001);
}

TEST(SramAllocator, ChunkedBlocksTakeSpaceWritableInTime) {
  auto c = chip();
  SramAllocator a(c);
  const unsigned groups = c.memSlices / 2 / 2; // 2-slice groups per hemisphere
  // In every slice group of both hemispheres, from address 0: a block read
  // until cycle 5000, one read until cycle 100 and a live one.
  std::vector<SramBlock> late, early, live;
  for (auto [list, vectors] : {std::pair{&late, 200u}, {&early, 200u}, {&live, 10u}})
    for (int h = 0; h < 2; ++h) {
      auto b = a.allocate(2, vectors, {"t", {}}, groups);
      ASSERT_TRUE(bool(b));
      list->push_back(*b);
    }
  for (int h = 0; h < 2; ++h) {
    EXPECT_EQ(early[h].addr, 200u);
    EXPECT_EQ(live[h].addr, 400u);
    a.release(late[h].id, 5000);
    a.release(early[h].id, 100);
  }
  // Wanted from cycle 6000: the lowest space will do, as before.
  a.wantedBy = 6000;
  auto low = a.allocate(2, 200, {"t", {}}, 4);
  ASSERT_TRUE(bool(low));
  EXPECT_EQ(low->addr, 0u);
  EXPECT_EQ(low->writableFrom, 5001);
  // Wanted from cycle 200: not the lowest space, read until 5000 (in the
  // other hemisphere, above the live blocks, never written).
  a.wantedBy = 200;
  auto soon = a.allocate(2, 200, {"t", {}}, 4);
  ASSERT_TRUE(bool(soon));
  EXPECT_EQ(soon->addr, 410u);
  EXPECT_EQ(soon->writableFrom, 0);
  EXPECT_NE(c.isEastSlice(soon->slices[0]), c.isEastSlice(low->slices[0]));
  // In `low`'s hemisphere, from its end: the space read until cycle 100.
  auto next = a.allocate(2, 200, {"t", {}}, 4);
  ASSERT_TRUE(bool(next));
  EXPECT_EQ(next->addr, 200u);
  EXPECT_EQ(next->writableFrom, 101);
  EXPECT_EQ(c.isEastSlice(next->slices[0]), c.isEastSlice(low->slices[0]));
  // Wanted sooner than any dead space is writable: the earliest there is,
  // never-written space.
  a.wantedBy = 0;
  auto fresh = a.allocate(2, 200, {"t", {}}, 4);
  ASSERT_TRUE(bool(fresh));
  EXPECT_EQ(fresh->writableFrom, 0);
}

TEST(SramAllocator, AcceptPassesOverRefusedGroupsAndReusedSpace) {
  auto c = chip();
  SramAllocator a(c);
  // Every 2-slice group holds many dead blocks at its lowest addresses
  // (space written during the run), with nothing live above them.
  for (unsigned round = 0; round < 8; ++round)
    for (unsigned g = 0; g < c.memSlices / 2; ++g) {
      auto b = a.allocate(2, 1, {"t", {}});
      ASSERT_TRUE(bool(b));
      a.release(b->id, 100);
    }
  // Only never-written space, and none on slices 0..39 or in the east.
  std::vector<uint16_t> refused;
  for (uint16_t s = 0; s < 40; ++s)
    refused.push_back(s);
  auto accept = [&](const std::vector<uint16_t> &slices, int64_t writable) {
    for (uint16_t s : slices)
      if (std::find(refused.begin(), refused.end(), s) != refused.end() || c.isEastSlice(s))
        return false;
    return writable == 0;
  };
  for (int k = 0; k < 4; ++k) {
    auto b = a.allocate(2, 1, {"map", {}}, 1, accept);
    ASSERT_TRUE(bool(b));
    EXPECT_EQ(b->writableFrom, 0);
    for (uint16_t s : b->slices) {
      EXPECT_FALSE(c.isEastSlice(s));
      EXPECT_GE(s, 40);
    }
  }
  // Nothing acceptable at all is the usual does-not-fit error.
  auto none = a.allocate(2, 1, {"map", {}}, 1,
                         [](const std::vector<uint16_t> &, int64_t) { return false; });
  EXPECT_FALSE(bool(none));
  llvm::consumeError(none.takeError());
}

TEST(SramAllocator, FullIsAnErrorNamingTheLargestLiveTensors) {
  auto c = chip();
  SramAllocator a(c);
  for (unsigned i = 0; i < c.memSlices / 2; ++i)
    ASSERT_TRUE(bool(a.allocate(2, c.memVectors - i, {"t" + std::to_string(i), {"m.lpu", i + 1, 1}})));
  uint64_t live = 0; // nothing freed: every block allocated is live
  for (unsigned i = 0; i < c.memSlices / 2; ++i)
    live += uint64_t(2) * (c.memVectors - i) * c.lanes;
  auto full = a.allocate(2, 200, {"last", {"m.lpu", 99, 3}});
  ASSERT_FALSE(bool(full));
  bool seen = false;
  llvm::handleAllErrors(full.takeError(), [&](const ScheduleError &e) {
    seen = true;
    EXPECT_EQ(e.kind, ScheduleError::Kind::DoesNotFit);
    EXPECT_EQ(e.refusal, Refusal::SramFull);
    // The tensor, its bytes, byte planes and vectors, the live and the whole bytes.
    EXPECT_EQ(e.args, (std::vector<std::string>{"last", std::to_string(2 * 200 * c.lanes), "2", "200",
                                                std::to_string(live),
                                                std::to_string(c.sramBytes())}));
    EXPECT_EQ(e.loc.line, 99u);
    ASSERT_EQ(e.notes.size(), 3u);
    // The largest first: t0 (8192 vectors), t1, t2.
    EXPECT_EQ(e.notes[0].first.line, 1u);
    EXPECT_EQ(e.notes[1].first.line, 2u);
    EXPECT_EQ(e.notes[2].first.line, 3u);
    EXPECT_NE(e.notes[0].second.find("t0 is live here, taking 5242880 bytes"), std::string::npos);
  });
  EXPECT_TRUE(seen);
}

TEST(SramAllocator, StripesAcrossBothHemispheresOnlyWhenAllowed) {
  auto c = chip();
  SramAllocator a(c);
  const unsigned groups = c.memSlices / 2 / 2; // 2-slice groups per hemisphere
  // More chunks than a hemisphere has groups: refused, naming the
  // hemisphere, unless the block may go across both.
  auto refused = a.allocate(2, 100, {"w", {}}, groups + 4);
  ASSERT_FALSE(bool(refused));
  llvm::handleAllErrors(refused.takeError(), [&](const ScheduleError &e) {
    EXPECT_EQ(e.refusal, Refusal::SramChunksInHemisphere);
  });
  // One hemisphere 3000 vectors higher than the other: a stripe of every
  // group of both takes one address above both.
  ASSERT_TRUE(bool(a.allocate(2, 3000, {"low", {}}, groups)));
  a.acrossHemispheres = true;
  auto across = a.allocate(2, 100, {"w", {}}, 2 * groups);
  a.acrossHemispheres = false;
  ASSERT_TRUE(bool(across));
  EXPECT_EQ(across->addr, 3000u);
  ASSERT_EQ(across->slices.size(), size_t(4 * groups));
  std::set<bool> sides;
  for (size_t k = 0; k < across->slices.size(); k += 2) {
    // Each chunk's two byte planes in one hemisphere.
    EXPECT_EQ(c.isEastSlice(across->slices[k]), c.isEastSlice(across->slices[k + 1]));
    sides.insert(c.isEastSlice(across->slices[k]));
  }
  EXPECT_EQ(sides.size(), 2u);
  std::set<uint16_t> distinct(across->slices.begin(), across->slices.end());
  EXPECT_EQ(distinct.size(), across->slices.size());
}

TEST(SramAllocator, ABytePlaneLongerThanASliceNeverFits) {
  auto c = chip();
  SramAllocator a(c);
  auto b = a.allocate(1, c.memVectors + 1, {"huge", {}});
  ASSERT_FALSE(bool(b));
  bool seen = false;
  llvm::handleAllErrors(b.takeError(), [&](const ScheduleError &e) {
    seen = true;
    EXPECT_EQ(e.kind, ScheduleError::Kind::DoesNotFit);
    EXPECT_EQ(e.refusal, Refusal::SramPlaneDeeperThanSlice);
    EXPECT_EQ(e.args, (std::vector<std::string>{"huge", std::to_string(c.memVectors + 1),
                                                std::to_string(c.memVectors)}));
  });
  EXPECT_TRUE(seen);
}

} // namespace
