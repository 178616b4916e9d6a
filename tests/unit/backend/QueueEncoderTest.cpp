#include "backend/QueueEncoder.h"
#include "backend/ProgramText.h"

#include <gtest/gtest.h>

using namespace lpu::backend;

namespace {
Instr readAt(unsigned slice, uint32_t addr, uint8_t stream) {
  Instr in;
  in.op = Opcode::Read;
  in.unit = uint16_t(slice);
  in.addr = addr;
  in.dst = StreamRef{StreamRef::East, stream};
  return in;
}

std::string text(const std::vector<Instr> &code) {
  std::string s;
  for (const Instr &in : code)
    s += printInstr(in) + "\n";
  return s;
}
} // namespace

TEST(QueueEncoder, GapsBecomeNopsAndRunsBecomeRepeats) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  QueueEncoder enc(*chip);
  for (int i = 0; i < 4; ++i)
    ASSERT_FALSE(bool(enc.add(5 + i, readAt(0, 10 + 13 * i, 0))));
  ASSERT_FALSE(bool(enc.add(20, readAt(0, 0, 1))));
  ASSERT_FALSE(bool(enc.add(30, readAt(0, 7, 1))));  // a run of two, 10 apart
  ASSERT_FALSE(bool(enc.add(40, readAt(0, 7, 2))));  // another stream: a new run
  EXPECT_EQ(text(enc.finish()), "nop 5\n"
                                "read s0 @10+13 -> e0\n"
                                "repeat 3 1\n"
                                "nop 11\n"
                                "read s0 @0+7 -> e1\n"
                                "repeat 1 10\n"
                                "nop 9\n"
                                "read s0 @7 -> e2\n");
}

TEST(QueueEncoder, RespectsIssueIntervals) {
  auto chip = loadChipDescription("groqchip1");
  ASSERT_TRUE(bool(chip));
  QueueEncoder enc(*chip);
  Instr mm;
  mm.op = Opcode::MatMul;
  mm.dtype = DType::F16;
  mm.src0 = StreamRef{StreamRef::West, 0};
  ASSERT_FALSE(bool(enc.add(0, mm)));
  llvm::Error early = enc.add(3, mm); // f16 matmuls issue every 4 cycles
  ASSERT_TRUE(bool(early));
  EXPECT_EQ(llvm::toString(std::move(early)),
            "'mm f16 p0 w0 a0' at cycle 3, but the queue cannot issue before cycle 4");
  mm.addr = 1;
  ASSERT_FALSE(bool(enc.add(4, mm)));
  mm.addr = 2;
  ASSERT_FALSE(bool(enc.add(8, mm)));
  EXPECT_EQ(text(enc.finish()), "mm f16 p0 w0 a0+1\nrepeat 2 4\n");
  Instr nop;
  nop.op = Opcode::Nop;
  nop.count = 3;
  llvm::Error notUnit = enc.add(20, nop);
  ASSERT_TRUE(bool(notUnit));
  llvm::consumeError(std::move(notUnit));
}
