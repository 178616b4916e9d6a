#include "backend/ChipDescription.h"
#include "backend/ProgramText.h"
#include "sim/Machine.h"

#include <gtest/gtest.h>

using namespace lpu;

namespace {
/// x (i8) is read from slice `slice` in cycle 0 and copied by the VXM in
/// cycle `vxmCycle`; the copy lands in slice 44.
/// `x` declares x's shape and placement past its slices (default: [320] in
/// `slice` alone); the read takes address `addr` of `slice`.
std::string copyProgram(unsigned slice, unsigned vxmCycle, std::string x = "",
                        unsigned addr = 0) {
  if (x.empty())
    x = "[320] chip 0 slices " + std::to_string(slice) + " addr 0";
  std::string s = "lpu-program 1\ntarget groqchip1\nentry main\nbucket\n"
                  "tensor input x i8 " +
                  x + "\ntensor output y i8 [320] chip 0 slices 44 addr 0\nchip 0\n"
                  "queue mem0\n  read s" +
                  std::to_string(slice) + " @" + std::to_string(addr) + " -> e0\nqueue vxm0\n  nop " +
                  std::to_string(vxmCycle) + "\n  neg i8 e0 -> e1\nqueue mem44\n  nop " +
                  std::to_string(vxmCycle + 1 + 1) + "\n  write e1 s44 @0\n";
  return s;
}

uint8_t xValue(size_t i) { return uint8_t(i * 7 + 3); }

struct RunResult {
  std::string error;
  std::vector<uint8_t> y;
  int64_t cycles = 0;
};

RunResult runProgram(const std::string &text, unsigned threads = 1) {
  auto chip = backend::loadChipDescription("groqchip1");
  auto program = backend::parseProgramText(text, "t");
  if (!chip || !program) {
    llvm::consumeError(chip.takeError());
    return {llvm::toString(program.takeError()), {}, 0};
  }
  program->chipFingerprint = chip->fingerprint();
  if (auto e = backend::verifyProgram(*program, *chip))
    return {llvm::toString(std::move(e)), {}, 0};
  const backend::Bucket &bucket = program->entries[0].buckets[0];
  auto machine = sim::Machine::create(*chip, *program, bucket, sim::RunOptions{threads, false, false, {}});
  if (!machine)
    return {llvm::toString(machine.takeError()), {}, 0};
  int64_t elements = 1;
  for (int64_t d : bucket.concreteShape(bucket.tensors[0]))
    elements *= d;
  std::vector<uint8_t> x(size_t(elements), 0);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = xValue(i);
  EXPECT_FALSE(bool((*machine)->writeTensor(bucket.tensors[0], x)));
  if (auto e = (*machine)->run())
    return {llvm::toString(std::move(e)), {}, 0};
  auto y = (*machine)->readTensor(bucket.tensors[1]);
  if (!y)
    return {llvm::toString(y.takeError()), {}, 0};
  return {"", std::move(*y), (*machine)->report().cycles};
}
} // namespace

// A value moves one slice position per cycle: slice s (position s + 2) read
// in cycle 0 is at the VXM (position 46) in cycle 2 + 44 - s, not a cycle
// earlier or later.
TEST(Machine, StreamsMoveOnePositionPerCycle) {
  for (unsigned slice : {0u, 10u, 43u}) {
    unsigned arrive = 2 + 44 - slice;
    RunResult ok = runProgram(copyProgram(slice, arrive));
    ASSERT_EQ(ok.error, "") << "slice " << slice;
    for (unsigned i = 0; i < 320; ++i)
      ASSERT_EQ(ok.y[i], uint8_t(-int8_t(xValue(i))));
    EXPECT_EQ(ok.cycles, arrive + 1 + 1 + 1 + 1);
    for (unsigned wrong : {arrive - 1, arrive + 1}) {
      RunResult bad = runProgram(copyProgram(slice, wrong));
      EXPECT_NE(bad.error.find("stream e0 holds no valid data at position 46"), std::string::npos)
          << bad.error;
      EXPECT_NE(bad.error.find("cycle " + std::to_string(wrong)), std::string::npos);
    }
  }
}

TEST(Machine, ThreadsDoNotChangeResults) {
  RunResult one = runProgram(copyProgram(5, 41), 1);
  RunResult four = runProgram(copyProgram(5, 41), 4);
  EXPECT_EQ(one.error, "");
  EXPECT_EQ(one.y, four.y);
  EXPECT_EQ(one.cycles, four.cycles);
}

// Which vector the program finds where: row r of x [4,320] in chunks of 2
// rows is in the second chunk's slice (here 4) at address r - 2.
TEST(Machine, ChunkedRowsAreInTheirChunksSlices) {
  for (unsigned row : {2u, 3u}) {
    unsigned arrive = 2 + 44 - 4;
    RunResult r = runProgram(copyProgram(4, arrive, "[4,320] chip 0 slices 3,4 addr 10 chunk 2", 10 + row - 2));
    ASSERT_EQ(r.error, "");
    for (unsigned i = 0; i < 320; ++i)
      ASSERT_EQ(r.y[i], uint8_t(-int8_t(xValue(row * 320 + i)))) << "row " << row << " lane " << i;
  }
}

// x [320,2] stored in order 1,0 is x transposed: its column c is a row, at
// address c.
TEST(Machine, PermutedTensorsAreStoredTransposed) {
  for (unsigned col : {0u, 1u}) {
    unsigned arrive = 2 + 44 - 7;
    RunResult r = runProgram(copyProgram(7, arrive, "[320,2] chip 0 slices 7 addr 0 perm 1,0", col));
    ASSERT_EQ(r.error, "");
    for (unsigned i = 0; i < 320; ++i)
      ASSERT_EQ(r.y[i], uint8_t(-int8_t(xValue(i * 2 + col)))) << "column " << col << " lane " << i;
  }
}

// Written and read back through a permuted, chunked placement of several
// vectors a row, a tensor is unchanged; the other chunks' SRAM is in use.
TEST(Machine, PermutedChunkedTensorsReadBackUnchanged) {
  auto chip = backend::loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  auto program = backend::parseProgramText(
      "lpu-program 1\ntarget groqchip1\nentry main\nbucket\n"
      "tensor input x f16 [3,700,5] chip 0 slices 0,1,2,3,4,5,6,7 addr 8 perm 2,0,1 chunk 4\n"
      "tensor output y f32 [5,3] chip 0 slices 40,41,42,43 addr 0 perm 1,0\nchip 0\n",
      "t");
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  program->chipFingerprint = chip->fingerprint();
  ASSERT_FALSE(bool(backend::verifyProgram(*program, *chip)));
  const backend::Bucket &bucket = program->entries[0].buckets[0];
  auto machine = sim::Machine::create(*chip, *program, bucket, sim::RunOptions{});
  ASSERT_TRUE(bool(machine)) << llvm::toString(machine.takeError());
  for (size_t k = 0; k < 2; ++k) {
    const backend::TensorPlacement &t = bucket.tensors[k];
    std::vector<uint8_t> bytes(k == 0 ? 3 * 700 * 5 * 2 : 5 * 3 * 4);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = uint8_t((i * 2654435761u) >> 13);
    ASSERT_FALSE(bool((*machine)->writeTensor(t, bytes)));
    auto back = (*machine)->readTensor(t);
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(*back, bytes) << t.name;
  }
  std::vector<uint8_t> wrongSize(10);
  llvm::Error e = (*machine)->writeTensor(bucket.tensors[0], wrongSize);
  EXPECT_EQ(llvm::toString(std::move(e)), "tensor 'x' has 10 bytes, its placement holds 21000");
}

// verifyProgram refuses a send over a link the topology does not cable;
// the simulator, a library others may call on unverified programs, must
// refuse it too rather than route the value nowhere.
TEST(Machine, SendOverAnUncabledLinkIsAViolation) {
  std::string text = "lpu-program 1\ntarget groqchip1\ntopology node 8\nentry main\nbucket\n"
                     "chip 0\nqueue mem0\n  nop 1\n  read s0 @0 -> w0\n"
                     "queue c2c7\n  nop 4\n  send i8 l7 w0\n";
  for (unsigned c = 1; c < 8; ++c)
    text += "chip " + std::to_string(c) + "\n";
  auto chip = backend::loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip)) << llvm::toString(chip.takeError());
  auto program = backend::parseProgramText(text, "t");
  ASSERT_TRUE(bool(program)) << llvm::toString(program.takeError());
  program->chipFingerprint = chip->fingerprint();
  llvm::Error verified = backend::verifyProgram(*program, *chip);
  EXPECT_NE(llvm::toString(std::move(verified)).find("link 7 is not cabled"), std::string::npos);
  auto machine = sim::Machine::create(*chip, *program, program->entries[0].buckets[0],
                                      sim::RunOptions{});
  ASSERT_TRUE(bool(machine)) << llvm::toString(machine.takeError());
  EXPECT_EQ(llvm::toString((*machine)->run()),
            "schedule violation: chip 0, unit c2c, queue c2c7, instruction 1 (send i8 l7 w0), "
            "cycle 4: link l7 is not cabled in topology 'node'");
}
