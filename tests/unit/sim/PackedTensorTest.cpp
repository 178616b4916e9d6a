// Tensors in the packed layout: the bytes lpurun places are where
// PlacementGeometry::locate says, lanes past a chunk's last element are
// zero, and what is written reads back unchanged.
#include "backend/ChipDescription.h"
#include "backend/ProgramText.h"
#include "sim/Machine.h"

#include <gtest/gtest.h>

using namespace lpu;

namespace {
/// f16 element i's bits: every byte plane of every element differs from
/// its neighbours' and none is zero.
uint16_t bitsOf(size_t i) { return uint16_t(0x0101 + (i * 40503u) % 0xfe00); }

std::vector<uint8_t> f16Bytes(size_t count) {
  std::vector<uint8_t> bytes(count * 2);
  for (size_t i = 0; i < count; ++i) {
    bytes[2 * i] = uint8_t(bitsOf(i));
    bytes[2 * i + 1] = uint8_t(bitsOf(i) >> 8);
  }
  return bytes;
}

struct Loaded {
  backend::ChipDescription chip;
  backend::Program program;
  std::unique_ptr<sim::Machine> machine;
  const backend::Bucket &bucket() const { return program.entries[0].buckets[0]; }
};

/// `tensors`: tensor lines of one bucket, `code` its chip 0's queues. The
/// program is verified first.
std::unique_ptr<Loaded> load(const std::string &tensors, const std::string &code = "",
                             bool timingOnly = false) {
  auto chip = backend::loadChipDescription("groqchip1");
  EXPECT_TRUE(bool(chip));
  if (!chip)
    return nullptr;
  auto program = backend::parseProgramText(
      "lpu-program 1\ntarget groqchip1\nentry main\nbucket\n" + tensors + "chip 0\n" + code, "t");
  EXPECT_TRUE(bool(program)) << llvm::toString(program.takeError());
  if (!program)
    return nullptr;
  auto out = std::make_unique<Loaded>(Loaded{std::move(*chip), std::move(*program), nullptr});
  out->program.chipFingerprint = out->chip.fingerprint();
  llvm::Error e = backend::verifyProgram(out->program, out->chip);
  EXPECT_FALSE(bool(e)) << llvm::toString(std::move(e));
  auto machine = sim::Machine::create(out->chip, out->program, out->bucket(),
                                      sim::RunOptions{1, timingOnly, false, {}});
  EXPECT_TRUE(bool(machine)) << llvm::toString(machine.takeError());
  if (!machine)
    return nullptr;
  out->machine = std::move(*machine);
  return out;
}

/// Fills every vector `t` may touch, as a rows placement of `vectors` rows
/// of 320 lanes at the same slices and address, with 0xee: what the packed
/// write must overwrite or zero.
void fillGarbage(sim::Machine &m, const backend::TensorPlacement &t, unsigned vectors) {
  for (size_t s = 0; s < t.slices.size(); ++s)
    for (unsigned v = 0; v < vectors; ++v)
      for (uint8_t &byte : m.sramVector(t.chip, t.slices[s], t.addr + v))
        byte = 0xee;
}

/// Checks every stored element (r, c) at locate(r, c) in its chunk's
/// slices (`logical(r, c)`: the index of the C-order element stored
/// there), and that every other lane of the chunks' vectors is zero.
template <typename Logical>
void expectPlaced(const Loaded &l, const backend::TensorPlacement &t, Logical logical) {
  auto g = backend::placementGeometry(t, l.bucket().concreteShape(t), l.chip.lanes, l.chip.memVectors);
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  ASSERT_TRUE(g->packed);
  // seen[chunk][vector * lanes + lane]
  std::vector<std::vector<bool>> seen(size_t(g->chunks));
  for (int64_t j = 0; j < g->chunks; ++j)
    seen[size_t(j)].assign(size_t(g->chunkVectors(j)) * l.chip.lanes, false);
  for (int64_t r = 0; r < g->rows; ++r)
    for (int64_t c = 0; c < g->cols; ++c) {
      auto [addr, lane] = g->locate(r, c);
      uint16_t bits = bitsOf(size_t(logical(r, c)));
      for (unsigned b = 0; b < 2; ++b)
        ASSERT_EQ(l.machine->sramVector(t.chip, g->slice(t.slices, r, b), addr)[lane],
                  uint8_t(bits >> (8 * b)))
            << "element (" << r << ", " << c << ") byte " << b;
      seen[size_t(g->chunkOf(r))][size_t(addr - g->addr) * l.chip.lanes + lane] = true;
    }
  for (int64_t j = 0; j < g->chunks; ++j)
    for (size_t k = 0; k < seen[size_t(j)].size(); ++k) {
      if (seen[size_t(j)][k])
        continue;
      for (unsigned b = 0; b < 2; ++b)
        ASSERT_EQ(l.machine->sramVector(t.chip, t.slices[size_t(j) * 2 + b],
                                        unsigned(g->addr + k / l.chip.lanes))[k % l.chip.lanes],
                  0)
            << "chunk " << j << " vector " << k / l.chip.lanes << " lane " << k % l.chip.lanes;
    }
}
} // namespace

// 4900 elements in 16 vectors: row 1 starts at lane 60 of the third, the
// last vector's lanes 100.. are zero.
TEST(PackedTensor, WriteThenReadBack) {
  auto l = load("tensor input x f16 [7,700] chip 0 slices 3,9 addr 5 layout packed\n");
  ASSERT_TRUE(l);
  const backend::TensorPlacement &t = l->bucket().tensors[0];
  fillGarbage(*l->machine, t, 21);
  std::vector<uint8_t> bytes = f16Bytes(7 * 700);
  ASSERT_FALSE(bool(l->machine->writeTensor(t, bytes)));
  expectPlaced(*l, t, [](int64_t r, int64_t c) { return r * 700 + c; });
  EXPECT_EQ(l->machine->sramVector(0, 3, 7)[60], uint8_t(bitsOf(700)));
  EXPECT_EQ(l->machine->sramVector(0, 9, 20)[99], uint8_t(bitsOf(4899) >> 8));
  EXPECT_EQ(l->machine->sramVector(0, 9, 20)[100], 0);
  // Past the tensor's 16 vectors the write touched nothing.
  EXPECT_EQ(l->machine->sramVector(0, 3, 21)[0], 0xee);
  auto back = l->machine->readTensor(t);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, bytes);
}

// Logical [700, 40] stored transposed (perm 1,0) as [40, 700] in chunks of
// 16 rows: 35 vectors in each of the first two chunks' slices, 17.5 in the
// third's.
TEST(PackedTensor, ChunkedAndPermuted) {
  auto l = load("tensor param w f16 [700,40] chip 0 slices 0,1,2,3,4,5 addr 100 layout packed "
                "perm 1,0 chunk 16\n");
  ASSERT_TRUE(l);
  const backend::TensorPlacement &t = l->bucket().tensors[0];
  fillGarbage(*l->machine, t, 48);
  std::vector<uint8_t> bytes = f16Bytes(700 * 40);
  ASSERT_FALSE(bool(l->machine->writeTensor(t, bytes)));
  // Stored (r, c) is logical (c, r).
  expectPlaced(*l, t, [](int64_t r, int64_t c) { return c * 40 + r; });
  EXPECT_EQ(l->machine->sramVector(0, 4, 117)[159], uint8_t(bitsOf(699 * 40 + 39)));
  EXPECT_EQ(l->machine->sramVector(0, 4, 117)[160], 0);
  EXPECT_EQ(l->machine->sramVector(0, 2, 134)[319], uint8_t(bitsOf(699 * 40 + 31)));
  EXPECT_EQ(l->machine->sramVector(0, 2, 135)[0], 0xee);
  auto back = l->machine->readTensor(t);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, bytes);
}

// Only the packed vectors count as SRAM in use.
TEST(PackedTensor, MarksItsVectorsInUse) {
  auto l = load("tensor param w f16 [700,40] chip 0 slices 0,1,2,3,4,5 addr 100 layout packed "
                "perm 1,0 chunk 16\n");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->machine->report().chips[0].sramVectorsInUse, uint64_t(2 * (35 + 35 + 18)));
}

TEST(PackedTensor, TimingOnlyPlacesNothing) {
  auto l = load("tensor input x f16 [7,700] chip 0 slices 3,9 addr 5 layout packed\n", "", true);
  ASSERT_TRUE(l);
  const backend::TensorPlacement &t = l->bucket().tensors[0];
  EXPECT_FALSE(bool(l->machine->writeTensor(t, f16Bytes(7 * 700))));
  EXPECT_TRUE(l->machine->sramVector(0, 3, 5).empty());
  auto back = l->machine->readTensor(t);
  ASSERT_TRUE(bool(back));
  EXPECT_EQ(back->size(), size_t(7 * 700 * 2));
}

// A program reading vector k of a packed i8 [3,500] finds flat elements
// k*320.. there (row 0's tail, then row 1's head in vector 1), zeros past
// the 1500th: the vector is copied (negated) to y by the VXM.
TEST(PackedTensor, ProgramsReadFlatElements) {
  for (unsigned k : {1u, 4u}) {
    unsigned arrive = 2 + 44 - 7; // slice 7 to the VXM
    std::string vk = std::to_string(k), a = std::to_string(arrive), w = std::to_string(arrive + 2);
    auto l = load("tensor input x i8 [3,500] chip 0 slices 7 addr 0 layout packed\n"
                  "tensor output y i8 [320] chip 0 slices 44 addr 0\n",
                  "queue mem0\n  read s7 @" + vk + " -> e0\nqueue vxm0\n  nop " + a +
                  "\n  neg i8 e0 -> e1\nqueue mem44\n  nop " + w + "\n  write e1 s44 @0\n");
    ASSERT_TRUE(l);
    std::vector<uint8_t> x(1500);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = uint8_t(i * 7 + 3);
    ASSERT_FALSE(bool(l->machine->writeTensor(l->bucket().tensors[0], x)));
    llvm::Error e = l->machine->run();
    ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
    auto y = l->machine->readTensor(l->bucket().tensors[1]);
    ASSERT_TRUE(bool(y)) << llvm::toString(y.takeError());
    for (unsigned i = 0; i < 320; ++i) {
      size_t f = k * 320 + i;
      ASSERT_EQ((*y)[i], f < x.size() ? uint8_t(-int8_t(x[f])) : 0) << "vector " << k << " lane " << i;
    }
  }
}
