// The packed layout's allocation (LoweringContext::allocateStorage with
// packed set): a chunk's rows follow each other with no padding, every
// chunk starts on a vector, and TensorView::segment / readyAt find a
// row's vectors in it.
#include "LoweringFixture.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace lpu;
using namespace lpu::scheduler;

namespace {

struct Fixture : LoweringFixture {
  std::shared_ptr<Storage> packed(int64_t rows, int64_t cols, int64_t align = 1) {
    auto s = ctx.allocateStorage(ir::DType::F16, rows, cols, {"w", {}}, align, {}, true);
    EXPECT_TRUE(bool(s)) << (s ? "" : llvm::toString(s.takeError()));
    return s ? *s : nullptr;
  }
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The invariants of any packed storage of [rows, cols].
void expectPackedGeometry(const Storage &s, int64_t rows, int64_t cols, unsigned lanes,
                          uint32_t sliceVectors) {
  ASSERT_TRUE(s.packed);
  if (s.chunkRows == 0) {
    EXPECT_EQ(s.block.vectors, uint32_t(ceilDiv(rows * cols, lanes)));
    EXPECT_EQ(s.chunkSlices.size(), 1u);
  } else {
    // Every chunk starts on a vector: a row starts at lane (r * cols) %
    // lanes in every chunk.
    EXPECT_EQ(s.chunkRows * cols % lanes, 0);
    EXPECT_EQ(s.block.vectors, uint32_t(s.chunkRows * cols / lanes));
    EXPECT_EQ(int64_t(s.chunkSlices.size()), ceilDiv(rows, s.chunkRows));
    EXPECT_GE(int64_t(s.chunkSlices.size()) * s.chunkRows, rows);
  }
  EXPECT_LE(s.block.vectors, sliceVectors);
  // One ready entry per stored vector.
  EXPECT_EQ(int64_t(s.ready.size()), ceilDiv(rows * cols, lanes));
}

TEST(PackedStorage, OneChunkTakesOnlyItsElements) {
  Fixture f;
  auto s = f.packed(768, 768);
  ASSERT_TRUE(s);
  expectPackedGeometry(*s, 768, 768, f.chip.lanes, f.chip.memVectors);
  EXPECT_EQ(s->chunkRows, 0);
  EXPECT_EQ(s->block.vectors, 1844u); // 768 * 768 / 320 = 1843.2; rows: 2304
  EXPECT_EQ(s->vecsPerRow, 3);        // the rows layout's count, for loops
}

TEST(PackedStorage, ChunksAreAMultipleOfTheRowUnit) {
  Fixture f;
  // 4096 x 768 / 320 = 9830.4 vectors: two chunks of a multiple of 5 rows
  // (320 / gcd(768, 320)).
  auto s = f.packed(4096, 768);
  ASSERT_TRUE(s);
  expectPackedGeometry(*s, 4096, 768, f.chip.lanes, f.chip.memVectors);
  EXPECT_EQ(s->chunkSlices.size(), 2u);
  EXPECT_EQ(s->chunkRows % 5, 0);
  // A gather's rows per id stay in one chunk as well: lcm(align, unit).
  auto t = f.packed(3 * 4000, 700, 3);
  ASSERT_TRUE(t);
  expectPackedGeometry(*t, 12000, 700, f.chip.lanes, f.chip.memVectors);
  EXPECT_EQ(t->chunkRows % std::lcm(3, 16), 0); // 320 / gcd(700, 320) = 16
}

TEST(PackedStorage, MoreShorterChunksKeepTheUnit) {
  Fixture f;
  // Leave every slice group only 2000 free vectors: the tensor must be cut
  // into chunks of at most that, each still a multiple of 5 rows.
  for (int i = 0; i < 44; ++i)
    ASSERT_TRUE(bool(f.sram.allocate(2, 6192, {"filler", {}})));
  auto s = f.packed(4096, 768);
  ASSERT_TRUE(s);
  expectPackedGeometry(*s, 4096, 768, f.chip.lanes, 2000);
  EXPECT_GT(s->chunkSlices.size(), 4u);
  EXPECT_EQ(s->chunkRows % 5, 0);
}

TEST(PackedStorage, WholeVectorRowsStayRows) {
  Fixture f;
  auto s = f.packed(100, 640);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->packed);
  EXPECT_EQ(s->block.vectors, 200u);
  EXPECT_EQ(s->ready.size(), 200u);
}

TEST(PackedStorage, SegmentsAndReadiness) {
  Fixture f;
  auto s = f.packed(4096, 768);
  ASSERT_TRUE(s);
  TensorView v = LoweringContext::viewOf(s, ir::DType::F16, 4096, 768);
  const unsigned lanes = f.chip.lanes;
  // Row 1 starts at flat element 768: vector 2, lane 128.
  auto a = v.segment(1, 0, lanes);
  EXPECT_EQ(a.addr, s->block.addr + 2);
  EXPECT_EQ(a.lane, 128u);
  EXPECT_EQ(a.valid, 320u);
  EXPECT_TRUE(a.straddles);
  // Its last vector: elements 640..767, flat 1408: vector 4, lane 128.
  auto c = v.segment(1, 2, lanes);
  EXPECT_EQ(c.addr, s->block.addr + 4);
  EXPECT_EQ(c.lane, 128u);
  EXPECT_EQ(c.valid, 128u);
  EXPECT_FALSE(c.straddles);
  // The same row of the next chunk is at the same place in its slices.
  auto d = v.segment(s->chunkRows + 1, 2, lanes);
  EXPECT_EQ(d.addr, c.addr);
  EXPECT_EQ(v.slices(s->chunkRows + 1), s->chunkSlices[1]);
  // readyAt: the latest of the stored vectors a segment covers (numbered
  // by flat element over all chunks).
  std::fill(s->ready.begin(), s->ready.end(), 0);
  s->ready[3] = 7;
  EXPECT_EQ(v.readyAt(1, 0), 7); // vectors 2 and 3
  EXPECT_EQ(v.readyAt(1, 1), 7); // vectors 3 and 4
  EXPECT_EQ(v.readyAt(1, 2), 0); // vector 4
  int64_t second = s->chunkRows * 768 / lanes;
  s->ready[size_t(second + 4)] = 9;
  EXPECT_EQ(v.readyAt(s->chunkRows + 1, 2), 9);
}

} // namespace

// A lowering's scratch keeps off the slices it is told to avoid while SRAM
// has room elsewhere; when the only room left is on them, it settles for
// one (the placer serialises the reads) instead of reporting that SRAM is
// full: BERT-base's packed embedding gather ran into that.
TEST(Scratch, SettlesForAnAvoidedSliceWhenNothingElseHasRoom) {
  Fixture f;
  ir::Function fn("f");
  const ir::Op *op = fn.append(ir::OpKind::Input, ir::Type{ir::DType::F16, {10, 320}}, {});
  // Every slice pair full; then the last block freed and all but ten
  // vectors of it taken again: those ten, on its slices, are the only
  // room left.
  std::vector<SramBlock> full;
  const unsigned pairs = f.chip.memSlices / 2;
  for (unsigned k = 0; k < pairs; ++k) {
    auto b = f.sram.allocate(2, f.chip.memVectors, {"filler", {}});
    ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
    full.push_back(*b);
  }
  f.sram.release(full.back().id, -1);
  const std::vector<uint16_t> room = full.back().slices;
  auto rest = f.sram.allocate(2, f.chip.memVectors - 10, {"filler", {}});
  ASSERT_TRUE(bool(rest)) << llvm::toString(rest.takeError());
  ASSERT_EQ(rest->slices, room);
  auto s = f.ctx.scratch(*op, ir::DType::F16, 10, 320, room);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(s->allSlices(), room);
  // With room elsewhere it keeps off them.
  f.ctx.releaseScratch(*s);
  f.sram.release(full.front().id, -1);
  f.sram.release(rest->id, -1);
  auto apart = f.ctx.scratch(*op, ir::DType::F16, 10, 320, room);
  ASSERT_TRUE(bool(apart)) << llvm::toString(apart.takeError());
  EXPECT_NE(apart->allSlices(), room);
}
