#include "backend/ChipDescription.h"
#include "backend/ProgramText.h"
#include "sim/Machine.h"

#include <gtest/gtest.h>

using namespace lpu;

namespace {
/// x (i8) is read from slice `slice` in cycle 0 and copied by the VXM in
/// cycle `vxmCycle`; the copy lands in slice 44.
std::string copyProgram(unsigned slice, unsigned vxmCycle) {
  std::string s = "lpu-program 1\ntarget groqchip1\nentry main\nbucket\n"
                  "tensor input x i8 [320] chip 0 slices " +
                  std::to_string(slice) +
                  " addr 0\ntensor output y i8 [320] chip 0 slices 44 addr 0\nchip 0\n"
                  "queue mem0\n  read s" +
                  std::to_string(slice) + " @0 -> e0\nqueue vxm0\n  nop " +
                  std::to_string(vxmCycle) + "\n  neg i8 e0 -> e1\nqueue mem44\n  nop " +
                  std::to_string(vxmCycle + 1 + 1) + "\n  write e1 s44 @0\n";
  return s;
}

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
  auto machine = sim::Machine::create(*chip, *program, bucket, sim::RunOptions{threads, false, false});
  if (!machine)
    return {llvm::toString(machine.takeError()), {}, 0};
  std::vector<uint8_t> x(320);
  for (unsigned i = 0; i < 320; ++i)
    x[i] = uint8_t(i);
  EXPECT_FALSE(bool((*machine)->writeTensor(bucket.tensors[0], x)));
  if (auto e = (*machine)->run())
    return {llvm::toString(std::move(e)), {}, 0};
  return {"", (*machine)->readTensor(bucket.tensors[1]), (*machine)->report().cycles};
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
      ASSERT_EQ(ok.y[i], uint8_t(-int8_t(uint8_t(i))));
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
